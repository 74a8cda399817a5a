"""Pretraining of the source FNOs and the fine-tuning trials that HyperparamSearch-v0 runs.

A trial copies the model pretrained on the adaptation's source equation, fine-tunes it on the
target's training split with the proposed learning rate, optimizer and loss (one-step teacher
forcing on sliding windows of ``input_steps`` states), and scores a full autoregressive rollout
from the first ``input_steps`` states by nRMSE on the validation split. The test split is read
only when asked (``TrialRunner.test``): an episode asks once, for its best-validation config.

Everything is cached by a hash of its inputs, on disk (``$RSIGYM_CACHE/hpo/{models,trials}``) and
in-process: a replay or a baseline that asks for a trial again reads it and never trains.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import io
import json
import math
import numbers
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal

import numpy as np
import torch
import torch.nn.functional as F

from rsigym.cache import atomic_write_bytes, cache_dir, cache_key

from .adaptations import ADAPTATIONS, Adaptation
from .data import DATA_VERSION, Preset, dataset, get_preset
from .metric import NRMSE_CAP
from .fno import FNO1d, rollout
from .pde import PDE
from .space import LOSSES, OPTIMIZERS

__all__ = ["MODEL_VERSION", "TRIAL_VERSION", "NRMSE_CAP", "nrmse", "TrialConfig", "TrialResult",
           "source_model", "evaluate", "fine_tune", "TrialRunner"]

MODEL_VERSION = "1"   # bump when the FNO or its pretraining changes: old checkpoints become misses
TRIAL_VERSION = "3"   # bump when fine-tuning or evaluation changes: old trial results become misses
PRETRAIN_LEARNING_RATE = 1e-3
HUBER_DELTA = 1e-3    # inside the one-step RMS errors of fine-tuned models (3e-4 .. 7e-3 at `default`),
                      # so Huber is neither MSE nor L1 in disguise
ADAMW_WEIGHT_DECAY = 1e-2
SGD_MOMENTUM = 0.9
TRAIN_THREADS = 1     # intra-op threads while training and scoring (see _one_thread)
NRMSE_FLOOR = 0.01    # trial scores divide by at least 1% of the initial state's norm (see _score)

_SOURCE_MODELS: dict[str, tuple[dict[str, torch.Tensor], str]] = {}  # in-process checkpoint cache


def nrmse(pred: np.ndarray | torch.Tensor, true: np.ndarray | torch.Tensor,
          floor: float | np.ndarray | torch.Tensor = 0.0) -> float:
    """PDEBench's normalised RMSE: ``||pred - true||_2 / ||true||_2`` over x, averaged over the
    remaining axes (samples and time steps). The caller drops the given input steps.

    Args:
        pred: ``(..., X)`` predictions.
        true: ``(..., X)`` reference values of the same shape.
        floor: a lower bound on the denominator, broadcast against ``true``'s norms ``(...)``;
            0 (the default) is PDEBench's definition, undefined where a state is exactly zero.
    """
    pred_t, true_t = torch.as_tensor(pred, dtype=torch.float64), torch.as_tensor(true, dtype=torch.float64)
    if pred_t.shape != true_t.shape:
        raise ValueError(f"nrmse needs equal shapes, got {tuple(pred_t.shape)} and {tuple(true_t.shape)}")
    error = torch.linalg.vector_norm(pred_t - true_t, dim=-1)             # (...,) per sample and step
    norm = torch.maximum(torch.linalg.vector_norm(true_t, dim=-1), torch.as_tensor(floor, dtype=torch.float64))
    return float((error / norm).mean())


@dataclass(frozen=True)
class TrialConfig:
    """One fine-tuning configuration (epochs and batch size come from the preset).

    Attributes:
        learning_rate: the optimizer's constant learning rate, finite and > 0.
        optimizer: ``adam``; ``adamw`` (weight decay 0.01); ``sgd_momentum`` (momentum 0.9);
            ``rmsprop`` (PyTorch defaults).
        loss: ``mse``; ``l1``; ``relative_l2`` (per-sample ``||pred - true|| / ||true||`` over x);
            ``huber`` (delta ``HUBER_DELTA``).
    """

    learning_rate: float
    optimizer: Literal["adam", "adamw", "sgd_momentum", "rmsprop"]
    loss: Literal["mse", "l1", "relative_l2", "huber"]

    def __post_init__(self) -> None:
        lr = self.learning_rate
        if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not math.isfinite(lr) or lr <= 0:
            raise ValueError(f"learning_rate must be a finite number > 0, got {lr!r}")
        object.__setattr__(self, "learning_rate", float(lr))  # numpy scalars hash and print as floats
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {self.optimizer!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {self.loss!r}")

    @classmethod
    def coerce(cls, config: Any) -> TrialConfig:
        """A ``TrialConfig`` from itself, the env's ``space.Config`` or a dict with the three fields."""
        if isinstance(config, cls):
            return config
        if isinstance(config, dict):
            return cls(config.get("learning_rate"), config.get("optimizer"), config.get("loss"))  # type: ignore[arg-type]
        return cls(config.learning_rate, config.optimizer, config.loss)

    def key(self) -> dict[str, Any]:
        # 12 significant digits: a learning rate that went through decimal text hashes the same.
        return {"learning_rate": float(f"{self.learning_rate:.12g}"), "optimizer": self.optimizer, "loss": self.loss}


@dataclass(frozen=True)
class TrialResult:
    """The outcome of one fine-tuning trial.

    Attributes:
        val_nrmse: validation nRMSE of the rollout, capped at ``NRMSE_CAP`` (also when diverged).
        train_loss_final: mean training loss of the last epoch (NaN when training diverged).
        checkpoint_sha256: the source checkpoint that was fine-tuned.
        cached: whether the result was read from a cache instead of trained.
        diverged: whether a non-finite loss ended training early.
        state: the fine-tuned parameters (None when diverged or read from the cache); not part
            of equality.
    """

    val_nrmse: float
    train_loss_final: float
    checkpoint_sha256: str
    cached: bool = False
    diverged: bool = False
    state: dict[str, torch.Tensor] | None = field(default=None, compare=False, repr=False)


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    # Intra-op threads barely help an FNO this small and stall badly when another process holds
    # the other cores (benchmarks/hpo_trial.py measures both); one thread also leaves the cores
    # to parallel episodes. Process-wide, like every torch thread setting.
    previous = torch.get_num_threads()
    torch.set_num_threads(TRAIN_THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _model(preset: Preset, generator: torch.Generator | None = None) -> FNO1d:
    return FNO1d(preset.modes, preset.width, preset.layers, preset.input_steps, generator=generator)


def _loss(name: str, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if name == "mse":
        return F.mse_loss(pred, target)
    if name == "l1":
        return F.l1_loss(pred, target)
    if name == "huber":
        return F.huber_loss(pred, target, delta=HUBER_DELTA)
    # relative_l2; the floor keeps a fully decayed (all-zero) state from dividing by zero
    norms = torch.linalg.vector_norm(target, dim=-1).clamp_min(1e-6)       # (B,)
    return (torch.linalg.vector_norm(pred - target, dim=-1) / norms).mean()


def _optimizer(name: str, params: Any, lr: float) -> torch.optim.Optimizer:
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=ADAMW_WEIGHT_DECAY)
    if name == "sgd_momentum":
        return torch.optim.SGD(params, lr=lr, momentum=SGD_MOMENTUM)
    return torch.optim.RMSprop(params, lr=lr)


def _fit(model: FNO1d, train: np.ndarray, epochs: int, batch_size: int, optimizer: torch.optim.Optimizer,
         loss_name: str, generator: torch.Generator) -> tuple[float, bool]:
    """One-step teacher forcing on every window of ``input_steps`` states; (last epoch's loss, diverged)."""
    u = torch.tensor(train)                                                # (N, T, X)
    steps = model.input_steps
    n, times = u.shape[:2]
    per_sample = times - steps                                             # windows per trajectory
    offsets = torch.arange(steps + 1)                                      # history + target
    model.train()
    epoch_loss = float("nan")
    for _ in range(epochs):
        order = torch.randperm(n * per_sample, generator=generator)
        total, count = 0.0, 0
        for start in range(0, order.numel(), batch_size):
            index = order[start:start + batch_size]
            sample, first = index // per_sample, index % per_sample
            window = u[sample[:, None], first[:, None] + offsets]          # (B, S+1, X)
            loss = _loss(loss_name, model(window[:, :steps]), window[:, steps])
            if not torch.isfinite(loss):
                return float("nan"), True
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total, count = total + loss.item() * index.numel(), count + index.numel()
        epoch_loss = total / count
    return epoch_loss, False


def _score(model: FNO1d, split: np.ndarray) -> float:
    """Rollout nRMSE from the first ``input_steps`` states, capped so a blown-up rollout stays finite.

    The denominator is floored at ``NRMSE_FLOOR`` times the norm of the sample's initial state:
    viscous Burgers (nu >= 0.1) decays zero-mean profiles to round-off within the horizon, where
    PDEBench's per-step ratio divides by ~0 and every model would score the cap.
    """
    u = torch.tensor(split)                                                # (N, T, X)
    pred = rollout(model, u, model.input_steps)                            # (N, T-S, X)
    floor = NRMSE_FLOOR * torch.linalg.vector_norm(u[:, :1].double(), dim=-1)  # (N, 1)
    value = nrmse(pred, u[:, model.input_steps:], floor)
    return min(value, NRMSE_CAP) if math.isfinite(value) else NRMSE_CAP


def _model_fields(preset: Preset) -> dict[str, Any]:
    # Everything that shapes the data, the network or the pretraining; not the fine-tuning epochs.
    return {k: v for k, v in dataclasses.asdict(preset).items() if k not in ("name", "epochs")}


def source_model(source: PDE, preset: str | Preset, seed: int = 0) -> tuple[dict[str, torch.Tensor], str]:
    """The FNO pretrained on ``source``, trained once and then read from the caches.

    Pretraining: Adam at 1e-3 for ``preset.pretrain_epochs`` epochs of one-step teacher forcing on
    the source's training split of dataset seed ``seed``; parameters and shuffling drawn from ``seed``.

    Returns:
        ``(state_dict, sha256)``: a private copy of the parameters and the sha256 of the saved
        checkpoint bytes, which identifies the checkpoint in trial keys and records.
    """
    preset = get_preset(preset)
    key = cache_key("hpo-source", source.key, _model_fields(preset), int(seed), MODEL_VERSION, DATA_VERSION)
    if key not in _SOURCE_MODELS:
        path = cache_dir("hpo", "models") / f"{key}.pt"
        # A lock, so parallel episodes wait for one pretraining instead of each running their own.
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not path.exists():
                atomic_write_bytes(path, _pretrain(source, preset, int(seed)))
        data = path.read_bytes()
        state = torch.load(io.BytesIO(data), weights_only=True)
        _SOURCE_MODELS[key] = (state, hashlib.sha256(data).hexdigest())
    state, sha = _SOURCE_MODELS[key]
    return {name: tensor.clone() for name, tensor in state.items()}, sha


def _pretrain(source: PDE, preset: Preset, seed: int) -> bytes:
    splits = dataset(source, preset, seed)
    with _one_thread():
        generator = torch.Generator().manual_seed(seed)
        model = _model(preset, generator)
        optimizer = torch.optim.Adam(model.parameters(), lr=PRETRAIN_LEARNING_RATE)
        _fit(model, splits.train, preset.pretrain_epochs, preset.batch_size, optimizer, "mse", generator)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()


def evaluate(state: dict[str, torch.Tensor], pde: PDE, preset: str | Preset, seed: int,
             splits: tuple[str, ...] = ("val", "test")) -> tuple[float, ...]:
    """Rollout nRMSE of the parameters ``state`` on ``pde``'s dataset ``seed``, one per split named."""
    preset = get_preset(preset)
    data = dataset(pde, preset, int(seed))
    with _one_thread():
        model = _model(preset)
        model.load_state_dict(state)
        return tuple(_score(model, getattr(data, split)) for split in splits)


def _adaptation(task: str | Adaptation) -> Adaptation:
    if isinstance(task, Adaptation):
        return task
    if task not in ADAPTATIONS:
        raise ValueError(f"unknown adaptation {task!r}; known: {', '.join(ADAPTATIONS)}")
    return ADAPTATIONS[task]


def fine_tune(task: str | Adaptation, seed: int, config: Any, preset: str | Preset) -> TrialResult:
    """Run one trial, uncached (``TrialRunner.run`` is the cached entry point): train, score validation.

    The test split is not touched; ``evaluate(result.state, ..., splits=("test",))`` scores it.

    Args:
        task: the adaptation (or its name, the task id).
        seed: the target dataset's seed; with the config it also seeds the shuffling.
        config: a ``TrialConfig`` (or anything ``TrialConfig.coerce`` accepts).
        preset: data and model sizes, epochs and batch size.
    """
    adaptation, config, preset = _adaptation(task), TrialConfig.coerce(config), get_preset(preset)
    state, sha = source_model(adaptation.source, preset)
    splits = dataset(adaptation.target, preset, int(seed))
    with _one_thread():
        model = _model(preset)
        model.load_state_dict(state)
        optimizer = _optimizer(config.optimizer, model.parameters(), config.learning_rate)
        shuffle = torch.Generator().manual_seed(int(cache_key("shuffle", int(seed), config.key()), 16) % 2**63)
        train_loss, diverged = _fit(model, splits.train, preset.epochs, preset.batch_size, optimizer,
                                    config.loss, shuffle)
        if diverged:
            return TrialResult(NRMSE_CAP, float("nan"), sha, diverged=True)
        return TrialResult(_score(model, splits.val), train_loss, sha, state=model.state_dict())


class TrialRunner:
    """Cached fine-tuning trials at one preset.

    Counters: ``hits`` and ``misses`` of the caches (trials, test scores and zero-shot scores),
    ``train_calls`` fine-tunings actually run, so a replay can prove it trained nothing, and
    ``test_calls`` test-set scorings actually run.

    The fine-tuned parameters of the last ``keep_states`` trials stay in memory, so the test
    score of an episode's best configuration needs no retraining; after a restart it retrains
    that one configuration (training is deterministic).

    Args:
        preset: a preset name (``tiny``, ``default``, ``paper``) or a ``Preset``.
    """

    def __init__(self, preset: str | Preset = "default", keep_states: int = 32) -> None:
        self.preset = get_preset(preset)
        self.hits = self.misses = self.train_calls = self.test_calls = 0
        self.keep_states = int(keep_states)
        self._memory: dict[str, dict[str, Any]] = {}
        self._states: OrderedDict[str, dict[str, torch.Tensor]] = OrderedDict()

    def _trial_key(self, task_id: str, seed: int, config: Any) -> tuple[Adaptation, TrialConfig, str]:
        adaptation, config = _adaptation(task_id), TrialConfig.coerce(config)
        _, sha = source_model(adaptation.source, self.preset)
        key = cache_key("hpo-trial", adaptation.name, int(seed), config.key(), dataclasses.asdict(self.preset),
                        sha, TRIAL_VERSION, DATA_VERSION)
        return adaptation, config, key

    def run(self, task_id: str, seed: int, config: Any) -> TrialResult:
        """Fine-tune for ``task_id`` with ``config`` on dataset seed ``seed`` (cached)."""
        adaptation, config, key = self._trial_key(task_id, seed, config)
        entry = self._lookup(key)
        if entry is None:
            return self._train_and_store(key, adaptation, seed, config)
        loss = entry["train_loss_final"]
        return TrialResult(entry["val_nrmse"], float("nan") if loss is None else loss,
                           entry["checkpoint_sha256"], cached=True, diverged=entry["diverged"])

    def test(self, task_id: str, seed: int, config: Any) -> float:
        """Test nRMSE of the trial ``run`` would return (cached; a diverged trial scores the cap)."""
        adaptation, config, key = self._trial_key(task_id, seed, config)
        entry = self._lookup(key)
        if entry is None:
            self._train_and_store(key, adaptation, seed, config)
            entry = self._memory[key]
        if entry.get("test_nrmse") is None:
            if entry["diverged"]:
                value = NRMSE_CAP
            else:
                state = self._states.get(key)
                if state is None:  # trained in another process: train again (deterministic)
                    state = self._train(key, adaptation, seed, config).state
                assert state is not None
                self.test_calls += 1
                (value,) = evaluate(state, adaptation.target, self.preset, seed, splits=("test",))
            entry = {**entry, "test_nrmse": value}
            self._store(key, entry)
        return float(entry["test_nrmse"])

    def _train_and_store(self, key: str, adaptation: Adaptation, seed: int,
                         config: TrialConfig) -> TrialResult:
        result = self._train(key, adaptation, seed, config)
        self._store(key, {"val_nrmse": result.val_nrmse, "diverged": result.diverged,
                          "train_loss_final": None if result.diverged else result.train_loss_final,
                          "checkpoint_sha256": result.checkpoint_sha256})
        return result

    def _train(self, key: str, adaptation: Adaptation, seed: int, config: TrialConfig) -> TrialResult:
        self.train_calls += 1
        result = fine_tune(adaptation, seed, config, self.preset)
        if result.state is not None and self.keep_states > 0:
            self._states[key] = result.state
            self._states.move_to_end(key)
            while len(self._states) > self.keep_states:
                self._states.popitem(last=False)
        return result

    def zero_shot(self, task_id: str, seed: int) -> tuple[float, float]:
        """(validation, test) nRMSE of the source model on the target, without fine-tuning (cached)."""
        adaptation = _adaptation(task_id)
        state, sha = source_model(adaptation.source, self.preset)
        key = cache_key("hpo-zero-shot", adaptation.name, int(seed), dataclasses.asdict(self.preset), sha,
                        TRIAL_VERSION, DATA_VERSION)
        entry = self._lookup(key)
        if entry is None:
            val, test = evaluate(state, adaptation.target, self.preset, seed)
            entry = {"val_nrmse": val, "test_nrmse": test}
            self._store(key, entry)
        return entry["val_nrmse"], entry["test_nrmse"]

    def _lookup(self, key: str) -> dict[str, Any] | None:
        entry = self._memory.get(key)
        path = cache_dir("hpo", "trials") / f"{key}.json"
        if entry is None and path.exists():
            entry = self._memory[key] = json.loads(path.read_text())
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def _store(self, key: str, entry: dict[str, Any]) -> None:
        self._memory[key] = entry
        atomic_write_bytes(cache_dir("hpo", "trials") / f"{key}.json", json.dumps(entry, sort_keys=True).encode())
