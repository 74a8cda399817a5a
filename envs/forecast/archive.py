"""The experiment archive: paired seeded runs of every intervention against its baseline.

``build_runs`` trains (environment, intervention or baseline, seed) triples and appends each
result to ``runs.jsonl`` as soon as it is done (flush + fsync), seed-major, so a killed build
resumes where it stopped and a partial build still covers every intervention with the same
seeds. ``assemble`` turns the runs into one record per intervention: per-seed metrics and gains
(crashed runs floored at the environment's trivial-predictor metric and marked), the mean gain,
its paired standard error, a two-sided one-sample t-test and a significance flag. The shipped
archive is ``data/archive.jsonl.gz`` with ``data/archive_provenance.json``; ``rsigym archive
build`` makes both (never in CI).
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from .catalogue import catalogue
from .research import RESEARCH_ENVIRONMENTS, gain, research_environment, run

__all__ = ["ArchiveRecord", "BaselineRecord", "Archive", "build_runs", "assemble", "write_archive", "runs_from_archive",
           "load_archive", "paired_stats", "BASELINE_ID", "SIGNIFICANCE_ALPHA", "GAIN_FLOOR"]

BASELINE_ID = "baseline"
GAIN_FLOOR = -1.0     # per-seed gains below this (an error rate doubled, a crash) count as this
SIGNIFICANCE_ALPHA = 0.05
ARCHIVE_SCHEMA = "rsigym.forecast.archive/1"


@dataclass(frozen=True)
class ArchiveRecord:
    """One intervention's outcome over the paired seeds.

    Attributes:
        environment, intervention, text, diff, group, placebo: as in the catalogue (a placebo is
            chosen by its diff, never relabelled from its outcome).
        seeds: the seeds run (the same for the baseline).
        metrics: the intervention's metric per seed (crashed runs floored).
        baseline_metrics: the baseline's metric for the same seeds.
        crashed: per seed, whether the intervention's run crashed.
        gains: per-seed gain over the baseline (positive = better).
        gain: the mean gain; ``gain_se`` its paired standard error (sd / sqrt(n)).
        p_value: two-sided one-sample t-test of the per-seed gains against 0.
        significant: ``p_value < SIGNIFICANCE_ALPHA``.
    """

    environment: str
    intervention: str
    text: str
    diff: dict[str, Any]
    group: str
    placebo: bool
    seeds: list[int]
    metrics: list[float]
    baseline_metrics: list[float]
    crashed: list[bool]
    gains: list[float]
    gain: float
    gain_se: float
    p_value: float
    significant: bool


@dataclass(frozen=True)
class BaselineRecord:
    """The baseline run of one environment: per-seed metrics and the mean training curve."""

    environment: str
    seeds: list[int]
    metrics: list[float]
    curve: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Archive:
    """Records and baselines by environment, plus the provenance they were built with."""

    records: tuple[ArchiveRecord, ...]
    baselines: dict[str, BaselineRecord]
    provenance: dict[str, Any]

    def of(self, environment: str) -> list[ArchiveRecord]:
        return [r for r in self.records if r.environment == environment]

    def by_id(self) -> dict[str, ArchiveRecord]:
        return {r.intervention: r for r in self.records}

    @property
    def environments(self) -> list[str]:
        return sorted({r.environment for r in self.records})


def paired_stats(gains: Sequence[float]) -> tuple[float, float, float]:
    """Mean, paired standard error and two-sided t-test p-value of per-seed gains."""
    from scipy import stats

    values = np.asarray(gains, dtype=float)
    mean = float(values.mean())
    if len(values) < 2:
        return mean, math.nan, math.nan
    se = float(values.std(ddof=1) / math.sqrt(len(values)))
    if se == 0.0:   # identical per-seed gains (an exact no-op gives all zeros)
        return mean, 0.0, 1.0 if mean == 0.0 else 0.0
    return mean, se, float(stats.ttest_1samp(values, 0.0).pvalue)


def _jobs(seeds: Sequence[int], environments: Sequence[str],
          only: Sequence[str] | None = None) -> Iterator[tuple[str, str, int]]:
    for seed in seeds:                  # seed-major: a partial build covers every row equally
        for env in environments:
            yield env, BASELINE_ID, seed
            for iv in catalogue():
                if iv.environment == env and (only is None or iv.id in only):
                    yield env, iv.id, seed


def _run_job(job: tuple[str, str, int]) -> dict[str, Any]:
    env, intervention, seed = job
    diff = {} if intervention == BASELINE_ID else dict(_diffs()[intervention])
    start = time.perf_counter()
    result = run(env, diff, seed)
    return {"environment": env, "intervention": intervention, "seed": seed,
            "metric": None if result.crashed else result.metric, "crashed": result.crashed,
            "curve": result.curve, "seconds": round(time.perf_counter() - start, 3)}


@functools.lru_cache(maxsize=1)
def _diffs() -> dict[str, dict[str, Any]]:
    return {iv.id: dict(iv.diff) for iv in catalogue()}


def read_runs(path: Path) -> list[dict[str, Any]]:
    """The runs recorded in ``path`` (a torn last line from a kill is skipped)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def build_runs(runs_path: Path, *, seeds: Sequence[int], environments: Sequence[str] | None = None,
               workers: int = 1, on_run: Callable[[dict[str, Any]], None] | None = None,
               only: Sequence[str] | None = None) -> int:
    """Run every missing (environment, intervention, seed) and append it to ``runs_path``; returns how many ran.

    ``only`` restricts the interventions to these ids (the baselines always run).
    """
    environments = list(environments or RESEARCH_ENVIRONMENTS)
    for env in environments:
        research_environment(env)
    done = {(r["environment"], r["intervention"], r["seed"]) for r in read_runs(runs_path)}
    todo = [job for job in _jobs(seeds, environments, only) if job not in done]
    runs_path.parent.mkdir(parents=True, exist_ok=True)
    _drop_torn_tail(runs_path)
    with open(runs_path, "a") as out:
        if workers <= 1:
            results: Iterable[dict[str, Any]] = map(_run_job, todo)
            _append_all(out, results, on_run)
        else:
            import multiprocessing
            with multiprocessing.get_context("spawn").Pool(workers) as pool:   # spawn: torch holds threads
                _append_all(out, pool.imap(_run_job, todo, chunksize=4), on_run)
    return len(todo)


def runs_from_archive(archive: "Archive", runs_path: Path, environments: Sequence[str]) -> int:
    """Append to ``runs_path`` the runs ``archive`` holds for ``environments`` that it lacks; returns how many.

    A build that lost its runs file resumes from the archive it wrote: each record gives its
    intervention's metric per seed (``None`` where the run crashed) and each baseline its metric per
    seed with the mean curve (the mean over seeds is unchanged when later seeds join). Such rows
    carry ``"from": "archive"`` and no seconds (the archive's provenance has the timings).
    """
    done = {(r["environment"], r["intervention"], r["seed"]) for r in read_runs(runs_path)}
    rows = []
    for env in environments:
        base = archive.baselines.get(env)
        if base is None:
            continue
        for seed, metric in zip(base.seeds, base.metrics):
            rows.append({"environment": env, "intervention": BASELINE_ID, "seed": seed, "metric": metric,
                         "crashed": False, "curve": list(base.curve), "seconds": None, "from": "archive"})
        for record in archive.of(env):
            for seed, metric, crashed in zip(record.seeds, record.metrics, record.crashed):
                rows.append({"environment": env, "intervention": record.intervention, "seed": seed,
                             "metric": None if crashed else metric, "crashed": crashed, "curve": [],
                             "seconds": None, "from": "archive"})
    rows = [r for r in rows if (r["environment"], r["intervention"], r["seed"]) not in done]
    runs_path.parent.mkdir(parents=True, exist_ok=True)
    _drop_torn_tail(runs_path)
    with open(runs_path, "a") as out:
        _append_all(out, rows, None)
    return len(rows)


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line a kill left half-written, so the next append starts on a line of its own."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def _append_all(out: Any, results: Iterable[dict[str, Any]], on_run: Callable[[dict[str, Any]], None] | None) -> None:
    for row in results:
        out.write(json.dumps(row) + "\n")
        out.flush()
        os.fsync(out.fileno())
        if on_run is not None:
            on_run(row)


def assemble(rows: Iterable[dict[str, Any]]) -> tuple[list[ArchiveRecord], dict[str, BaselineRecord]]:
    """One record per intervention over the seeds its environment completed (see the module doc).

    A seed counts for an environment when its baseline and every intervention of the catalogue
    ran with it; an environment with fewer than two complete seeds gets no records.
    """
    by_key: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for row in rows:
        by_key.setdefault((row["environment"], row["intervention"]), {})[int(row["seed"])] = row
    baselines: dict[str, BaselineRecord] = {}
    for env in RESEARCH_ENVIRONMENTS:
        base = by_key.get((env, BASELINE_ID), {})
        ids = [iv.id for iv in catalogue() if iv.environment == env]
        # seeds every row of the environment has: a partial build gives all rows the same seeds
        complete = [s for s in sorted(base) if all(s in by_key.get((env, i), {}) for i in ids)]
        if len(complete) < 2:
            continue
        base = {s: base[s] for s in complete}
        seeds = sorted(base)
        floor = research_environment(env).floor_metric
        curves = [base[s]["curve"] for s in seeds if base[s]["curve"]]
        length = min(len(c) for c in curves) if curves else 0
        curve = [round(float(np.mean([c[i] for c in curves])), 4) for i in range(length)]
        baselines[env] = BaselineRecord(env, seeds, [_floored(base[s], floor) for s in seeds], curve)
    records = []
    for iv in catalogue():
        base_record = baselines.get(iv.environment)
        runs = by_key.get((iv.environment, iv.id), {})
        if base_record is None:
            continue
        seeds = [s for s in base_record.seeds if s in runs]
        if len(seeds) < 2:
            continue
        floor = research_environment(iv.environment).floor_metric
        base_metrics = [base_record.metrics[base_record.seeds.index(s)] for s in seeds]
        metrics = [_floored(runs[s], floor) for s in seeds]
        gains = [max(GAIN_FLOOR, gain(iv.environment, b, m)) for b, m in zip(base_metrics, metrics)]
        mean, se, p = paired_stats(gains)
        records.append(ArchiveRecord(
            environment=iv.environment, intervention=iv.id, text=iv.text, diff=dict(iv.diff), group=iv.group,
            placebo=iv.placebo, seeds=seeds, metrics=[round(m, 6) for m in metrics],
            baseline_metrics=[round(b, 6) for b in base_metrics], crashed=[bool(runs[s]["crashed"]) for s in seeds],
            gains=[round(g, 6) for g in gains], gain=round(mean, 6), gain_se=round(se, 6), p_value=round(p, 6),
            significant=bool(p < SIGNIFICANCE_ALPHA)))
    return records, baselines


def _floored(row: dict[str, Any], floor: float) -> float:
    metric = row["metric"]
    return floor if row["crashed"] or metric is None or not math.isfinite(metric) else float(metric)


def write_archive(folder: Path, records: Sequence[ArchiveRecord], baselines: dict[str, BaselineRecord],
                  provenance: dict[str, Any]) -> Path:
    """Write ``archive.jsonl.gz`` (byte-stable: gzip mtime 0) and ``archive_provenance.json`` into ``folder``."""
    lines = [json.dumps({"schema": ARCHIVE_SCHEMA, "kind": "baseline", **asdict(b)}, sort_keys=True)
             for b in baselines.values()]
    lines += [json.dumps({"schema": ARCHIVE_SCHEMA, "kind": "record", **asdict(r)}, sort_keys=True) for r in records]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "archive.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    (folder / "archive_provenance.json").write_text(json.dumps(provenance, indent=1, sort_keys=True) + "\n")
    return path


def parse_archive(data: bytes, provenance: dict[str, Any]) -> Archive:
    """An ``Archive`` from the compressed JSONL bytes (a clear error for a foreign schema)."""
    records, baselines = [], {}
    for n, line in enumerate(gzip.decompress(data).decode().splitlines(), 1):
        row = json.loads(line)
        if row.pop("schema", None) != ARCHIVE_SCHEMA:
            raise ValueError(f"archive line {n}: schema is not {ARCHIVE_SCHEMA}")
        kind = row.pop("kind")
        if kind == "baseline":
            baselines[row["environment"]] = BaselineRecord(**row)
        else:
            records.append(ArchiveRecord(**row))
    return Archive(tuple(records), baselines, provenance)


@functools.lru_cache(maxsize=1)
def load_archive() -> Archive:
    """The archive shipped with the package."""
    folder = resources.files("rsigym.envs.forecast").joinpath("data")
    provenance = json.loads(folder.joinpath("archive_provenance.json").read_text())
    return parse_archive(folder.joinpath("archive.jsonl.gz").read_bytes(), provenance)
