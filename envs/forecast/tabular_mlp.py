"""A small torch MLP on scikit-learn's breast cancer data (``bc-mlp``): the neural twin of ``tabular-bc``.

The split is fixed (half train, half test, stratified, ``random_state=0``; features standardised
with the training half's statistics); a seed sets the initialisation and the minibatch order
(``nets.fit_classifier``). The metric is the test cross-entropy (a loss); a non-finite training
loss is a crash.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from .nets import NET_KNOBS, fit_classifier, mlp, test_loss, training_rows
from .runs import RunResult

__all__ = ["BC_MLP_BASELINE", "train_bc_mlp"]

BC_MLP_BASELINE: dict[str, Any] = {
    **NET_KNOBS, "batch_size": 32, "epochs": 10, "activation": "relu", "init_gain": 1.0, "width": 32, "depth": 1,
    "batch_norm": False, "input_scale": "standard",
}


@functools.lru_cache(maxsize=1)
def _split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    x, y = load_breast_cancer(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.5, stratify=y, random_state=0)
    return x_train, x_test, y_train, y_test


def _inputs(x: np.ndarray, scale: str) -> torch.Tensor:
    train = _split()[0]
    if scale == "standard":
        x = (x - train.mean(0)) / (train.std(0) + 1e-9)
    elif scale == "minmax":
        x = (x - train.min(0)) / (train.max(0) - train.min(0) + 1e-9)
    elif scale != "raw":
        raise ValueError(f"unknown input_scale {scale!r}")
    return torch.as_tensor(x, dtype=torch.float32)                      # (N, 30)


def train_bc_mlp(cfg: dict[str, Any], seed: int) -> RunResult:
    """Train for ``cfg["epochs"]`` epochs; the metric is the test cross-entropy in nats."""
    x_train, x_test, y_train, y_test = _split()
    keep, labels = training_rows(y_train, cfg, seed, classes=2)
    xs, ys = _inputs(x_train[keep], cfg["input_scale"]), torch.as_tensor(labels)
    xt, yt = _inputs(x_test, cfg["input_scale"]), torch.as_tensor(y_test)
    curve, logits = fit_classifier(lambda: mlp(30, 2, cfg), xs, ys, xt, cfg, seed)
    return test_loss(curve, logits, yt)
