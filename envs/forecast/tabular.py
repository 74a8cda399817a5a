"""scikit-learn models on the breast cancer data, scored by repeated stratified 5-fold CV (``tabular-bc``).

A seed sets the folds (2 repeats of 5 folds); the metric is the pooled CV error rate (an
accuracy-type metric). A configuration scikit-learn refuses (for example an L1 penalty with the
lbfgs solver) raises inside the fit: the run is a crash, as it would be in a real sweep.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from .runs import RunResult

__all__ = ["TABULAR_BASELINE", "train_tabular"]

TABULAR_BASELINE: dict[str, Any] = {
    "model": "logreg", "C": 1.0, "penalty": "l2", "solver": "lbfgs", "max_iter": 200,
    "class_weight": "none", "scaler": "standard", "poly_degree": 1, "features": "all",
    "train_fraction": 1.0, "n_estimators": 30, "max_depth": 0, "learning_rate": 0.1,
    "n_neighbors": 5, "gamma": "scale",
    "run_name": "baseline", "model_seed_offset": 0, "split_seed_offset": 0, "verbose": 0,
}
CV_REPEATS = 2


@functools.lru_cache(maxsize=1)
def _data() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer
    x, y = load_breast_cancer(return_X_y=True)
    return x, y


def _estimator(cfg: dict[str, Any], seed: int) -> Any:
    from sklearn import ensemble, linear_model, neighbors, preprocessing, svm, tree
    from sklearn.pipeline import make_pipeline
    random_state = seed * 613 + 1 + int(cfg["model_seed_offset"])
    class_weight = None if cfg["class_weight"] == "none" else cfg["class_weight"]
    depth = None if int(cfg["max_depth"]) == 0 else int(cfg["max_depth"])
    name = cfg["model"]
    if name == "logreg":
        model: Any = linear_model.LogisticRegression(C=float(cfg["C"]), penalty=cfg["penalty"], solver=cfg["solver"],
                                                     max_iter=int(cfg["max_iter"]), class_weight=class_weight,
                                                     random_state=random_state, verbose=int(cfg["verbose"]))
    elif name == "svm_rbf":
        model = svm.SVC(C=float(cfg["C"]), gamma=cfg["gamma"] if isinstance(cfg["gamma"], str) else float(cfg["gamma"]), class_weight=class_weight, random_state=random_state)
    elif name == "linear_svm":
        model = svm.LinearSVC(C=float(cfg["C"]), class_weight=class_weight, random_state=random_state,
                              max_iter=int(cfg["max_iter"]) * 10, dual="auto")
    elif name == "random_forest":
        model = ensemble.RandomForestClassifier(n_estimators=int(cfg["n_estimators"]), max_depth=depth,
                                                class_weight=class_weight, random_state=random_state, n_jobs=1)
    elif name == "gradient_boosting":
        model = ensemble.GradientBoostingClassifier(n_estimators=int(cfg["n_estimators"]), max_depth=depth or 3,
                                                    learning_rate=float(cfg["learning_rate"]), random_state=random_state)
    elif name == "knn":
        model = neighbors.KNeighborsClassifier(n_neighbors=int(cfg["n_neighbors"]))
    elif name == "decision_tree":
        model = tree.DecisionTreeClassifier(max_depth=depth, class_weight=class_weight, random_state=random_state)
    elif name == "ridge":
        model = linear_model.RidgeClassifier(alpha=1.0 / float(cfg["C"]), class_weight=class_weight)
    else:
        raise ValueError(f"unknown model {name!r}")
    steps: list[Any] = []
    if int(cfg["poly_degree"]) > 1:
        steps.append(preprocessing.PolynomialFeatures(int(cfg["poly_degree"]), include_bias=False))
    scalers: dict[str, Any] = {
        "standard": preprocessing.StandardScaler(), "minmax": preprocessing.MinMaxScaler(),
        "robust": preprocessing.RobustScaler(), "quantile": preprocessing.QuantileTransformer(n_quantiles=100, random_state=0)}
    if cfg["scaler"] in scalers:
        steps.append(scalers[cfg["scaler"]])
    elif cfg["scaler"] != "none":
        raise ValueError(f"unknown scaler {cfg['scaler']!r}")
    return make_pipeline(*steps, model)


def _columns(features: str) -> slice:
    # the data's 30 columns are 10 measurements x (mean, standard error, worst)
    return {"all": slice(0, 30), "mean_only": slice(0, 10), "mean_and_se": slice(0, 20),
            "worst_only": slice(20, 30)}[features]


def train_tabular(cfg: dict[str, Any], seed: int) -> RunResult:
    """Pooled error rate over ``CV_REPEATS`` x 5 stratified folds whose split depends on ``seed``."""
    from sklearn.base import clone
    from sklearn.model_selection import RepeatedStratifiedKFold
    x, y = _data()
    x = x[:, _columns(cfg["features"])]
    folds = RepeatedStratifiedKFold(n_splits=5, n_repeats=CV_REPEATS,
                                    random_state=seed * 389 + 7 + int(cfg["split_seed_offset"]))
    rng = np.random.default_rng(seed * 389 + 9)
    estimator = _estimator(cfg, seed)
    errors, total, curve = 0, 0, []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # convergence warnings are part of the outcome
            for train_idx, test_idx in folds.split(x, y):
                keep = np.sort(rng.permutation(train_idx)[: int(len(train_idx) * float(cfg["train_fraction"]))])
                fitted = clone(estimator).fit(x[keep], y[keep])
                wrong = int((fitted.predict(x[test_idx]) != y[test_idx]).sum())
                errors, total = errors + wrong, total + len(test_idx)
                curve.append(round(errors / total, 4))
    except (ValueError, np.linalg.LinAlgError):
        return RunResult(metric=float("nan"), curve=curve, crashed=True)
    return RunResult(metric=errors / total, curve=curve, crashed=False)
