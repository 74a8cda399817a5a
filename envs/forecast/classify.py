"""Cross-validated scikit-learn classifiers on shipped and generated tabular data.

Datasets (``DATASETS``): scikit-learn's shipped breast cancer (``bc``: 569 tumours, 30 columns =
10 measurements x mean, standard error, worst), wine (``wine``: 178 wines, 3 cultivars, 13
measurements) and 8x8 digits (``digits``: 1,797 images, 64 pixels 0..16); and data drawn once from
scikit-learn's generators with a fixed ``random_state``: ``moons`` (two interleaved half circles,
noise 0.3), ``circles`` (a ring around a disc, noise 0.2), ``hastie`` (``make_hastie_10_2``: the
sign of a chi-square sum of 10 Gaussians, the classic boosting benchmark), ``quantiles``
(``make_gaussian_quantiles``: 400 points in 4 dimensions, the class is whether the distance from
the centre exceeds the median, a boundary no hyperplane follows), ``sparse`` (50 columns,
5 informative, 5 redundant, 5% flipped labels) and ``blobs`` (4 classes of two clusters each in 8
dimensions); ``iris`` is scikit-learn's shipped iris (150 flowers, 3 species, 4 measurements) and
``patches`` are 600 grey 8x8 texture patches cut once from scikit-learn's two shipped sample
photographs (4 classes: the top or bottom half of either; each patch at mean 0 and unit spread). Every run is ``sklearn_recipe.cross_validated``: the metric is the pooled error rate
(``error``) or the pooled cross-entropy of the predicted probabilities (``log_loss``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .runs import RunResult
from .sklearn_recipe import SKLEARN_KNOBS, classifier, cross_validated, errors, log_loss, pipeline

__all__ = ["TABULAR_BASELINE", "WINE_BASELINE", "LOGREG_BASELINE", "SVM_BASELINE", "BOOSTING_BASELINE",
           "KNN_BASELINE", "train_classifier", "class_share"]

_LINEAR: dict[str, Any] = {
    "model": "logreg", "C": 1.0, "penalty": "l2", "solver": "lbfgs", "max_iter": 200,
    "class_weight": "none", "scaler": "standard", "poly_degree": 1, "features": "all",
    "n_estimators": 30, "max_depth": 0, "learning_rate": 0.1, "n_neighbors": 5,
    **SKLEARN_KNOBS, "verbose": 0,
}
TABULAR_BASELINE: dict[str, Any] = {**_LINEAR, "gamma": "scale"}
WINE_BASELINE: dict[str, Any] = {**_LINEAR, "var_smoothing": 1e-9}
LOGREG_BASELINE: dict[str, Any] = {**_LINEAR, "var_smoothing": 1e-9, "gamma": "scale", "kernel": "rbf"}
SVM_BASELINE: dict[str, Any] = {
    "model": "svm_rbf", "C": 1.0, "gamma": "scale", "kernel": "rbf", "degree": 3, "class_weight": "none",
    "scaler": "standard", "poly_degree": 1, "features": "all", "max_iter": 200,
    "n_estimators": 30, "max_depth": 0, "learning_rate": 0.1, "n_neighbors": 5, **SKLEARN_KNOBS,
}
BOOSTING_BASELINE: dict[str, Any] = {
    "model": "gradient_boosting", "n_estimators": 30, "max_depth": 2, "learning_rate": 0.1, "subsample": 1.0,
    "min_samples_leaf": 1, "max_features": None, "scaler": "none", "poly_degree": 1, "features": "all", "C": 1.0,
    "n_neighbors": 5, **SKLEARN_KNOBS,
}
KNN_BASELINE: dict[str, Any] = {
    "model": "knn", "n_neighbors": 5, "weights": "uniform", "p": 2, "scaler": "standard", "pca_components": 0,
    "features": "all", "C": 1.0, "n_estimators": 30, "max_depth": 0, "learning_rate": 0.1, **SKLEARN_KNOBS,
}


def _patches() -> tuple[np.ndarray, np.ndarray]:
    """600 grey 8x8 patches of scikit-learn's two sample photographs (``china.jpg``, ``flower.jpg``), 150 from
    the top and 150 from the bottom half of each (4 classes), each patch shifted to mean 0 and scaled to unit
    standard deviation so only texture tells them apart; drawn once with a fixed generator."""
    from sklearn import datasets
    rng = np.random.default_rng(303)
    rows, labels = [], []
    for index, image in enumerate(datasets.load_sample_images().images):
        grey = image.astype(float).mean(axis=2)                             # (H, W)
        half = grey.shape[0] // 2
        for part, (top, bottom) in enumerate(((0, half - 8), (half, grey.shape[0] - 8))):
            for _ in range(150):
                r, c = int(rng.integers(top, bottom)), int(rng.integers(0, grey.shape[1] - 8))
                patch = grey[r:r + 8, c:c + 8].ravel()
                rows.append((patch - patch.mean()) / (patch.std() + 1.0))
                labels.append(2 * index + part)
    return np.array(rows), np.array(labels)


@functools.lru_cache(maxsize=None)
def _data(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets
    loaders: dict[str, Any] = {
        "bc": lambda: datasets.load_breast_cancer(return_X_y=True),
        "wine": lambda: datasets.load_wine(return_X_y=True),
        "digits": lambda: datasets.load_digits(return_X_y=True),
        "moons": lambda: datasets.make_moons(n_samples=500, noise=0.3, random_state=0),
        "circles": lambda: datasets.make_circles(n_samples=500, noise=0.2, factor=0.5, random_state=0),
        "hastie": lambda: datasets.make_hastie_10_2(n_samples=400, random_state=0),
        "sparse": lambda: datasets.make_classification(
            n_samples=400, n_features=50, n_informative=5, n_redundant=5, flip_y=0.05, random_state=0),
        "blobs": lambda: datasets.make_classification(
            n_samples=500, n_features=8, n_informative=5, n_redundant=1, n_classes=4, n_clusters_per_class=2,
            class_sep=1.0, random_state=3),
        "quantiles": lambda: datasets.make_gaussian_quantiles(n_samples=400, n_features=4, n_classes=2,
                                                              random_state=0),
        "iris": lambda: datasets.load_iris(return_X_y=True),
        "patches": _patches,
    }
    if dataset not in loaders:
        raise ValueError(f"unknown classification dataset {dataset!r}")
    x, y = loaders[dataset]()
    return x, (y > 0).astype(int) if dataset == "hastie" else y      # hastie's labels are -1 / +1


def _columns(dataset: str, features: str, width: int) -> slice | list[int]:
    if features in ("first_half", "second_half"):      # every dataset's columns split in two halves
        return slice(0, max(1, width // 2)) if features == "first_half" else slice(width // 2, width)
    if dataset == "bc":      # 10 measurements x (mean, standard error, worst)
        return {"all": slice(0, 30), "mean_only": slice(0, 10), "mean_and_se": slice(0, 20),
                "worst_only": slice(20, 30)}[features]
    if dataset == "wine":    # the first 7 are acids, alcohols and phenols, the last 6 colour and proline
        return {"all": list(range(13)), "first_seven": list(range(7)), "last_six": list(range(7, 13))}[features]
    return {"all": slice(0, width), "first_half": slice(0, max(1, width // 2)),
            "second_half": slice(width // 2, width)}[features]


def class_share(dataset: str) -> float:
    """The error rate of always predicting the majority class: what a crashed run is scored as."""
    y = _data(dataset)[1]
    return 1.0 - float(np.bincount(y).max()) / len(y)


def train_classifier(dataset: str, metric: str, cfg: dict[str, Any], seed: int) -> RunResult:
    """Pooled ``metric`` (``error`` or ``log_loss``) over repeated stratified 5-fold CV set by ``seed``."""
    x, y = _data(dataset)
    x = x[:, _columns(dataset, cfg["features"], x.shape[1])]
    probabilistic = metric == "log_loss"
    estimator = pipeline(cfg, classifier(cfg, seed, probability=probabilistic))
    score = log_loss(int(y.max()) + 1) if probabilistic else errors
    return cross_validated(x, y, estimator, cfg, seed, score=score, stratified=True)
