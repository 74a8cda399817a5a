"""The torch recipe the small neural research environments share: an MLP, its initialisation, the training loop.

``fit_classifier`` seeds torch (``seed * 6151 + 5`` plus ``init_seed_offset``), builds the model,
trains it with the config's optimizer, schedule, gradient clipping and label smoothing on
minibatches drawn in an order seeded by ``seed * 7907 + 13`` plus ``data_seed_offset``, and returns
the logged training losses and the test logits (``None`` when the training loss stopped being
finite: the run crashed). Everything runs on one intra-op thread.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .charlm import lr_factor, make_optimizer
from .runs import RunResult, one_thread

__all__ = ["activation", "mlp", "init_weights", "training_rows", "fit_classifier", "test_loss", "NET_KNOBS"]

# what every neural environment's baseline carries: optimisation, regularisation, placebos
NET_KNOBS: dict[str, Any] = {
    "optimizer": "adam", "lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.0,
    "schedule": "constant", "warmup_frac": 0.0, "grad_clip": 0.0, "label_smoothing": 0.0, "dropout": 0.0,
    "train_fraction": 1.0, "label_noise": 0.0,
    "log_every": 1, "run_name": "baseline", "data_seed_offset": 0, "init_seed_offset": 0,
}


def activation(name: str) -> nn.Module:
    return {"relu": nn.ReLU(), "tanh": nn.Tanh(), "gelu": nn.GELU(), "sigmoid": nn.Sigmoid()}[name]


def mlp(width_in: int, classes: int, cfg: dict[str, Any], *, flatten: bool = False) -> nn.Module:
    """``depth`` hidden layers of ``width`` (batch norm optional), activation, dropout, then a linear head."""
    layers: list[nn.Module] = [nn.Flatten()] if flatten else []
    for _ in range(int(cfg["depth"])):
        layers.append(nn.Linear(width_in, int(cfg["width"])))
        if cfg["batch_norm"]:
            layers.append(nn.BatchNorm1d(int(cfg["width"])))
        layers += [activation(cfg["activation"]), nn.Dropout(float(cfg["dropout"]))]
        width_in = int(cfg["width"])
    layers.append(nn.Linear(width_in, classes))
    return nn.Sequential(*layers)


def init_weights(model: nn.Module, cfg: dict[str, Any]) -> None:
    """Re-initialise linear and convolution weights per ``init`` and scale them by ``init_gain``."""
    init = cfg.get("init", "default")
    if init == "default" and float(cfg["init_gain"]) == 1.0:
        return
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            if init == "xavier":
                nn.init.xavier_uniform_(module.weight)
            elif init == "kaiming":
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
            elif init == "orthogonal":
                nn.init.orthogonal_(module.weight.view(module.weight.shape[0], -1))
            with torch.no_grad():
                module.weight.mul_(float(cfg["init_gain"]))


def training_rows(labels: np.ndarray, cfg: dict[str, Any], seed: int, classes: int,
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(row indices, labels) of the training rows: a random ``train_fraction`` of them, ``label_noise`` relabelled.

    A relabelled row gets a random class (two classes: the other one), drawn from the same seeded stream.
    """
    rng = np.random.default_rng(seed * 7907 + 11 + int(cfg["data_seed_offset"]))
    keep = rng.permutation(len(labels))[: int(len(labels) * float(cfg["train_fraction"]))]
    kept = labels[keep].copy()
    if float(cfg["label_noise"]) > 0:
        flip = rng.random(len(kept)) < float(cfg["label_noise"])
        kept[flip] = 1 - kept[flip] if classes == 2 else rng.integers(0, classes, int(flip.sum()))
    return keep, kept


def test_loss(curve: list[float], logits: torch.Tensor | None, targets: torch.Tensor) -> RunResult:
    """The test cross-entropy of ``logits`` as a run's result (a crash where training or the loss diverged)."""
    if logits is None:
        return RunResult(metric=math.nan, curve=curve, crashed=True)
    with one_thread():
        loss = float(F.cross_entropy(logits, targets))                    # logits: (N_test, classes)
    if not math.isfinite(loss):
        return RunResult(metric=math.nan, curve=curve, crashed=True)
    return RunResult(metric=loss, curve=curve, crashed=False)


def fit_classifier(build: Callable[[], nn.Module], xs: torch.Tensor, ys: torch.Tensor, xt: torch.Tensor,
                   cfg: dict[str, Any], seed: int,
                   augment: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None = None,
                   ) -> tuple[list[float], torch.Tensor | None]:
    """Train ``build()`` on (``xs``, ``ys``) for ``cfg["epochs"]`` epochs; (logged losses, test logits or None)."""
    batch, epochs = int(cfg["batch_size"]), int(cfg["epochs"])
    steps = epochs * math.ceil(len(xs) / batch)
    with one_thread():
        torch.manual_seed(seed * 6151 + 5 + int(cfg["init_seed_offset"]))
        model = build()
        init_weights(model, cfg)
        opt = make_optimizer(model.parameters(), cfg)
        order_rng = torch.Generator().manual_seed(seed * 7907 + 13 + int(cfg["data_seed_offset"]))
        curve: list[float] = []
        step = 0
        for epoch in range(epochs):
            model.train()
            order = torch.randperm(len(xs), generator=order_rng)
            for i in range(0, len(xs), batch):
                idx = order[i:i + batch]
                if len(idx) < 2 and cfg.get("batch_norm", False):
                    continue                                    # batch norm needs two rows
                xb = xs[idx] if augment is None else augment(xs[idx], order_rng)
                for group in opt.param_groups:
                    group["lr"] = float(cfg["lr"]) * lr_factor(cfg["schedule"], step, steps, float(cfg["warmup_frac"]))
                loss = F.cross_entropy(model(xb), ys[idx], label_smoothing=float(cfg["label_smoothing"]))
                if not torch.isfinite(loss):
                    return curve, None
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
            return curve, model(xt)
