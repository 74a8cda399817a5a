"""scikit-learn regressors scored by repeated 5-fold CV MSE (``regress-diabetes``, ``regress-friedman``).

``diabetes`` is scikit-learn's shipped diabetes data (442 patients, 10 features, disease
progression after a year); ``friedman`` is ``make_friedman1`` drawn once (400 rows, 10 features of
which 5 matter, noise 1.0, ``random_state=0``): a smooth non-linear target where trees and kernels
beat a linear fit. A seed sets the folds (2 repeats of 5 folds) and the models' random state; the
metric is the pooled out-of-fold MSE (a loss: lower is better). A configuration scikit-learn
refuses raises inside the fit and the run is a crash.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from .runs import RunResult

__all__ = ["REGRESSION_BASELINE", "train_regression", "target_variance"]

REGRESSION_BASELINE: dict[str, Any] = {
    "model": "ridge", "alpha": 1.0, "l1_ratio": 0.5, "C": 1.0, "epsilon": 0.1,
    "scaler": "standard", "poly_degree": 1, "target_scaling": "none", "features": "all",
    "train_fraction": 1.0, "n_estimators": 30, "max_depth": 0, "learning_rate": 0.1, "n_neighbors": 5,
    "run_name": "baseline", "model_seed_offset": 0, "split_seed_offset": 0, "verbose": 0,
}
CV_REPEATS = 2


@functools.lru_cache(maxsize=None)
def _data(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets
    if dataset == "diabetes":
        x, y = datasets.load_diabetes(return_X_y=True)
        return x, y
    if dataset == "friedman":
        x, y = datasets.make_friedman1(n_samples=400, n_features=10, noise=1.0, random_state=0)
        return x, y
    raise ValueError(f"unknown regression dataset {dataset!r}")


def target_variance(dataset: str) -> float:
    """The MSE of predicting the mean: what a crashed run is scored as."""
    return float(np.var(_data(dataset)[1]))


def _estimator(cfg: dict[str, Any], seed: int) -> Any:
    from sklearn import compose, ensemble, kernel_ridge, linear_model, neighbors, preprocessing, svm, tree
    from sklearn.pipeline import make_pipeline
    random_state = seed * 613 + 1 + int(cfg["model_seed_offset"])
    depth = None if int(cfg["max_depth"]) == 0 else int(cfg["max_depth"])
    alpha, name = float(cfg["alpha"]), cfg["model"]
    models: dict[str, Any] = {
        "ridge": lambda: linear_model.Ridge(alpha=alpha),
        "ols": lambda: linear_model.LinearRegression(),
        "lasso": lambda: linear_model.Lasso(alpha=alpha, max_iter=5000),
        "elastic_net": lambda: linear_model.ElasticNet(alpha=alpha, l1_ratio=float(cfg["l1_ratio"]), max_iter=5000),
        "huber": lambda: linear_model.HuberRegressor(alpha=alpha * 1e-4, max_iter=500),
        "svr": lambda: svm.SVR(C=float(cfg["C"]), epsilon=float(cfg["epsilon"])),
        "kernel_ridge": lambda: kernel_ridge.KernelRidge(alpha=alpha, kernel="rbf"),
        "knn": lambda: neighbors.KNeighborsRegressor(n_neighbors=int(cfg["n_neighbors"])),
        "decision_tree": lambda: tree.DecisionTreeRegressor(max_depth=depth, random_state=random_state),
        "random_forest": lambda: ensemble.RandomForestRegressor(n_estimators=int(cfg["n_estimators"]), max_depth=depth,
                                                                random_state=random_state, n_jobs=1),
        "gradient_boosting": lambda: ensemble.GradientBoostingRegressor(
            n_estimators=int(cfg["n_estimators"]), max_depth=depth or 3, learning_rate=float(cfg["learning_rate"]),
            random_state=random_state),
    }
    if name not in models:
        raise ValueError(f"unknown model {name!r}")
    model = models[name]()
    steps: list[Any] = []
    if int(cfg["poly_degree"]) > 1:
        steps.append(preprocessing.PolynomialFeatures(int(cfg["poly_degree"]), include_bias=False))
    scalers: dict[str, Any] = {"standard": preprocessing.StandardScaler(), "minmax": preprocessing.MinMaxScaler(),
                               "robust": preprocessing.RobustScaler()}
    if cfg["scaler"] in scalers:
        steps.append(scalers[cfg["scaler"]])
    elif cfg["scaler"] != "none":
        raise ValueError(f"unknown scaler {cfg['scaler']!r}")
    pipeline = make_pipeline(*steps, model)
    if cfg["target_scaling"] == "standard":
        return compose.TransformedTargetRegressor(regressor=pipeline, transformer=preprocessing.StandardScaler())
    return pipeline


def _columns(features: str, width: int) -> slice:
    return {"all": slice(0, width), "first_half": slice(0, width // 2), "second_half": slice(width // 2, width)}[features]


def train_regression(dataset: str, cfg: dict[str, Any], seed: int) -> RunResult:
    """Pooled out-of-fold MSE over ``CV_REPEATS`` x 5 folds whose split depends on ``seed``."""
    from sklearn.base import clone
    from sklearn.model_selection import RepeatedKFold
    x, y = _data(dataset)
    x = x[:, _columns(cfg["features"], x.shape[1])]
    folds = RepeatedKFold(n_splits=5, n_repeats=CV_REPEATS, random_state=seed * 389 + 7 + int(cfg["split_seed_offset"]))
    rng = np.random.default_rng(seed * 389 + 9)
    estimator = _estimator(cfg, seed)
    squared, total, curve = 0.0, 0, []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # convergence warnings are part of the outcome
            for train_idx, test_idx in folds.split(x, y):
                keep = np.sort(rng.permutation(train_idx)[: int(len(train_idx) * float(cfg["train_fraction"]))])
                fitted = clone(estimator).fit(x[keep], y[keep])
                residual = fitted.predict(x[test_idx]) - y[test_idx]
                squared, total = squared + float(np.sum(residual ** 2)), total + len(test_idx)
                curve.append(round(squared / total, 4))
    except (ValueError, np.linalg.LinAlgError):
        return RunResult(metric=float("nan"), curve=curve, crashed=True)
    metric = squared / total
    if not np.isfinite(metric):
        return RunResult(metric=float("nan"), curve=curve, crashed=True)
    return RunResult(metric=metric, curve=curve, crashed=False)
