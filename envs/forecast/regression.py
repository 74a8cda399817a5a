"""scikit-learn regressors scored by repeated 5-fold CV MSE (``regress-diabetes``, ``-friedman``, ``-friedman2``,
``-friedman3``, ``-sparse``, ``-lowrank``, ``-uncorrelated``, ``-scurve``, ``-swissroll``, ``-linnerud``).

``diabetes`` is scikit-learn's shipped diabetes data (442 patients, 10 features, disease
progression after a year); ``friedman`` is ``make_friedman1`` drawn once (400 rows, 10 features of
which 5 matter, noise 1.0, ``random_state=0``): a smooth non-linear target where trees and kernels
beat a linear fit; ``friedman3`` is ``make_friedman3`` (400 rows, an arctangent of a ratio of the 4
features, noise 0.1); ``sparse`` is ``make_regression`` (200 rows, 60 features of which 8 matter
linearly, noise 20): more features than a fold's fit can spare, where penalties decide;
``friedman2`` is ``make_friedman2`` (400 rows, 4 features, an impedance-like square root of
products, noise 30); ``lowrank`` is ``make_regression`` with ``effective_rank=4`` (300 rows, 20
strongly collinear features of which 10 matter, noise 5); ``uncorrelated`` is
``make_sparse_uncorrelated`` (300 rows, 10 independent features of which 4 matter linearly, unit
noise); ``scurve`` and ``swissroll`` are ``make_s_curve`` (400 points, noise 0.3) and
``make_swiss_roll`` (400 points, noise 1): a point's position along a curled 2-d sheet from its
3-d coordinates, a non-linear map no linear fit follows; ``linnerud`` is scikit-learn's shipped
linnerud data (20 men; waist size from chins, sit-ups and jumps): so few rows that variance, not
bias, decides. A seed sets the folds (2 repeats of 5 folds) and the models' random state;
the metric is the pooled out-of-fold MSE of ``sklearn_recipe.cross_validated`` (a loss: lower is
better).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .runs import RunResult
from .sklearn_recipe import SKLEARN_KNOBS, cross_validated, pipeline, regressor, squared_errors

__all__ = ["REGRESSION_BASELINE", "train_regression", "target_variance"]

REGRESSION_BASELINE: dict[str, Any] = {
    "model": "ridge", "alpha": 1.0, "l1_ratio": 0.5, "C": 1.0, "epsilon": 0.1,
    "scaler": "standard", "poly_degree": 1, "target_scaling": "none", "features": "all",
    "n_estimators": 30, "max_depth": 0, "learning_rate": 0.1, "n_neighbors": 5, **SKLEARN_KNOBS, "verbose": 0,
}


@functools.lru_cache(maxsize=None)
def _data(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets
    if dataset == "diabetes":
        x, y = datasets.load_diabetes(return_X_y=True)
        return x, y
    if dataset == "friedman":
        x, y = datasets.make_friedman1(n_samples=400, n_features=10, noise=1.0, random_state=0)
        return x, y
    if dataset == "friedman3":
        x, y = datasets.make_friedman3(n_samples=400, noise=0.1, random_state=0)
        return x, y
    if dataset == "sparse":
        x, y = datasets.make_regression(n_samples=200, n_features=60, n_informative=8, noise=20.0,
                                        random_state=0)
        return x, y
    if dataset == "friedman2":
        x, y = datasets.make_friedman2(n_samples=400, noise=30.0, random_state=0)
        return x, y
    if dataset == "lowrank":
        x, y = datasets.make_regression(n_samples=300, n_features=20, n_informative=10, effective_rank=4,
                                        tail_strength=0.5, noise=5.0, random_state=0)
        return x, y
    if dataset == "uncorrelated":
        x, y = datasets.make_sparse_uncorrelated(n_samples=300, n_features=10, random_state=0)
        return x, y
    if dataset == "scurve":          # the position along an S-shaped sheet from noisy 3-d coordinates
        x, y = datasets.make_s_curve(n_samples=400, noise=0.3, random_state=0)
        return x, y
    if dataset == "swissroll":       # the position along a rolled sheet from noisy 3-d coordinates
        x, y = datasets.make_swiss_roll(n_samples=400, noise=1.0, random_state=0)
        return x, y
    if dataset == "linnerud":        # waist (inches) from chins, sit-ups and jumps: 20 athletes
        data = datasets.load_linnerud()
        return data.data, data.target[:, 1]
    raise ValueError(f"unknown regression dataset {dataset!r}")


def target_variance(dataset: str) -> float:
    """The MSE of predicting the mean: what a crashed run is scored as."""
    return float(np.var(_data(dataset)[1]))


def _columns(features: str, width: int) -> slice:
    return {"all": slice(0, width), "first_half": slice(0, width // 2), "second_half": slice(width // 2, width)}[features]


def train_regression(dataset: str, cfg: dict[str, Any], seed: int) -> RunResult:
    """Pooled out-of-fold MSE over repeated 5-fold CV whose split depends on ``seed``."""
    x, y = _data(dataset)
    x = x[:, _columns(cfg["features"], x.shape[1])]
    estimator = pipeline(cfg, regressor(cfg, seed))
    return cross_validated(x, y, estimator, cfg, seed, score=squared_errors, stratified=False)
