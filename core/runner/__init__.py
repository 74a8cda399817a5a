"""The runner: a scenario in, one fsynced record per episode out, resumable after any crash.

``run_scenario`` expands the scenario, skips episode keys already in ``records.jsonl`` (so a
rerun after a crash loses nothing and duplicates nothing), runs the rest on the local process
pool or on Ray, writes each record as it arrives, then writes the report.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..jsonl import RecordWriter, move_bad_lines, read_records, remove_stale_temporaries, rewrite_records
from ..records import Trajectory
from ..report import write_report
from ..scenario import EpisodeSpec, Scenario, expand
from .backends import infra_error_record, run_local, run_ray
from .episode import run_episode

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
    cost_usd: float = 0.0     # spent by the episodes run now
    stopped: str | None = None  # why the run ended before every episode ran (a cost limit)
    not_run: int = 0          # episodes left for a later run after a stop


def run_scenario(scenario: Scenario, out_dir: str | Path, *, backend: str = "local",
                 workers: int = 1, address: str | None = None, progress: bool = True,
                 report: bool = True, retry_infra_errors: bool = False, cost_limit_usd: float | None = None,
                 episode_timeout_s: float | None = None) -> RunSummary:
    """Run every episode of ``scenario`` not yet recorded in ``out_dir/records.jsonl``.

    With ``retry_infra_errors``, episodes recorded as ``infra_error`` run again; their old
    records move to ``infra_errors.jsonl`` first, so each key stays once in ``records.jsonl``.
    Once the episodes run now have spent ``cost_limit_usd``, no further episode starts (those
    running finish and are recorded; ``stopped`` says so and a later run resumes). An episode past
    ``episode_timeout_s`` of wall clock is stopped and recorded as ``infra_error`` with an error
    starting "timeout:".
    """
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
    if episode_timeout_s is not None:
        todo = [dataclasses.replace(e, timeout_s=episode_timeout_s) for e in todo]
    (out_dir / "scenario.yaml").write_text(yaml.safe_dump(scenario.raw, sort_keys=False))

    infra_errors, ran, spent_usd = 0, 0, 0.0
    with RecordWriter(path) as writer, _Progress(len(todo), scenario.name, enabled=progress) as bar:
        def on_record(record: Trajectory) -> None:
            nonlocal infra_errors, ran, spent_usd
            writer.write(record)  # on disk before the bar moves
            infra_errors += record.termination == "infra_error"
            ran += 1
            spent_usd += record.usage.cost_usd
            bar.advance(record)

        def over_budget() -> bool:
            return cost_limit_usd is not None and spent_usd >= cost_limit_usd

        if backend == "local":
            run_local(todo, on_record, workers=workers, stop=over_budget)
        elif backend == "ray":
            run_ray(todo, on_record, address=address, workers=workers or None, stop=over_budget)
        else:
            raise ValueError(f"unknown backend {backend!r}; use local or ray")

    report_path = None
    if report:
        records = read_records(path).records
        report_path = write_report(out_dir, records, scenario.analyses, title=f"rsigym report: {scenario.name}")
    stopped = (f"cost limit reached: {spent_usd:.4f} USD spent, limit {cost_limit_usd:.4f} USD"
               if over_budget() and ran < len(todo) else None)
    return RunSummary(out_dir, len(episodes), len(episodes) - len(todo), ran, infra_errors, report_path,
                      bad_lines_moved=moved, duplicate_keys=existing.duplicate_keys, cost_usd=spent_usd,
                      stopped=stopped, not_run=len(todo) - ran)


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
