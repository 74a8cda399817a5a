"""What a data-selection pool is, and the two pools: function calling and digits.

A pool holds visible items (what the agent may inspect), their hidden factors, a hidden
evaluation set, a student recipe and a frozen base model. ``score(rows, seed)`` trains a fresh
student on ``rows`` with the fixed recipe and returns its accuracy per evaluation category; it is
cached on disk by a hash of (pool spec, rows, seed, recipe).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from rsigym.cache import atomic_write_bytes, cache_dir, cache_key

__all__ = ["DataPool", "PoolSpec", "POOL_NAMES", "make_pool", "cached_scores", "warm_scores"]

POOL_NAMES = ("function_calling", "digits")
DATA_VERSION = 3
"""Part of every score's cache key: bump it when a pool's items or its evaluation set change
(2: evaluation ask / no-call items made disjoint from the pool too; 3: function-calling
evaluation from held-out templates and paraphrases, students fine-tune the base model)."""


@dataclass(frozen=True)
class PoolSpec:
    """Sizes and seeds of a pool. ``group_size`` rows per submitted group (five groups)."""

    name: str = "function_calling"
    size: int = 10_000
    group_size: int = 1_000
    eval_per_category: int = 200
    data_seed: int = 0

    def key(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "eval": self.eval_per_category, "seed": self.data_seed,
                "data": DATA_VERSION}


class DataPool(Protocol):
    """The interface the env and the benchmark use."""

    spec: PoolSpec
    factors: list[str]           # hidden, one per row
    categories: tuple[str, ...]  # evaluation categories

    def __len__(self) -> int: ...

    def item(self, row: int) -> dict[str, Any]: ...  # the visible JSON of a row

    def search_text(self, row: int) -> str: ...

    def recipe_key(self) -> dict[str, Any]: ...

    def train_and_score(self, rows: Sequence[int], seed: int) -> dict[str, float]: ...

    def base_losses(self, rows: Sequence[int]) -> np.ndarray: ...

    def embed(self, rows: Sequence[int]) -> np.ndarray: ...


def score_path(pool: DataPool, rows: Sequence[int], seed: int) -> Path:
    """Where the cached scores of (pool spec, sorted rows, seed, recipe) live."""
    key = cache_key("dataselect-score/1", pool.spec.key(), sorted(int(r) for r in rows), int(seed), pool.recipe_key())
    return cache_dir("dataselect", "scores") / f"{key}.json"


def cached_scores(pool: DataPool, rows: Sequence[int], seed: int) -> dict[str, float]:
    """``pool.train_and_score`` cached on disk by (pool spec, sorted rows, seed, recipe)."""
    path = score_path(pool, rows, seed)
    if path.exists():
        return {k: float(v) for k, v in json.loads(path.read_text()).items()}
    scores = pool.train_and_score(sorted(int(r) for r in rows), int(seed))
    atomic_write_bytes(path, json.dumps(scores).encode())
    return scores


@lru_cache(maxsize=4)
def make_pool(spec: PoolSpec) -> DataPool:
    """The pool a spec names (built once per process)."""
    if spec.name == "function_calling":
        from .fc_track import FunctionCallingPool

        return FunctionCallingPool(spec)
    if spec.name == "digits":
        from .digits_track import DigitsPool

        return DigitsPool(spec)
    raise ValueError(f"unknown pool {spec.name!r}; expected one of {', '.join(POOL_NAMES)}")


def _warm_one(job: tuple[PoolSpec, list[int], int]) -> None:
    spec, rows, seed = job
    cached_scores(make_pool(spec), rows, seed)


def warm_scores(spec: PoolSpec, jobs: Sequence[tuple[Sequence[int], int]], workers: int) -> None:
    """Train the students of ``jobs`` ((rows, seed) pairs) into the score cache, ``workers``
    processes at a time (each builds the pool once); 1 worker trains in this process."""
    pool = make_pool(spec)  # built once in this process; only jobs not yet cached go to the workers
    tasks = [(spec, sorted(int(r) for r in rows), int(seed)) for rows, seed in jobs
             if not score_path(pool, rows, seed).exists()]
    if not tasks:
        return
    if workers <= 1:
        for task in tasks:
            _warm_one(task)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn: a forked torch (or an env's open sandbox client) is not safe to reuse in a child
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as executor:
        list(executor.map(_warm_one, tasks))
