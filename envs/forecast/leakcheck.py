"""Does anything derived from a hidden true gain reach the agent? An experiment, not a code review.

One episode is played twice with the same seed and the same fixed policy (predictions from a
hash of each candidate's id, so the executed candidates are the same both times): once on the
archive, once on a copy where every *hidden* record has its true outcome moved by ``shift``
(gains, mean gain, SE, p-value and metrics). Hidden means: in the episode's candidate pool, never
executed, and not the source of any gain the agent is shown (under ``shuffled_gains`` a record's
values are shown for another record; those are shown by design, the control's point). Everything
the agent receives (observation, reward, terminated, truncated, info) must be identical; the
paths that differ are returned.

``leaky`` wraps an env to add a leak on purpose (the calibration's positive control).
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from typing import Any, Callable

import numpy as np

from .archive import Archive, ArchiveRecord

__all__ = ["hidden_truth_differences", "hash_policy", "shifted_archive"]


def hash_policy(data: dict[str, Any]) -> list[float]:
    """Predictions that depend on the candidates' ids only (never on a gain)."""
    return [zlib.crc32(c["intervention"].encode()) / 2**32 for c in data["candidates"]]


def shifted_archive(archive: Archive, hidden: set[str], shift: float) -> Archive:
    """A copy of ``archive`` with the true outcome of every ``hidden`` intervention moved by ``shift``."""
    def moved(record: ArchiveRecord) -> ArchiveRecord:
        if record.intervention not in hidden:
            return record
        return dataclasses.replace(record, gains=[g + shift for g in record.gains], gain=record.gain + shift,
                                   gain_se=record.gain_se * 0.5 + 0.01, p_value=0.5 * record.p_value,
                                   significant=not record.significant,
                                   metrics=[m * 0.5 for m in record.metrics])
    return Archive(tuple(moved(r) for r in archive.records), archive.baselines, archive.provenance)


def _play(env: Any, task: str, seed: int) -> tuple[list[str], Any]:
    observation, info = env.reset(seed=seed, options={"task_id": task})
    stream = [_canonical({"observation": observation, "info": info})]
    terminated = truncated = False
    while not (terminated or truncated):
        action = {"predictions": hash_policy(json.loads(observation["data"]))}
        observation, reward, terminated, truncated, info = env.step(action)
        stream.append(_canonical({"observation": observation, "reward": reward, "terminated": terminated,
                                  "truncated": truncated, "info": info}))
    return stream, env


def _canonical(value: Any) -> str:
    def plain(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v
    return json.dumps(plain(value), sort_keys=True, default=str)


def hidden_truth_differences(make_env: Callable[[Archive], Any], archive: Archive, *, task: str, seed: int,
                             shift: float = 5.0) -> tuple[list[str], int]:
    """The steps (``step N: keys``) whose agent-facing output changed when hidden truths moved, and
    how many records were hidden. ``make_env(archive)`` builds the env under test."""
    first, env = _play(make_env(archive), task, seed)
    base = env.unwrapped if hasattr(env, "unwrapped") else env
    state = base.snapshot()
    executed = set(state["executed"])
    shown_from = {source.intervention for key, source in base._shown_source.items()
                  if key in executed or key not in set(state["pool"])}
    hidden = set(state["pool"]) - executed - shown_from
    second, _ = _play(make_env(shifted_archive(archive, hidden, shift)), task, seed)
    differences = []
    for step, (a, b) in enumerate(zip(first, second)):
        if a != b:
            left, right = json.loads(a), json.loads(b)
            keys = sorted(k for k in left if left[k] != right.get(k))
            inner = [f"{k}.{sub}" for k in keys if isinstance(left[k], dict)
                     for sub in sorted(left[k]) if left[k][sub] != right[k].get(sub)]
            differences.append(f"step {step}: {', '.join(inner or keys)}")
    if len(first) != len(second):
        differences.append(f"episode length {len(first)} vs {len(second)}")
    return differences, len(hidden)
