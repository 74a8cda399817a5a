"""Small torch classifiers on scikit-learn's 8x8 digits, for ``digits-mlp`` and ``digits-cnn``.

The split is fixed (half train, half test, stratified, ``random_state=0``); a seed sets the
initialisation and the minibatch order. ``digits-mlp`` reports the test cross-entropy (a loss),
``digits-cnn`` the test error rate (an accuracy-type metric); a non-finite training loss is a crash.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .nets import NET_KNOBS, activation, fit_classifier, mlp, test_loss, training_rows
from .runs import RunResult, one_thread

__all__ = ["DIGITS_MLP_BASELINE", "DIGITS_CNN_BASELINE", "train_digits"]

_COMMON: dict[str, Any] = {
    **NET_KNOBS, "batch_size": 64, "epochs": 6, "activation": "relu", "init": "default", "init_gain": 1.0,
    "batch_norm": False, "input_scale": "unit", "augment_shift": False,
}
DIGITS_MLP_BASELINE: dict[str, Any] = {**_COMMON, "width": 64, "depth": 1}
DIGITS_CNN_BASELINE: dict[str, Any] = {**_COMMON, "channels": 8, "conv_layers": 1, "kernel": 3,
                                       "pool": "max", "width": 32}


@functools.lru_cache(maxsize=1)
def _split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.5, stratify=y, random_state=0)
    return x_train, x_test, y_train, y_test


def _cnn(cfg: dict[str, Any]) -> nn.Module:
    channels, kernel = int(cfg["channels"]), int(cfg["kernel"])
    layers: list[nn.Module] = []
    c_in, side = 1, 8
    for i in range(int(cfg["conv_layers"])):
        c_out = channels * (2 ** i)
        layers += [nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2)]
        if cfg["batch_norm"]:
            layers.append(nn.BatchNorm2d(c_out))
        layers.append(activation(cfg["activation"]))
        if cfg["pool"] != "none" and side >= 4:
            layers.append(nn.MaxPool2d(2) if cfg["pool"] == "max" else nn.AvgPool2d(2))
            side //= 2
        c_in = c_out
    layers += [nn.Flatten(), nn.Dropout(float(cfg["dropout"])), nn.Linear(c_in * side * side, int(cfg["width"])),
               activation(cfg["activation"]), nn.Linear(int(cfg["width"]), 10)]
    return nn.Sequential(*layers)


def _inputs(x: np.ndarray, cfg: dict[str, Any], conv: bool) -> torch.Tensor:
    if cfg["input_scale"] == "unit":
        x = x / 16.0
    elif cfg["input_scale"] == "standard":
        mean, std = _split()[0].mean(0), _split()[0].std(0) + 1e-6   # train statistics
        x = (x - mean) / std
    t = torch.as_tensor(x, dtype=torch.float32)
    return t.view(-1, 1, 8, 8) if conv else t                          # (N, 1, 8, 8) or (N, 64)


def train_digits(kind: str, cfg: dict[str, Any], seed: int) -> RunResult:
    """Train ``kind`` (``mlp`` or ``cnn``) for ``cfg["epochs"]`` epochs; metric per the module doc."""
    conv = kind == "cnn"
    x_train, x_test, y_train, y_test = _split()
    keep, labels = training_rows(y_train, cfg, seed, classes=10)
    xs, ys = _inputs(x_train[keep], cfg, conv), torch.as_tensor(labels)
    xt, yt = _inputs(x_test, cfg, conv), torch.as_tensor(y_test)

    def shift(xb: torch.Tensor, order_rng: torch.Generator) -> torch.Tensor:
        offsets = torch.randint(-1, 2, (2,), generator=order_rng).tolist()    # one-pixel shifts of the batch
        return torch.roll(xb, shifts=offsets, dims=(2, 3))

    build = (lambda: _cnn(cfg)) if conv else (lambda: mlp(64, 10, cfg, flatten=True))
    curve, logits = fit_classifier(build, xs, ys, xt, cfg, seed,
                                   augment=shift if cfg["augment_shift"] and conv else None)
    if not conv:
        return test_loss(curve, logits, yt)
    if logits is None:
        return RunResult(metric=math.nan, curve=curve, crashed=True)
    with one_thread():
        error = float((logits.argmax(1) != yt).float().mean())             # logits: (N_test, 10)
    return RunResult(metric=error, curve=curve, crashed=False)
