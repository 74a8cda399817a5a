"""What a data-selection pool is, and the two pools: function calling and digits.

A pool holds visible items (what the agent may inspect), their hidden factors, a hidden
evaluation set, a student recipe and a frozen base model. ``score(rows, seed)`` trains a fresh
student on ``rows`` with the fixed recipe and returns its accuracy per evaluation category; it is
cached on disk by a hash of (pool spec, rows, seed, recipe).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rsigym.cache import atomic_write_bytes, cache_dir, cache_key

from .pool_spec import DATA_VERSION, POOL_NAMES, DataPool, PoolSpec

__all__ = ["DataPool", "PoolSpec", "POOL_NAMES", "make_pool", "cached_scores", "warm_scores"]

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
