"""Seeded train/val/test trajectories of one PDE, sized by a preset, cached on disk and in memory.

A dataset is a function of ``(pde, data-relevant preset fields, seed, DATA_VERSION)``: train,
val and test draw their initial conditions from independent ``SeedSequence`` streams and are
stored as float32 cell averages on ``store_cells`` cells. The test stream does not depend on
``seed``: every seed of an adaptation is scored on the same fixed test set (the paper's fixed
1,000 test trajectories at the ``paper`` and ``default`` presets), so seeds vary training data,
validation data and shuffling only.

Burgers is solved on ``solve_cells`` cells (viscous term explicit or split, see
:func:`viscous_scheme`). Advection has an exact solution, the initial profile shifted by
``beta t``: its data are the cell averages of that shift (Gauss-Legendre quadrature on
``solve_cells`` cells, then coarsened), so the data carry no solver error, kinks and windows
included (``benchmarks/pde_solvers.py`` checks the solver against them).
"""

from __future__ import annotations

import hashlib
import io
import math
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from rsigym.cache import atomic_write_bytes, cache_dir, cache_key

from .pde import PDE, coarsen, draw_initial_conditions, solve

__all__ = ["DATA_VERSION", "FIXED_TEST_ENTROPY", "split_stream", "Preset", "PRESETS", "Splits", "get_preset", "dataset", "viscous_scheme"]

DATA_VERSION = "3"  # bump when the solver, the initial conditions or the file layout change
T_END = 2.0
# Samples are solved in chunks of about this many cells: the solver's temporaries then stay in
# the CPU cache (about 2.5x faster than one (N, X) batch), and the Burgers time step is the
# maximum over a chunk. The chunking changes the data in the last digits, so it is in the key.
_CHUNK_CELLS = 16384
_MEMO_SIZE = 8
# The test split's stream uses this in place of the seed: one fixed test set per target equation.
FIXED_TEST_ENTROPY = 20_240_717
_memo: OrderedDict[str, Splits] = OrderedDict()


@dataclass(frozen=True)
class Preset:
    """Sizes of one experiment: data, model and training.

    Attributes:
        name: the preset's name.
        solve_cells: grid the solver runs on.
        store_cells: stored resolution (the solution coarsened by cell averaging).
        n_times: saved time points on [0, 2], including t = 0.
        n_train: training trajectories.
        n_val: validation trajectories.
        n_test: test trajectories.
        input_steps: time steps the operator sees before predicting the next.
        width: FNO channel width.
        modes: Fourier modes kept per layer.
        layers: Fourier layers.
        epochs: fine-tuning epochs per trial.
        batch_size: training batch size.
        pretrain_epochs: epochs of pretraining on the source PDE.
    """

    name: str
    solve_cells: int
    store_cells: int
    n_times: int
    n_train: int
    n_val: int
    n_test: int
    input_steps: int = 10
    width: int = 32
    modes: int = 12
    layers: int = 3
    epochs: int = 5
    batch_size: int = 64
    pretrain_epochs: int = 30

    def __post_init__(self) -> None:
        if self.solve_cells % self.store_cells:
            raise ValueError(f"solve_cells={self.solve_cells} is not a multiple of store_cells={self.store_cells}")
        if self.n_times < 2 or self.input_steps >= self.n_times:
            raise ValueError(f"need 2 <= n_times and input_steps < n_times, got {self.n_times}, {self.input_steps}")

    def data_fields(self) -> dict[str, int]:
        """The fields that determine the data (the cache key); model and training sizes do not."""
        return {f: getattr(self, f) for f in ("solve_cells", "store_cells", "n_times", "n_train", "n_val", "n_test")}


PRESETS: dict[str, Preset] = {
    "paper": Preset("paper", solve_cells=1024, store_cells=256, n_times=41, n_train=750, n_val=350,
                    n_test=1000, width=64, modes=16, layers=4, epochs=20, batch_size=32, pretrain_epochs=100),
    "default": Preset("default", solve_cells=256, store_cells=64, n_times=41, n_train=750, n_val=350,
                      n_test=1000, width=32, modes=12, layers=3, epochs=2, batch_size=64, pretrain_epochs=30),
    "tiny": Preset("tiny", solve_cells=64, store_cells=32, n_times=21, n_train=48, n_val=16, n_test=16,
                   width=8, modes=4, layers=2, epochs=2, batch_size=16, pretrain_epochs=5),
}


@dataclass(frozen=True)
class Splits:
    """Trajectories of one PDE; arrays are read-only because the in-process memo shares them.

    Attributes:
        train: ``(n_train, n_times, store_cells)`` float32 cell averages.
        val: ``(n_val, n_times, store_cells)`` float32.
        test: ``(n_test, n_times, store_cells)`` float32.
        t: ``(n_times,)`` float64 save times on [0, 2].
    """

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    t: np.ndarray


def get_preset(name_or_preset: str | Preset) -> Preset:
    """The preset of that name (a ``Preset`` passes through).

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if isinstance(name_or_preset, Preset):
        return name_or_preset
    if name_or_preset not in PRESETS:
        raise ValueError(f"unknown preset {name_or_preset!r}; known presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[name_or_preset]


def dataset(pde: PDE, preset: Preset, seed: int) -> Splits:
    """Train/val/test trajectories of ``pde``, generated once per key and then read from the cache.

    Args:
        pde: the equation.
        preset: the sizes (only :meth:`Preset.data_fields` matter here).
        seed: a non-negative integer; each split has its own stream derived from it and the PDE.

    Returns:
        The splits, shared with later calls in this process (read-only arrays).
    """
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    key = cache_key("hpo-data", DATA_VERSION, _CHUNK_CELLS, pde.kind, float(pde.coefficient),
                    preset.data_fields(), int(seed))
    if key in _memo:
        _memo.move_to_end(key)
        return _memo[key]
    path = cache_dir("hpo", "data") / f"{key}.npz"
    splits = _load(path)
    if splits is None:
        splits = _generate(pde, preset, int(seed))
        buffer = io.BytesIO()
        np.savez(buffer, train=splits.train, val=splits.val, test=splits.test, t=splits.t)
        atomic_write_bytes(path, buffer.getvalue())
    _memo[key] = splits
    while len(_memo) > _MEMO_SIZE:
        _memo.popitem(last=False)
    return splits


def split_stream(pde: PDE, seed: int, split_index: int) -> np.random.Generator:
    """The generator of one split's initial conditions (0 train, 1 val, 2 test; test ignores ``seed``)."""
    # Stable across processes (unlike hash()), so the streams depend only on the PDE and seed.
    pde_entropy = int.from_bytes(hashlib.sha256(pde.key.encode()).digest()[:8], "little")
    first = FIXED_TEST_ENTROPY if split_index == 2 else int(seed)
    return np.random.default_rng(np.random.SeedSequence([first, split_index, pde_entropy]))


def _generate(pde: PDE, preset: Preset, seed: int) -> Splits:
    t = np.linspace(0.0, T_END, preset.n_times)
    factor = preset.solve_cells // preset.store_cells
    chunk = max(1, _CHUNK_CELLS // preset.solve_cells)
    viscous = viscous_scheme(pde, preset.solve_cells)
    arrays = []
    for split_index, size in enumerate((preset.n_train, preset.n_val, preset.n_test)):
        params = draw_initial_conditions(split_stream(pde, seed, split_index), size)
        out = np.empty((size, t.size, preset.store_cells), dtype=np.float32)
        for start in range(0, size, chunk):
            part = params.select(slice(start, start + chunk))
            if pde.kind == "advection":  # exact: cell averages of the shifted profile
                for index, time in enumerate(t):
                    out[start:start + chunk, index] = coarsen(
                        part.cell_averages(preset.solve_cells, shift=pde.coefficient * time), factor)
            else:
                trajectories = solve(pde, part.cell_averages(preset.solve_cells), t, viscous=viscous)
                out[start:start + chunk] = coarsen(trajectories, factor)         # (chunk, T, store_cells)
        arrays.append(_read_only(out))
    train, val, test = arrays
    return Splits(train=train, val=val, test=test, t=_read_only(t))


def viscous_scheme(pde: PDE, cells: int) -> Literal["explicit", "split"]:
    """The Burgers viscous stepping ``dataset`` uses: ``"split"`` where the explicit limit would bind.

    The explicit viscous limit ``0.25 dx^2 / (nu / pi)`` is below the advective one
    ``0.25 dx / max|u|`` (with ``max|u|`` about 1) when ``(nu / pi) * cells > 1``; there it would
    multiply the number of steps (by about 100 for ``nu = 1`` on 256 cells), while the split
    scheme (same spatial scheme, viscous term integrated exactly) costs one step per advective
    limit. Below that, the explicit scheme is the cheaper one (no FFTs). Both agree to about
    1e-5 relative, far below a neural operator's error.
    """
    return "split" if pde.kind == "burgers" and pde.coefficient / math.pi * cells > 1 else "explicit"


def _load(path: Path) -> Splits | None:
    if not path.exists():
        return None
    try:
        with np.load(path) as data:
            return Splits(*(_read_only(data[name]) for name in ("train", "val", "test", "t")))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # a damaged file is regenerated and overwritten
        return None


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array
