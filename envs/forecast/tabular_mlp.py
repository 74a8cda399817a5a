"""A small torch MLP on scikit-learn's breast cancer data (``bc-mlp``): the neural twin of ``tabular-bc``.

The split is fixed (half train, half test, stratified, ``random_state=0``; features standardised
with the training half's statistics); a seed sets the initialisation and the minibatch order.
The metric is the test cross-entropy (a loss); a non-finite training loss is a crash.
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

__all__ = ["BC_MLP_BASELINE", "train_bc_mlp"]

BC_MLP_BASELINE: dict[str, Any] = {
    "optimizer": "adam", "lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.0,
    "schedule": "constant", "warmup_frac": 0.0, "grad_clip": 0.0, "batch_size": 32, "epochs": 10,
    "activation": "relu", "init_gain": 1.0, "width": 32, "depth": 1,
    "dropout": 0.0, "label_smoothing": 0.0, "batch_norm": False,
    "train_fraction": 1.0, "input_scale": "standard", "label_noise": 0.0,
    "log_every": 1, "run_name": "baseline", "data_seed_offset": 0, "init_seed_offset": 0,
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


def _mlp(cfg: dict[str, Any]) -> nn.Module:
    activation = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "sigmoid": nn.Sigmoid}[cfg["activation"]]
    layers: list[nn.Module] = []
    width_in = 30
    for _ in range(int(cfg["depth"])):
        layers.append(nn.Linear(width_in, int(cfg["width"])))
        if cfg["batch_norm"]:
            layers.append(nn.BatchNorm1d(int(cfg["width"])))
        layers += [activation(), nn.Dropout(float(cfg["dropout"]))]
        width_in = int(cfg["width"])
    layers.append(nn.Linear(width_in, 2))
    model = nn.Sequential(*layers)
    if float(cfg["init_gain"]) != 1.0:
        with torch.no_grad():
            for module in model.modules():
                if isinstance(module, nn.Linear):
                    module.weight.mul_(float(cfg["init_gain"]))
    return model


def train_bc_mlp(cfg: dict[str, Any], seed: int) -> RunResult:
    """Train for ``cfg["epochs"]`` epochs; the metric is the test cross-entropy in nats."""
    x_train, x_test, y_train, y_test = _split()
    rng = np.random.default_rng(seed * 7907 + 11 + int(cfg["data_seed_offset"]))
    keep = rng.permutation(len(x_train))[: int(len(x_train) * float(cfg["train_fraction"]))]
    labels = y_train[keep].copy()
    if float(cfg["label_noise"]) > 0:
        flip = rng.random(len(labels)) < float(cfg["label_noise"])
        labels[flip] = 1 - labels[flip]
    xs, ys = _inputs(x_train[keep], cfg["input_scale"]), torch.as_tensor(labels)
    xt, yt = _inputs(x_test, cfg["input_scale"]), torch.as_tensor(y_test)
    batch, epochs = int(cfg["batch_size"]), int(cfg["epochs"])
    steps = epochs * math.ceil(len(xs) / batch)
    with one_thread():
        torch.manual_seed(seed * 6151 + 5 + int(cfg["init_seed_offset"]))
        model = _mlp(cfg)
        opt = make_optimizer(model.parameters(), cfg)
        order_rng = torch.Generator().manual_seed(seed * 7907 + 13 + int(cfg["data_seed_offset"]))
        curve: list[float] = []
        step = 0
        for epoch in range(epochs):
            model.train()
            order = torch.randperm(len(xs), generator=order_rng)
            for i in range(0, len(xs), batch):
                idx = order[i:i + batch]
                if len(idx) < 2 and cfg["batch_norm"]:
                    continue                                    # batch norm needs two rows
                for group in opt.param_groups:
                    group["lr"] = float(cfg["lr"]) * lr_factor(cfg["schedule"], step, steps, float(cfg["warmup_frac"]))
                loss = F.cross_entropy(model(xs[idx]), ys[idx], label_smoothing=float(cfg["label_smoothing"]))
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
            test_loss = float(F.cross_entropy(model(xt), yt))
    if not math.isfinite(test_loss):
        return RunResult(metric=math.nan, curve=curve, crashed=True)
    return RunResult(metric=test_loss, curve=curve, crashed=False)
