"""A small recurrent classifier on generated sequences (``seq-gru``).

Each sequence is 16 steps of one of 3 processes, drawn once (``random_state`` fixed): an AR(1) with
coefficient 0.8, a noisy sine of random phase and period 6-10, and a random walk with small steps;
all three are rescaled to unit variance, so the class lives in the dynamics, not the level. 300
sequences train, 600 test. The model is a GRU (hidden 16, one layer) over the sequence whose last
hidden state feeds a linear head; a seed sets the initialisation and the minibatch order
(``nets.fit_classifier``). The metric is the test cross-entropy (a loss); a non-finite training
loss is a crash.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from .nets import NET_KNOBS, fit_classifier, test_loss, training_rows
from .runs import RunResult

__all__ = ["SEQ_GRU_BASELINE", "train_seq_rnn", "CLASSES"]

CLASSES = 3
LENGTH = 16
SEQ_GRU_BASELINE: dict[str, Any] = {
    **NET_KNOBS, "lr": 1e-2, "batch_size": 32, "epochs": 8, "cell": "gru", "hidden": 16, "layers": 1,
    "bidirectional": False, "readout": "last", "init_gain": 1.0, "input_scale": "standard",
}


@functools.lru_cache(maxsize=1)
def _split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(303)
    labels = rng.integers(0, CLASSES, 900)
    t = np.arange(LENGTH)
    rows = []
    for label in labels:
        noise = rng.normal(0.0, 1.0, LENGTH)
        if label == 0:                     # AR(1), coefficient 0.8
            x = np.zeros(LENGTH)
            for i in range(1, LENGTH):
                x[i] = 0.8 * x[i - 1] + noise[i]
        elif label == 1:                   # a sine of random phase and period, plus noise
            x = np.sin(2 * np.pi * t / rng.uniform(6, 10) + rng.uniform(0, 2 * np.pi)) + 0.6 * noise
        else:                              # a random walk
            x = np.cumsum(0.5 * noise)
        rows.append((x - x.mean()) / (x.std() + 1e-9) + rng.normal(0.0, 0.3))
    x_all = np.array(rows)                                                   # (N, T)
    return x_all[:300], x_all[300:], labels[:300], labels[300:]


class RecurrentClassifier(nn.Module):
    """A GRU, LSTM or plain RNN over (B, T, 1) whose last (or mean) hidden state feeds a linear head."""

    def __init__(self, cfg: dict[str, Any]):
        super().__init__()
        cell = {"gru": nn.GRU, "lstm": nn.LSTM, "rnn": nn.RNN}[cfg["cell"]]
        layers = int(cfg["layers"])
        self.rnn = cell(1, int(cfg["hidden"]), num_layers=layers, batch_first=True,
                        bidirectional=bool(cfg["bidirectional"]), dropout=float(cfg["dropout"]) if layers > 1 else 0.0)
        self.readout = cfg["readout"]
        self.drop = nn.Dropout(float(cfg["dropout"]))
        self.head = nn.Linear(int(cfg["hidden"]) * (2 if cfg["bidirectional"] else 1), CLASSES)
        if float(cfg["init_gain"]) != 1.0:
            with torch.no_grad():
                for name, weight in self.rnn.named_parameters():
                    if name.startswith("weight"):
                        weight.mul_(float(cfg["init_gain"]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        states, _ = self.rnn(x)                                               # (B, T, H or 2H)
        summary = states[:, -1] if self.readout == "last" else states.mean(1)  # (B, H or 2H)
        return self.head(self.drop(summary))                                  # (B, classes)


def _inputs(x: np.ndarray, scale: str) -> torch.Tensor:
    if scale == "raw":
        x = 3.0 * x + 2.0                  # the units the sequences would arrive in without scaling
    elif scale != "standard":
        raise ValueError(f"unknown input_scale {scale!r}")
    return torch.as_tensor(x, dtype=torch.float32).unsqueeze(-1)             # (N, T, 1)


def train_seq_rnn(cfg: dict[str, Any], seed: int) -> RunResult:
    """Train for ``cfg["epochs"]`` epochs; the metric is the test cross-entropy in nats."""
    x_train, x_test, y_train, y_test = _split()
    keep, labels = training_rows(y_train, cfg, seed, classes=CLASSES)
    xs, ys = _inputs(x_train[keep], cfg["input_scale"]), torch.as_tensor(labels)
    xt, yt = _inputs(x_test, cfg["input_scale"]), torch.as_tensor(y_test)
    # init_gain: the module scales the recurrent weights, nets.init_weights the linear head
    curve, logits = fit_classifier(lambda: RecurrentClassifier(cfg), xs, ys, xt, cfg, seed)
    return test_loss(curve, logits, yt)
