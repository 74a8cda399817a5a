"""A 2-layer character transformer trained for a fixed number of tokens on one CPU thread.

Used by the research environments ``charlm-pydoc`` (CPython's ``pydoc_data.topics`` text) and
``charlm-stdlib`` (CPython source text), both shipped gzip-compressed in ``data/`` with the
sha256 of their uncompressed bytes in ``data/text_provenance.json``.

The metric is the validation loss in nats per character on fixed windows of the last 10% of the
text (loss type: lower is better). A run whose loss turns non-finite is a crash.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import math
from importlib import resources
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .runs import RunResult, one_thread

__all__ = ["CHARLM_BASELINE", "VOCAB_SIZE", "load_text", "train_charlm"]

# printable ASCII, tab and newline; anything else becomes the last id
_ALPHABET = "\t\n" + "".join(chr(c) for c in range(32, 127))
VOCAB_SIZE = len(_ALPHABET) + 1
_LOOKUP = np.full(256, VOCAB_SIZE - 1, dtype=np.int64)
for _i, _ch in enumerate(_ALPHABET):
    _LOOKUP[ord(_ch)] = _i

CHARLM_BASELINE: dict[str, Any] = {
    "optimizer": "adamw", "lr": 3e-3, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.0,
    "schedule": "constant", "warmup_frac": 0.0, "grad_clip": 1.0,
    "batch_size": 16, "context": 32, "tokens": 16 * 32 * 60,       # 60 steps at the baseline shape
    "d_model": 48, "n_layers": 2, "n_heads": 4, "mlp_ratio": 4, "activation": "gelu",
    "norm": "pre", "tie_embeddings": False, "init_std": 0.02,
    "dropout": 0.0, "label_smoothing": 0.0,
    "train_fraction": 1.0, "lowercase": False,
    "log_every": 10, "run_name": "baseline", "data_seed_offset": 0, "init_seed_offset": 0,
}
EVAL_WINDOWS = 64


@functools.lru_cache(maxsize=4)
def load_text(name: str) -> str:
    """The shipped text ``name`` (``pydoc_topics`` or ``stdlib_source``), checked against its sha256."""
    folder = resources.files("rsigym.envs.forecast").joinpath("data")
    raw = gzip.decompress(folder.joinpath(f"{name}.txt.gz").read_bytes())
    expected = json.loads(folder.joinpath("text_provenance.json").read_text())[f"{name}.txt.gz"]["sha256_uncompressed"]
    if hashlib.sha256(raw).hexdigest() != expected:
        raise RuntimeError(f"shipped text {name} does not match its sha256 {expected[:12]}...")
    return raw.decode()


@functools.lru_cache(maxsize=8)
def _encoded(name: str, lowercase: bool) -> tuple[torch.Tensor, torch.Tensor]:
    text = load_text(name)
    if lowercase:
        text = text.lower()
    ids = torch.from_numpy(_LOOKUP[np.frombuffer(text.encode("ascii", "replace"), dtype=np.uint8)])
    split = int(len(ids) * 0.9)
    return ids[:split], ids[split:]


class _Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, mlp_ratio: int, activation: str, norm: str, dropout: float):
        super().__init__()
        self.n_heads, self.norm, self.dropout = n_heads, norm, dropout
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.fc1 = nn.Linear(d_model, mlp_ratio * d_model)
        self.fc2 = nn.Linear(mlp_ratio * d_model, d_model)
        self.act = {"gelu": nn.GELU(), "relu": nn.ReLU(), "tanh": nn.Tanh()}[activation]

    def _attend(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))  # (B, H, T, C/H)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return F.dropout(self.proj(y.transpose(1, 2).reshape(B, T, C)), self.dropout, self.training)

    def _mlp(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(self.fc2(self.act(self.fc1(x))), self.dropout, self.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.norm == "post":
            x = self.ln1(x + self._attend(x))
            return self.ln2(x + self._mlp(x))
        x = x + self._attend(self.ln1(x))
        return x + self._mlp(self.ln2(x))


class CharTransformer(nn.Module):
    """Token and learned position embeddings, ``n_layers`` blocks, a final LayerNorm and a head."""

    def __init__(self, cfg: dict[str, Any]):
        super().__init__()
        d = int(cfg["d_model"])
        self.tok = nn.Embedding(VOCAB_SIZE, d)
        self.pos = nn.Embedding(int(cfg["context"]), d)
        self.blocks = nn.ModuleList(_Block(d, int(cfg["n_heads"]), int(cfg["mlp_ratio"]), cfg["activation"],
                                           cfg["norm"], float(cfg["dropout"])) for _ in range(int(cfg["n_layers"])))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB_SIZE, bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, float(cfg["init_std"]))
                if isinstance(module, nn.Linear) and module.bias is not None:
                    nn.init.zeros_(module.bias)
        if cfg["tie_embeddings"]:
            self.head.weight = self.tok.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))          # (B, T, d)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))                          # (B, T, V)


def make_optimizer(params: Any, cfg: dict[str, Any]) -> torch.optim.Optimizer:
    """The optimizer named by ``cfg["optimizer"]`` with the config's learning rate and betas."""
    lr, wd = float(cfg["lr"]), float(cfg["weight_decay"])
    name = cfg["optimizer"]
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=(cfg["beta1"], cfg["beta2"]), weight_decay=wd)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, betas=(cfg["beta1"], cfg["beta2"]), weight_decay=wd)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=wd)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, weight_decay=wd)
    if name == "adagrad":
        return torch.optim.Adagrad(params, lr=lr, weight_decay=wd)
    raise ValueError(f"unknown optimizer {name!r}")


def lr_factor(schedule: str, step: int, steps: int, warmup_frac: float) -> float:
    """The multiplier on the base learning rate at ``step`` of ``steps`` (linear warmup first)."""
    warmup = int(round(warmup_frac * steps))
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    if schedule == "constant":
        return 1.0
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    if schedule == "linear":
        return 1.0 - progress
    if schedule == "step":
        return 1.0 if progress < 0.5 else 0.1
    raise ValueError(f"unknown schedule {schedule!r}")


def _eval_loss(model: CharTransformer, val: torch.Tensor, context: int) -> float:
    starts = torch.linspace(0, len(val) - context - 1, EVAL_WINDOWS).long()
    windows = torch.stack([val[s:s + context + 1] for s in starts.tolist()])   # (W, T+1)
    model.eval()
    with torch.no_grad():
        logits = model(windows[:, :-1])                                        # (W, T, V)
        loss = float(F.cross_entropy(logits.reshape(-1, VOCAB_SIZE), windows[:, 1:].reshape(-1)))
    model.train()
    return loss


def train_charlm(corpus: str, cfg: dict[str, Any], seed: int) -> RunResult:
    """Train on ``corpus`` for ``cfg["tokens"]`` tokens; the metric is validation nats per char."""
    train, val = _encoded(corpus, bool(cfg["lowercase"]))
    train = train[: int(len(train) * float(cfg["train_fraction"]))]
    batch, context = int(cfg["batch_size"]), int(cfg["context"])
    steps = max(1, int(cfg["tokens"]) // (batch * context))
    log_every = int(cfg["log_every"])
    with one_thread():
        torch.manual_seed(seed * 7919 + 17 + int(cfg["init_seed_offset"]))
        model = CharTransformer(cfg)
        opt = make_optimizer(model.parameters(), cfg)
        data_rng = torch.Generator().manual_seed(seed * 104729 + 3 + int(cfg["data_seed_offset"]))
        curve: list[float] = []
        for step in range(steps):
            for group in opt.param_groups:
                group["lr"] = float(cfg["lr"]) * lr_factor(cfg["schedule"], step, steps, float(cfg["warmup_frac"]))
            starts = torch.randint(0, len(train) - context - 1, (batch,), generator=data_rng)
            chunk = torch.stack([train[s:s + context + 1] for s in starts.tolist()])    # (B, T+1)
            logits = model(chunk[:, :-1])                                               # (B, T, V)
            loss = F.cross_entropy(logits.reshape(-1, VOCAB_SIZE), chunk[:, 1:].reshape(-1),
                                   label_smoothing=float(cfg["label_smoothing"]))
            if not torch.isfinite(loss):
                return RunResult(metric=math.nan, curve=curve, crashed=True)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if float(cfg["grad_clip"]) > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), float(cfg["grad_clip"]))
            opt.step()
            if (step + 1) % log_every == 0 or step + 1 == steps:
                curve.append(round(loss.item(), 4))
        metric = _eval_loss(model, val, context)
    if not math.isfinite(metric):
        return RunResult(metric=math.nan, curve=curve, crashed=True)
    return RunResult(metric=metric, curve=curve, crashed=False)
