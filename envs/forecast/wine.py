"""Probabilistic classifiers on scikit-learn's wine data, scored by repeated stratified CV log-loss (``tabular-wine``).

178 wines from three cultivars, 13 chemical measurements. Error rates there are a few percent
(one or two wrong wines per fold), too coarse to rank changes, so the metric is the pooled
out-of-fold cross-entropy of the predicted class probabilities (a loss; probabilities clipped at
1e-6 as a real log-loss would be). A seed sets the folds (2 repeats of 5) and the models' random
state; a configuration scikit-learn refuses raises inside the fit and the run is a crash.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import numpy as np

from .runs import RunResult

__all__ = ["WINE_BASELINE", "train_wine"]

WINE_BASELINE: dict[str, Any] = {
    "model": "logreg", "C": 1.0, "penalty": "l2", "solver": "lbfgs", "max_iter": 200,
    "class_weight": "none", "scaler": "standard", "poly_degree": 1, "features": "all",
    "train_fraction": 1.0, "n_estimators": 30, "max_depth": 0, "learning_rate": 0.1,
    "n_neighbors": 5, "var_smoothing": 1e-9,
    "run_name": "baseline", "model_seed_offset": 0, "split_seed_offset": 0, "verbose": 0,
}
CV_REPEATS = 2
PROBABILITY_FLOOR = 1e-6


@functools.lru_cache(maxsize=1)
def _data() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_wine
    x, y = load_wine(return_X_y=True)
    return x, y


def _estimator(cfg: dict[str, Any], seed: int) -> Any:
    from sklearn import discriminant_analysis, ensemble, linear_model, naive_bayes, neighbors, preprocessing, svm, tree
    from sklearn.pipeline import make_pipeline
    random_state = seed * 613 + 1 + int(cfg["model_seed_offset"])
    class_weight = None if cfg["class_weight"] == "none" else cfg["class_weight"]
    depth = None if int(cfg["max_depth"]) == 0 else int(cfg["max_depth"])
    models: dict[str, Any] = {
        "logreg": lambda: linear_model.LogisticRegression(
            C=float(cfg["C"]), penalty=cfg["penalty"], solver=cfg["solver"], max_iter=int(cfg["max_iter"]),
            class_weight=class_weight, random_state=random_state, verbose=int(cfg["verbose"])),
        "svm_rbf": lambda: svm.SVC(C=float(cfg["C"]), probability=True, class_weight=class_weight,
                                   random_state=random_state),
        "random_forest": lambda: ensemble.RandomForestClassifier(
            n_estimators=int(cfg["n_estimators"]), max_depth=depth, class_weight=class_weight,
            random_state=random_state, n_jobs=1),
        "gradient_boosting": lambda: ensemble.GradientBoostingClassifier(
            n_estimators=int(cfg["n_estimators"]), max_depth=depth or 3, learning_rate=float(cfg["learning_rate"]),
            random_state=random_state),
        "knn": lambda: neighbors.KNeighborsClassifier(n_neighbors=int(cfg["n_neighbors"])),
        "decision_tree": lambda: tree.DecisionTreeClassifier(max_depth=depth, class_weight=class_weight,
                                                             random_state=random_state),
        "naive_bayes": lambda: naive_bayes.GaussianNB(var_smoothing=float(cfg["var_smoothing"])),
        "lda": lambda: discriminant_analysis.LinearDiscriminantAnalysis(),
        "qda": lambda: discriminant_analysis.QuadraticDiscriminantAnalysis(reg_param=0.1),
    }
    if cfg["model"] not in models:
        raise ValueError(f"unknown model {cfg['model']!r}")
    steps: list[Any] = []
    if int(cfg["poly_degree"]) > 1:
        steps.append(preprocessing.PolynomialFeatures(int(cfg["poly_degree"]), include_bias=False))
    scalers: dict[str, Any] = {"standard": preprocessing.StandardScaler(), "minmax": preprocessing.MinMaxScaler(),
                               "robust": preprocessing.RobustScaler()}
    if cfg["scaler"] in scalers:
        steps.append(scalers[cfg["scaler"]])
    elif cfg["scaler"] != "none":
        raise ValueError(f"unknown scaler {cfg['scaler']!r}")
    return make_pipeline(*steps, models[cfg["model"]]())


def _columns(features: str) -> list[int]:
    # alcohol .. proline: the first 7 are acids, alcohols and phenols, the last 6 colour and proline
    return {"all": list(range(13)), "first_seven": list(range(7)), "last_six": list(range(7, 13))}[features]


def train_wine(cfg: dict[str, Any], seed: int) -> RunResult:
    """Pooled out-of-fold cross-entropy (nats) over ``CV_REPEATS`` x 5 stratified folds set by ``seed``."""
    from sklearn.base import clone
    from sklearn.model_selection import RepeatedStratifiedKFold
    x, y = _data()
    x = x[:, _columns(cfg["features"])]
    folds = RepeatedStratifiedKFold(n_splits=5, n_repeats=CV_REPEATS,
                                    random_state=seed * 389 + 7 + int(cfg["split_seed_offset"]))
    rng = np.random.default_rng(seed * 389 + 9)
    estimator = _estimator(cfg, seed)
    nats, total, curve = 0.0, 0, []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # convergence warnings are part of the outcome
            for train_idx, test_idx in folds.split(x, y):
                keep = np.sort(rng.permutation(train_idx)[: int(len(train_idx) * float(cfg["train_fraction"]))])
                fitted = clone(estimator).fit(x[keep], y[keep])
                probabilities = np.zeros((len(test_idx), 3))                       # (N_test, classes)
                probabilities[:, fitted.classes_] = fitted.predict_proba(x[test_idx])
                picked = np.clip(probabilities[np.arange(len(test_idx)), y[test_idx]], PROBABILITY_FLOOR, 1.0)
                nats, total = nats - float(np.sum(np.log(picked))), total + len(test_idx)
                curve.append(round(nats / total, 4))
    except (ValueError, np.linalg.LinAlgError):
        return RunResult(metric=float("nan"), curve=curve, crashed=True)
    metric = nats / total
    if not math.isfinite(metric):
        return RunResult(metric=float("nan"), curve=curve, crashed=True)
    return RunResult(metric=metric, curve=curve, crashed=False)
