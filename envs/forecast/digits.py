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

from .charlm import lr_factor, make_optimizer
from .runs import RunResult, one_thread

__all__ = ["DIGITS_MLP_BASELINE", "DIGITS_CNN_BASELINE", "train_digits"]

_COMMON: dict[str, Any] = {
    "optimizer": "adam", "lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.0,
    "schedule": "constant", "warmup_frac": 0.0, "grad_clip": 0.0,
    "batch_size": 64, "epochs": 6,
    "activation": "relu", "init": "default", "init_gain": 1.0,
    "dropout": 0.0, "label_smoothing": 0.0, "batch_norm": False,
    "train_fraction": 1.0, "input_scale": "unit", "augment_shift": False, "label_noise": 0.0,
    "log_every": 1, "run_name": "baseline", "data_seed_offset": 0, "init_seed_offset": 0,
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


def _activation(name: str) -> nn.Module:
    return {"relu": nn.ReLU(), "tanh": nn.Tanh(), "gelu": nn.GELU(), "sigmoid": nn.Sigmoid()}[name]


def _mlp(cfg: dict[str, Any]) -> nn.Module:
    layers: list[nn.Module] = [nn.Flatten()]
    width_in = 64
    for _ in range(int(cfg["depth"])):
        layers += [nn.Linear(width_in, int(cfg["width"]))]
        if cfg["batch_norm"]:
            layers.append(nn.BatchNorm1d(int(cfg["width"])))
        layers += [_activation(cfg["activation"]), nn.Dropout(float(cfg["dropout"]))]
        width_in = int(cfg["width"])
    layers.append(nn.Linear(width_in, 10))
    return nn.Sequential(*layers)


def _cnn(cfg: dict[str, Any]) -> nn.Module:
    channels, kernel = int(cfg["channels"]), int(cfg["kernel"])
    layers: list[nn.Module] = []
    c_in, side = 1, 8
    for i in range(int(cfg["conv_layers"])):
        c_out = channels * (2 ** i)
        layers += [nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2)]
        if cfg["batch_norm"]:
            layers.append(nn.BatchNorm2d(c_out))
        layers.append(_activation(cfg["activation"]))
        if cfg["pool"] != "none" and side >= 4:
            layers.append(nn.MaxPool2d(2) if cfg["pool"] == "max" else nn.AvgPool2d(2))
            side //= 2
        c_in = c_out
    layers += [nn.Flatten(), nn.Dropout(float(cfg["dropout"])), nn.Linear(c_in * side * side, int(cfg["width"])),
               _activation(cfg["activation"]), nn.Linear(int(cfg["width"]), 10)]
    return nn.Sequential(*layers)


def _init(model: nn.Module, cfg: dict[str, Any]) -> None:
    if cfg["init"] == "default" and float(cfg["init_gain"]) == 1.0:
        return
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            if cfg["init"] == "xavier":
                nn.init.xavier_uniform_(module.weight)
            elif cfg["init"] == "kaiming":
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
            elif cfg["init"] == "orthogonal":
                nn.init.orthogonal_(module.weight.view(module.weight.shape[0], -1))
            with torch.no_grad():
                module.weight.mul_(float(cfg["init_gain"]))


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
    rng = np.random.default_rng(seed * 7907 + 11 + int(cfg["data_seed_offset"]))
    keep = rng.permutation(len(x_train))[: int(len(x_train) * float(cfg["train_fraction"]))]
    labels = y_train[keep].copy()
    if float(cfg["label_noise"]) > 0:
        flip = rng.random(len(labels)) < float(cfg["label_noise"])
        labels[flip] = rng.integers(0, 10, int(flip.sum()))
    xs, ys = _inputs(x_train[keep], cfg, conv), torch.as_tensor(labels)
    xt, yt = _inputs(x_test, cfg, conv), torch.as_tensor(y_test)
    batch, epochs = int(cfg["batch_size"]), int(cfg["epochs"])
    steps = epochs * math.ceil(len(xs) / batch)
    with one_thread():
        torch.manual_seed(seed * 6151 + 5 + int(cfg["init_seed_offset"]))
        model = _cnn(cfg) if conv else _mlp(cfg)
        _init(model, cfg)
        opt = make_optimizer(model.parameters(), cfg)
        order_rng = torch.Generator().manual_seed(seed * 7907 + 13 + int(cfg["data_seed_offset"]))
        curve: list[float] = []
        step = 0
        for epoch in range(epochs):
            order = torch.randperm(len(xs), generator=order_rng)
            for i in range(0, len(xs), batch):
                idx = order[i:i + batch]
                xb = xs[idx]
                if cfg["augment_shift"] and conv:
                    shift = torch.randint(-1, 2, (2,), generator=order_rng).tolist()
                    xb = torch.roll(xb, shifts=shift, dims=(2, 3))
                for group in opt.param_groups:
                    group["lr"] = float(cfg["lr"]) * lr_factor(cfg["schedule"], step, steps, float(cfg["warmup_frac"]))
                loss = F.cross_entropy(model(xb), ys[idx], label_smoothing=float(cfg["label_smoothing"]))
                if not torch.isfinite(loss):
                    return RunResult(metric=math.nan, curve=curve, crashed=True)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if float(cfg["grad_clip"]) > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), float(cfg["grad_clip"]))
                opt.step()
                step += 1
            if (epoch + 1) % int(cfg["log_every"]) == 0 or epoch + 1 == epochs:
                curve.append(round(loss.item(), 4))
        model.eval()
        with torch.no_grad():
            logits = model(xt)                                          # (N_test, 10)
            test_loss = float(F.cross_entropy(logits, yt))
            error = float((logits.argmax(1) != yt).float().mean())
    metric = error if conv else test_loss
    if not math.isfinite(metric):
        return RunResult(metric=math.nan, curve=curve, crashed=True)
    return RunResult(metric=metric, curve=curve, crashed=False)
