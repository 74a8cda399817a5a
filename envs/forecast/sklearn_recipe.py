"""The scikit-learn recipe every cross-validated research environment shares.

One model table for classifiers and one for regressors (``classifier``, ``regressor``), the
preprocessing pipeline in front of them (``pipeline``: extra steps, polynomial features, a
scaler, an optional PCA), and the repeated K-fold loop (``cross_validated``) that fits on a
random ``train_fraction`` of each training fold and pools a per-fold score (``errors``,
``log_loss`` or ``squared_errors``) into one metric. A seed sets the folds (``seed * 389 + 7``
plus the config's ``split_seed_offset``) and the models' random state (``seed * 613 + 1`` plus
``model_seed_offset``). Knobs a config leaves out take scikit-learn's defaults, so environments
differ only in their data, their baseline config and their metric. A configuration scikit-learn
refuses raises inside the fit and the run is a crash.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np

from .runs import RunResult

__all__ = ["classifier", "regressor", "pipeline", "cross_validated", "errors", "log_loss", "squared_errors",
           "CV_REPEATS", "PROBABILITY_FLOOR", "SKLEARN_KNOBS"]

CV_REPEATS = 2
PROBABILITY_FLOOR = 1e-6
# knobs every cross-validated environment's baseline carries (placebos and the fit-on-a-share knob)
SKLEARN_KNOBS: dict[str, Any] = {"train_fraction": 1.0, "run_name": "baseline", "model_seed_offset": 0,
                                 "split_seed_offset": 0}

# (fitted model, test inputs, test targets) -> (summed loss, rows)
FoldScore = Callable[[Any, Any, np.ndarray], tuple[float, int]]


def _random_state(cfg: dict[str, Any], seed: int) -> int:
    return seed * 613 + 1 + int(cfg.get("model_seed_offset", 0))


def _depth(cfg: dict[str, Any]) -> int | None:
    return None if int(cfg.get("max_depth", 0)) == 0 else int(cfg["max_depth"])


def _gamma(value: Any) -> Any:
    return value if isinstance(value, str) else float(value)


def classifier(cfg: dict[str, Any], seed: int, *, probability: bool = False) -> Any:
    """The classifier ``cfg["model"]`` names; ``probability`` makes SVMs fit Platt probabilities."""
    from sklearn import discriminant_analysis, ensemble, linear_model, naive_bayes, neighbors, svm, tree
    random_state = _random_state(cfg, seed)
    class_weight = None if cfg.get("class_weight", "none") == "none" else cfg["class_weight"]
    depth, c = _depth(cfg), float(cfg.get("C", 1.0))
    models: dict[str, Callable[[], Any]] = {
        "logreg": lambda: linear_model.LogisticRegression(
            C=c, penalty=cfg.get("penalty", "l2"), solver=cfg.get("solver", "lbfgs"),
            max_iter=int(cfg.get("max_iter", 100)), class_weight=class_weight, random_state=random_state,
            verbose=int(cfg.get("verbose", 0))),
        "svm_rbf": lambda: svm.SVC(C=c, kernel=cfg.get("kernel", "rbf"), gamma=_gamma(cfg.get("gamma", "scale")),
                                   degree=int(cfg.get("degree", 3)), probability=probability,
                                   class_weight=class_weight, random_state=random_state),
        "linear_svm": lambda: svm.LinearSVC(C=c, class_weight=class_weight, random_state=random_state,
                                            max_iter=int(cfg.get("max_iter", 100)) * 10, dual="auto"),
        "random_forest": lambda: ensemble.RandomForestClassifier(
            n_estimators=int(cfg.get("n_estimators", 30)), max_depth=depth, class_weight=class_weight,
            min_samples_leaf=int(cfg.get("min_samples_leaf", 1)), random_state=random_state, n_jobs=1),
        "extra_trees": lambda: ensemble.ExtraTreesClassifier(
            n_estimators=int(cfg.get("n_estimators", 30)), max_depth=depth, class_weight=class_weight,
            random_state=random_state, n_jobs=1),
        "gradient_boosting": lambda: ensemble.GradientBoostingClassifier(
            n_estimators=int(cfg.get("n_estimators", 30)), max_depth=depth or 3,
            learning_rate=float(cfg.get("learning_rate", 0.1)), subsample=float(cfg.get("subsample", 1.0)),
            min_samples_leaf=int(cfg.get("min_samples_leaf", 1)), max_features=cfg.get("max_features"),
            random_state=random_state),
        "hist_boosting": lambda: ensemble.HistGradientBoostingClassifier(
            max_iter=int(cfg.get("n_estimators", 30)), learning_rate=float(cfg.get("learning_rate", 0.1)),
            max_depth=depth, random_state=random_state),
        "adaboost": lambda: ensemble.AdaBoostClassifier(
            n_estimators=int(cfg.get("n_estimators", 30)), learning_rate=float(cfg.get("learning_rate", 0.1)),
            random_state=random_state),
        "knn": lambda: neighbors.KNeighborsClassifier(
            n_neighbors=int(cfg.get("n_neighbors", 5)), weights=cfg.get("weights", "uniform"),
            p=cfg.get("p", 2)),
        "decision_tree": lambda: tree.DecisionTreeClassifier(max_depth=depth, class_weight=class_weight,
                                                             random_state=random_state),
        "ridge": lambda: linear_model.RidgeClassifier(alpha=1.0 / c, class_weight=class_weight),
        "naive_bayes": lambda: naive_bayes.GaussianNB(var_smoothing=float(cfg.get("var_smoothing", 1e-9))),
        "multinomial_nb": lambda: naive_bayes.MultinomialNB(alpha=float(cfg.get("nb_alpha", 1.0))),
        "complement_nb": lambda: naive_bayes.ComplementNB(alpha=float(cfg.get("nb_alpha", 1.0))),
        "bernoulli_nb": lambda: naive_bayes.BernoulliNB(alpha=float(cfg.get("nb_alpha", 1.0))),
        "lda": lambda: discriminant_analysis.LinearDiscriminantAnalysis(),
        "qda": lambda: discriminant_analysis.QuadraticDiscriminantAnalysis(reg_param=0.1),
    }
    if cfg["model"] not in models:
        raise ValueError(f"unknown model {cfg['model']!r}")
    return models[cfg["model"]]()


def regressor(cfg: dict[str, Any], seed: int, *, lasso_alpha: float | None = None) -> Any:
    """The regressor ``cfg["model"]`` names; ``lasso_alpha`` overrides the Lasso's alpha (default ``alpha``)."""
    from sklearn import ensemble, kernel_ridge, linear_model, neighbors, svm, tree
    random_state, depth = _random_state(cfg, seed), _depth(cfg)
    alpha = float(cfg.get("alpha", 1.0))
    models: dict[str, Callable[[], Any]] = {
        "ridge": lambda: linear_model.Ridge(alpha=alpha),
        "ols": lambda: linear_model.LinearRegression(),
        "lasso": lambda: linear_model.Lasso(alpha=alpha if lasso_alpha is None else lasso_alpha, max_iter=5000),
        "elastic_net": lambda: linear_model.ElasticNet(alpha=alpha, l1_ratio=float(cfg.get("l1_ratio", 0.5)),
                                                       max_iter=5000),
        "huber": lambda: linear_model.HuberRegressor(alpha=alpha * 1e-4, max_iter=500),
        "svr": lambda: svm.SVR(C=float(cfg.get("C", 1.0)), epsilon=float(cfg.get("epsilon", 0.1))),
        "kernel_ridge": lambda: kernel_ridge.KernelRidge(alpha=alpha, kernel="rbf"),
        "knn": lambda: neighbors.KNeighborsRegressor(n_neighbors=int(cfg.get("n_neighbors", 5))),
        "decision_tree": lambda: tree.DecisionTreeRegressor(max_depth=depth, random_state=random_state),
        "random_forest": lambda: ensemble.RandomForestRegressor(n_estimators=int(cfg.get("n_estimators", 30)),
                                                                max_depth=depth, random_state=random_state, n_jobs=1),
        "gradient_boosting": lambda: ensemble.GradientBoostingRegressor(
            n_estimators=int(cfg.get("n_estimators", 30)), max_depth=depth or 3,
            learning_rate=float(cfg.get("learning_rate", 0.1)), random_state=random_state),
    }
    if cfg["model"] not in models:
        raise ValueError(f"unknown model {cfg['model']!r}")
    return models[cfg["model"]]()


def pipeline(cfg: dict[str, Any], model: Any, *, first: tuple[Any, ...] = ()) -> Any:
    """``first`` steps, degree-``poly_degree`` features, the ``scaler``, ``pca_components`` (0: none), ``model``.

    ``target_scaling="standard"`` wraps the pipeline so a regressor fits a standardised target.
    """
    from sklearn import compose, decomposition, preprocessing
    from sklearn.pipeline import make_pipeline
    steps: list[Any] = list(first)
    if int(cfg.get("poly_degree", 1)) > 1:
        steps.append(preprocessing.PolynomialFeatures(int(cfg["poly_degree"]), include_bias=False))
    scaler = cfg.get("scaler", "none")
    scalers: dict[str, Callable[[], Any]] = {
        "standard": preprocessing.StandardScaler, "minmax": preprocessing.MinMaxScaler,
        "robust": preprocessing.RobustScaler, "maxabs": preprocessing.MaxAbsScaler,
        "normalize": preprocessing.Normalizer,
        "quantile": lambda: preprocessing.QuantileTransformer(n_quantiles=100, random_state=0)}
    if scaler in scalers:
        steps.append(scalers[scaler]())
    elif scaler != "none":
        raise ValueError(f"unknown scaler {scaler!r}")
    if int(cfg.get("pca_components", 0)) > 0:
        steps.append(decomposition.PCA(int(cfg["pca_components"]), random_state=0))
    fitted = make_pipeline(*steps, model)
    if cfg.get("target_scaling", "none") == "standard":
        return compose.TransformedTargetRegressor(regressor=fitted, transformer=preprocessing.StandardScaler())
    return fitted


def errors(fitted: Any, x: Any, y: np.ndarray) -> tuple[float, int]:
    """Wrong predictions (an error rate once pooled)."""
    return float((fitted.predict(x) != y).sum()), len(y)


def log_loss(classes: int) -> FoldScore:
    """Summed cross-entropy (nats) of the predicted probabilities, clipped at ``PROBABILITY_FLOOR``."""
    def score(fitted: Any, x: Any, y: np.ndarray) -> tuple[float, int]:
        probabilities = np.zeros((len(y), classes))                        # (N_test, classes)
        probabilities[:, fitted.classes_] = fitted.predict_proba(x)
        picked = np.clip(probabilities[np.arange(len(y)), y], PROBABILITY_FLOOR, 1.0)
        return -float(np.sum(np.log(picked))), len(y)
    return score


def squared_errors(fitted: Any, x: Any, y: np.ndarray) -> tuple[float, int]:
    """Summed squared residuals (an MSE once pooled)."""
    residual = fitted.predict(x) - y
    return float(np.sum(residual ** 2)), len(y)


def cross_validated(x: Any, y: np.ndarray, estimator: Any, cfg: dict[str, Any], seed: int, *,
                    score: FoldScore, stratified: bool) -> RunResult:
    """Pool ``score`` over ``CV_REPEATS`` x 5 folds set by ``seed``; the curve is the running pooled metric."""
    from sklearn.base import clone
    from sklearn.model_selection import RepeatedKFold, RepeatedStratifiedKFold
    splitter = RepeatedStratifiedKFold if stratified else RepeatedKFold
    folds = splitter(n_splits=5, n_repeats=CV_REPEATS, random_state=seed * 389 + 7 + int(cfg["split_seed_offset"]))
    rng = np.random.default_rng(seed * 389 + 9)
    loss, total, curve = 0.0, 0, []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # convergence warnings are part of the outcome
            for train_idx, test_idx in folds.split(x, y):
                keep = np.sort(rng.permutation(train_idx)[: int(len(train_idx) * float(cfg["train_fraction"]))])
                fitted = clone(estimator).fit(x[keep], y[keep])
                fold_loss, rows = score(fitted, x[test_idx], y[test_idx])
                loss, total = loss + fold_loss, total + rows
                curve.append(round(loss / total, 4))
    except (ValueError, np.linalg.LinAlgError):
        return RunResult(metric=float("nan"), curve=curve, crashed=True)
    metric = loss / total
    if not math.isfinite(metric):
        return RunResult(metric=float("nan"), curve=curve, crashed=True)
    return RunResult(metric=metric, curve=curve, crashed=False)
