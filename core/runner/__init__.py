"""The runner: a scenario in, one fsynced record per episode out, resumable after any crash.

``run_scenario`` expands the scenario, skips episode keys already in ``records.jsonl`` (so a
rerun after a crash loses nothing and duplicates nothing), runs the rest on the local process
pool or on Ray, writes each record as it arrives, then writes the report. With ``concurrency``
above one (or provider limits set), each local worker keeps that many episodes in flight on
threads (``inflight``); ``capacity`` chooses the default and keeps CPU-heavy envs to the cores.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import UserError
from ..jsonl import RecordWriter, move_bad_lines, read_records, remove_stale_temporaries, rewrite_records
from ..records import Trajectory
from ..report import write_report
from ..scenario import EpisodeSpec, Scenario, expand
from .. import limits
from .backends import infra_error_record, run_local, run_ray
from .capacity import plan_capacity
from .episode import run_episode
from .inflight import WorkerStats, run_in_process, run_in_workers

__all__ = ["RunSummary", "run_scenario", "run_episode", "infra_error_record", "RECORDS_FILE"]

log = logging.getLogger(__name__)
RECORDS_FILE = "records.jsonl"
INFRA_ERRORS_FILE = "infra_errors.jsonl"


@dataclass
class RunSummary:
    out_dir: Path
    total: int      # episodes in the scenario
    skipped: int    # already in records.jsonl (resume)
    ran: int        # run now
    infra_errors: int
    report: Path | None
    bad_lines_moved: int = 0  # unreadable lines of records.jsonl moved to records.jsonl.bad
    duplicate_keys: int = 0   # records that repeat an earlier record's episode key
    workers: int = 1          # worker processes used (0: this process)
    concurrency: int = 1      # episodes in flight per worker
    notes: list[str] = field(default_factory=list)  # what the runner changed from the request, and why
    limits: list[limits.GateStats] = field(default_factory=list)  # per provider: waits, 429s, the cap
    peak_rss_mb: float | None = None  # the largest worker's peak memory (in-flight runs only)


def run_scenario(scenario: Scenario, out_dir: str | Path, *, backend: str = "local",
                 workers: int = 1, address: str | None = None, progress: bool = True,
                 report: bool = True, retry_infra_errors: bool = False, concurrency: int | None = None,
                 max_connections: int | None = None) -> RunSummary:
    """Run every episode of ``scenario`` not yet recorded in ``out_dir/records.jsonl``.

    With ``retry_infra_errors``, episodes recorded as ``infra_error`` run again; their old
    records move to ``infra_errors.jsonl`` first, so each key stays once in ``records.jsonl``.
    ``concurrency`` is the number of episodes in flight per local worker (None: the scenario's
    ``runner.concurrency``, else 16 against a hosted model and 1 otherwise); ``max_connections``
    caps the calls in flight per provider and worker (over the scenario's ``limits:``).
    """
    plan = plan_capacity(scenario.env_id, scenario.raw, workers=workers, concurrency=concurrency)
    for note in plan.notes:
        log.warning("%s", note)
    try:
        limits_config = limits.LimitsConfig.parse(scenario.raw.get("limits"), max_connections=max_connections)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{scenario.source}: limits: {exc}") from exc
    in_flight = backend == "local" and (plan.concurrency > 1 or limits_config.is_set())
    stats = WorkerStats()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    episodes = expand(scenario)
    path = out_dir / RECORDS_FILE
    remove_stale_temporaries(path)
    existing = read_records(path)
    # a torn last line is the writer's to set aside (.torn); any other unreadable line moves to .bad
    moved = move_bad_lines(path) if existing.bad_lines else 0
    if retry_infra_errors:
        _set_aside_infra_errors(out_dir)
        existing = read_records(path)
    done = {r.episode_key for r in existing}
    todo = [e for e in episodes if e.key not in done]
    (out_dir / "scenario.yaml").write_text(yaml.safe_dump(scenario.raw, sort_keys=False))


    infra_errors = 0
    with RecordWriter(path) as writer, _Progress(len(todo), scenario.name, enabled=progress) as bar:
        def on_record(record: Trajectory) -> None:
            nonlocal infra_errors
            writer.write(record)  # on disk before the bar moves
            infra_errors += record.termination == "infra_error"
            bar.advance(record)

        if in_flight and plan.workers == 0:
            stats = run_in_process(todo, on_record, concurrency=plan.concurrency, limits_config=limits_config)
        elif in_flight:
            stats = run_in_workers(todo, on_record, workers=plan.workers, concurrency=plan.concurrency,
                                   limits_config=limits_config)
        elif backend == "local":
            run_local(todo, on_record, workers=plan.workers)
        elif backend == "ray":
            run_ray(todo, on_record, address=address, workers=plan.workers or None)
        else:
            raise ValueError(f"unknown backend {backend!r}; use local or ray")

    report_path = None
    if report:
        records = read_records(path).records
        report_path = write_report(out_dir, records, scenario.analyses, title=f"rsigym report: {scenario.name}")
    return RunSummary(out_dir, len(episodes), len(episodes) - len(todo), len(todo), infra_errors, report_path,
                      bad_lines_moved=moved, duplicate_keys=existing.duplicate_keys, workers=plan.workers,
                      concurrency=plan.concurrency if backend == "local" else 1, notes=plan.notes,
                      limits=stats.limits, peak_rss_mb=stats.peak_rss_mb or None)


def _set_aside_infra_errors(out_dir: Path) -> int:
    """Move infra_error records to ``infra_errors.jsonl`` (kept, never deleted); returns how many."""
    path = out_dir / RECORDS_FILE
    records = read_records(path).records
    failed = [r for r in records if r.termination == "infra_error"]
    if failed:
        with RecordWriter(out_dir / INFRA_ERRORS_FILE) as history:
            for record in failed:
                history.write(record)
        rewrite_records(path, [r for r in records if r.termination != "infra_error"])
    return len(failed)


class _Progress:
    """A rich progress bar with a running count of infra errors; silent when disabled."""

    def __init__(self, total: int, name: str, *, enabled: bool) -> None:
        self.total, self.name, self.enabled = total, name, enabled and total > 0
        self.errors = 0

    def __enter__(self) -> "_Progress":
        if self.enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self._bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("{task.fields[errors]}"),
                                 TimeElapsedColumn(), TimeRemainingColumn())
            self._bar.__enter__()
            self._task = self._bar.add_task(self.name, total=self.total, errors="")
        return self

    def advance(self, record: Trajectory) -> None:
        if not self.enabled:
            return
        self.errors += record.termination == "infra_error"
        self._bar.update(self._task, advance=1,
                         errors=f"[red]{self.errors} infra errors" if self.errors else "")

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self._bar.__exit__(*exc)
