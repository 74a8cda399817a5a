"""The runner: a scenario in, one fsynced record per episode out, resumable after any crash.

``run_scenario`` expands the scenario, skips episode keys already in ``records.jsonl`` (so a
rerun after a crash loses nothing and duplicates nothing), runs the rest on the local process
pool or on Ray, writes each record as it arrives, then writes the report. With ``concurrency``
above one (or provider limits set), each local worker keeps that many episodes in flight on
threads (``inflight``); on Ray each runner actor does (``ray_backend``), with the provider limits
and the cost limit held for the whole cluster. ``capacity`` chooses the default and keeps
CPU-heavy envs to the cores.

It may import every part of the kernel below the CLI (records, llm, report, scenario, agent,
grader, registry, conditions, sandbox); only the CLI and the testing kit import it.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import UserError
from ..records.jsonl import RecordWriter, move_bad_lines, read_records, remove_stale_temporaries, rewrite_records
from ..scenario.manifest import check_or_write_manifest, early_warnings, record_ray, record_warnings
from ..records.trajectory import Trajectory, utc_now
from ..records.redact import redacted_excerpt
from ..report.report import write_report
from ..scenario.spec import EpisodeSpec, Scenario, expand
from ..llm import limits
from ..llm.endpoint_check import EndpointCheck, check_endpoints
from ..llm.spending import COST_LIMIT_PREFIX
from .backends import infra_error_record, run_local
from .episode import import_user_modules, run_episode
from .lock import RunFolderLock
from .progress import Progress, ProgressMode
from .capacity import episode_can_spend, episode_timeout_s as resolve_timeout, plan_capacity
from .guard import RunGuard
from .inflight import StartedWorkers, WorkerStats, run_in_process, run_in_workers
from .ray_backend import run_ray

__all__ = ["RunSummary", "run_scenario", "run_episode", "infra_error_record", "select_episodes",
           "RECORDS_FILE", "infra_error_cause"]

log = logging.getLogger(__name__)
RECORDS_FILE = "records.jsonl"
INFRA_ERRORS_FILE = "infra_errors.jsonl"
RAY_LOGS_DIR = "ray_logs"  # the Ray runners' logs, a folder per invocation (``ray_backend``)


@dataclass
class RunSummary:
    """What a run did; the CLI prints it and decides the exit status from it."""

    out_dir: Path
    total: int      # episodes selected from the scenario
    skipped: int    # already in records.jsonl (resume)
    ran: int        # run now
    infra_errors: int  # among the episodes run now
    report: Path | None
    bad_lines_moved: int = 0  # unreadable lines of records.jsonl moved to records.jsonl.bad
    duplicate_keys: int = 0   # records that repeat an earlier record's episode key
    agent_errors: int = 0     # episodes run now that ended in agent_error
    grader_errors: int = 0    # grades of episodes run now that have no score (the grader failed)
    infra_causes: Counter[str] = field(default_factory=Counter)  # cause (one line) -> episodes run now
    analysis_errors: list[str] = field(default_factory=list)     # analyses that raised: one line each
    infra_retried: int = 0    # earlier infra_error records set aside and run again
    new_run: bool = True      # the folder held no run before
    cost_usd: float = 0.0     # spent by the episodes run now
    stopped: str | None = None  # why the run ended before every episode ran (a cost limit, repeated errors)
    stopped_by_errors: bool = False  # the stop was the consecutive-error stop (exit 1, not 3)
    cancelled: int = 0  # in flight when identical errors stopped the run: not recorded, rerun on resume
    cost_cut: int = 0  # episodes run now whose share of --cost-limit ran out (infra_error "cost limit: ...")
    endpoint_check: "EndpointCheck | None" = None  # the calls made before the first episode
    replied: list[Trajectory] = field(default_factory=list)  # episodes run now, without their steps
    scenario_raw: dict[str, Any] = field(default_factory=dict)  # the scenario that ran
    not_run: int = 0          # episodes left for a later run after a stop
    workers: int = 1          # worker processes used (0: this process); on Ray, runners at the start
    concurrency: int = 1      # episodes in flight per worker
    notes: list[str] = field(default_factory=list)  # what the runner changed from the request, and why
    limits: list[limits.GateStats] = field(default_factory=list)  # per provider: waits, 429s, the cap
    peak_rss_mb: float | None = None  # the largest worker's peak memory (in-flight runs only)
    episode_timeouts: dict[str, float | None] = field(default_factory=dict)  # agent id -> its episodes' wall clock

    @property
    def usage_estimated(self) -> int:
        """Model calls (the endpoint check's included) whose provider usage was missing or invalid:
        their tokens were counted locally (``rsigym.llm.provider_usage``)."""
        checked = self.endpoint_check.usage.usage_estimated if self.endpoint_check else 0
        # ``replied`` keeps each record's usage by role only (``_count``): summed from there
        return checked + sum(u.usage_estimated for r in self.replied for u in r.usage_by_role.values())


_WHERE = re.compile(r"\s*\[[^\]]*:\d+ in [^\]]*\]$")


def infra_error_cause(error: str | None) -> str:
    """One line naming why an episode was an infra error (the error without its code location)."""
    line = (error or "unknown cause").strip().splitlines()[0] if (error or "").strip() else "unknown cause"
    return redacted_excerpt(_WHERE.sub("", line), 160)  # redacted before the cut: no secret half-kept


def select_episodes(episodes: Sequence[EpisodeSpec], *, tasks: Sequence[str] | None = None,
                    limit: int | None = None) -> list[EpisodeSpec]:
    """The episodes of the given ``tasks`` (all when None), then the first ``limit`` tasks of those."""
    known = list(dict.fromkeys(e.env.task_id for e in episodes))
    if tasks is not None:
        missing = [t for t in tasks if t not in known]
        if missing:
            from ..scenario.preflight import did_you_mean

            raise UserError(f"--tasks: {missing[0]!r} is not a task of this scenario"
                            f"{did_you_mean(str(missing[0]), [str(k) for k in known])}; its tasks: "
                            f"{', '.join(str(k) for k in known[:8])}{', ...' if len(known) > 8 else ''}")
        keep = set(tasks)
        known = [t for t in known if t in keep]
    if limit is not None:
        known = known[:limit]
    chosen = set(known)
    return [e for e in episodes if e.env.task_id in chosen]


def run_scenario(scenario: Scenario, out_dir: str | Path, *, backend: str = "local",
                 workers: int = 1, address: str | None = None, progress: ProgressMode | bool = True,
                 report: bool = True, retry_infra_errors: bool = True,
                 tasks: Sequence[str] | None = None, limit: int | None = None,
                 imports: Sequence[str] = (), preflight: bool = True, cost_limit_usd: float | None = None,
                 episode_timeout_s: float | None = None, concurrency: int | None = None,
                 max_connections: int | None = None, endpoint_check: bool = False,
                 max_consecutive_errors: int = 5,
                 on_warnings: Callable[[list[str]], None] | None = None) -> RunSummary:
    """Run every episode of ``scenario`` not yet recorded in ``out_dir/records.jsonl``.

    The folder is locked for the whole run (one writer per run folder), and its manifest must
    name the same scenario (a resume of another scenario raises ``UserError`` with the
    differences). Episodes recorded as ``infra_error`` run again (``retry_infra_errors``, the
    default); their old records move to ``infra_errors.jsonl`` first, so each key stays once in
    ``records.jsonl``.

    Args:
        scenario: The battery.
        out_dir: The run folder.
        backend: ``local`` (process pool) or ``ray``.
        workers: Worker processes (0: this process); on Ray, runner actors per CPU of each node (at
            least 1; a CPU-heavy env gets one per CPU).
        address: Ray cluster address.
        progress: ``bar`` (``plain`` when stderr is no terminal), ``plain`` (a line every 5%) or ``none``
            (or True/False for bar/none).
        report: Write ``report.md`` at the end.
        retry_infra_errors: Run episodes recorded as ``infra_error`` again.
        tasks: Only these task ids of the scenario.
        limit: Only the first ``limit`` tasks (after ``tasks``).
        imports: Modules every worker imports before its first episode (``--import``).
        preflight: Check the scenario (``rsigym.scenario.preflight``) before anything is written.
        cost_limit_usd: No episode starts that could take the spending (endpoint check included)
            past this: each reserves its estimated cost first (``guard``); those running finish
            and are recorded; ``stopped`` says so and a later run resumes.
        episode_timeout_s: An episode past this wall clock is stopped and recorded as
            ``infra_error`` with an error starting "timeout:" (any concurrency, any backend). None:
            ``HOSTED_EPISODE_TIMEOUT_S`` for an episode that calls a hosted model, none otherwise;
            0: none. The clock starts once the env is made and reset (``run_episode``).
        concurrency: Episodes in flight per local worker or Ray runner (None: the scenario's
            ``runner.concurrency``, else 16 against a hosted model and 1 otherwise).
        max_connections: Calls in flight per provider and worker (over the scenario's ``limits:``).
        endpoint_check: Call each model endpoint once before anything is written
            (``rsigym.llm.endpoint_check``); a failure that cannot pass raises ``PreflightError``.
        max_consecutive_errors: Stop after this many episodes in a row end in the same LLM error
            that retrying cannot fix (0: never); ``stopped`` keeps the error in full.
        on_warnings: Called once before the first episode with the early warnings (the capacity
            plan's notes, the endpoint check's warnings, what ``tool_mode: auto`` chose); default:
            logged. They also go to the manifest's ``warnings``.
    """
    plan = plan_capacity(scenario.env_id, scenario.raw, workers=workers, concurrency=concurrency)
    try:
        limits_config = limits.LimitsConfig.parse(scenario.raw.get("limits"), max_connections=max_connections)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{scenario.source}: limits: {exc}") from exc
    # a cost limit needs episodes started one by one (each reserves its cost): the in-flight runner
    in_flight = backend == "local" and (plan.concurrency > 1 or limits_config.is_set()
                                        or cost_limit_usd is not None)
    stats = WorkerStats()
    out_dir = Path(out_dir)
    import_user_modules(tuple(imports))
    if preflight:
        from ..scenario.preflight import check_scenario

        check_scenario(scenario)
    episodes = select_episodes(expand(scenario), tasks=tasks, limit=limit)
    if imports:
        episodes = [dataclasses.replace(e, imports=tuple(imports)) for e in episodes]
    # The workers start now and import while this process checks the scenario and the endpoints
    # (a second core's worth of start-up off the path to the first episode); killed if that fails.
    early = (StartedWorkers(min(plan.workers, len(episodes)), plan.concurrency, limits_config, warm=episodes)
             if in_flight and plan.workers > 0 and episodes else None)
    if backend == "ray":  # the same for Ray's runners: they import and prepare while this process checks
        from .ray_backend import start_early

        start_early(episodes, address=address, workers=plan.workers, concurrency=plan.concurrency,
                    limits_config=limits_config, cpu_heavy=plan.cpu_heavy)
    try:
        checked = None
        if endpoint_check:
            from ..scenario.preflight import PreflightError

            checked = check_endpoints(scenario.raw, source=str(scenario.source))
            if checked.problems:
                raise PreflightError(checked.problems)
        guard = RunGuard(cost_limit_usd, max_consecutive_errors, unknown_cost_slots=max(1, plan.workers),
                         spent_usd=checked.usage.cost_usd if checked else 0.0)
        with RunFolderLock(out_dir):
            new_run = check_or_write_manifest(out_dir, scenario,
                                              tool_modes=checked.tool_modes if checked is not None else None)
            warnings = early_warnings(scenario.raw, checked, plan.notes)
            record_warnings(out_dir, warnings)
            if warnings:  # before the first episode, not after the run
                if on_warnings is not None:
                    on_warnings(warnings)
                else:
                    for line in warnings:
                        log.warning("%s", line)
            path = out_dir / RECORDS_FILE
            remove_stale_temporaries(path)
            existing = read_records(path)
            # a torn last line is the writer's to set aside (.torn); any other unreadable line moves to .bad
            moved = move_bad_lines(path) if existing.bad_lines else 0
            retried = 0
            if retry_infra_errors:
                retried = _set_aside_infra_errors(out_dir, {e.key for e in episodes})
                existing = read_records(path)
            done = {r.episode_key for r in existing}
            todo = [e for e in episodes if e.key not in done]
            todo = [dataclasses.replace(e, timeout_s=resolve_timeout(episode_timeout_s, e.agent.model, e.env.kwargs))
                    for e in todo]
            if checked is not None and checked.tool_modes:  # tool_mode auto: what the probe call found
                todo = [dataclasses.replace(e, tool_mode=checked.tool_modes.get(e.agent.id)) for e in todo]
            if cost_limit_usd is not None:  # free episodes first: a limit that stops the spending stops nothing free
                todo.sort(key=episode_can_spend)

            summary = RunSummary(out_dir, len(episodes), len(episodes) - len(todo), 0, 0, None,
                                 bad_lines_moved=moved, duplicate_keys=existing.duplicate_keys,
                                 infra_retried=retried, new_run=new_run, workers=plan.workers,
                                 concurrency=plan.concurrency, notes=plan.notes,
                                 endpoint_check=checked, scenario_raw=scenario.raw,
                                 episode_timeouts={e.agent.id: e.timeout_s for e in todo})
            fallback_warned = False
            in_process = backend == "local" and plan.workers == 0
            warming: list[threading.Thread] = []

            def warm_report() -> None:
                # The report's imports (about 1.5 s of CPU) on a thread while this process only
                # waits on its workers; with episodes in flight, once the last is handed out, when
                # the start-up (imports, the first wave's sandboxes) no longer wants the CPU.
                if report and todo and not in_process and not warming:
                    from ..report.report import warm_report_imports

                    warming.append(warm_report_imports())

            if not in_flight:
                warm_report()
            with RecordWriter(path) as writer, Progress(len(todo), scenario.name, mode=progress) as bar:
                def on_record(record: Trajectory) -> None:
                    nonlocal fallback_warned
                    if guard.repeats_the_stop(record):  # in flight when identical errors stopped the run:
                        summary.cancelled += 1           # not recorded, it runs again on resume
                        bar.advance(record)
                        return
                    writer.write(record)  # on disk before the bar moves
                    guard.finished(record)
                    _count(summary, record)
                    summary.ran += 1
                    summary.cost_usd += record.usage.cost_usd
                    bar.advance(record)
                    reason = (record.sandbox or {}).get("fallback_reason")
                    if reason and not fallback_warned and not in_process:  # once per run, not per worker
                        fallback_warned = True
                        print(f"rsigym: warning: sandbox falls back to local (no isolation): {reason}",
                              file=sys.stderr)

                if in_flight and plan.workers == 0:
                    stats = run_in_process(todo, on_record, concurrency=plan.concurrency,
                                           limits_config=limits_config, stop=guard.stop, admit=guard.admit)
                elif in_flight:
                    stats = run_in_workers(todo, on_record, workers=plan.workers, concurrency=plan.concurrency,
                                           limits_config=limits_config, stop=guard.stop, admit=guard.admit,
                                           started=early, on_dispatched=warm_report)
                elif backend == "local":
                    run_local(todo, on_record, workers=plan.workers, stop=guard.stop)
                elif backend == "ray":
                    stamp = utc_now().replace(":", "").replace("-", "").split(".")[0]  # this invocation's logs
                    ray_stats = run_ray(todo, on_record, address=address, workers=plan.workers,
                                        concurrency=plan.concurrency, limits_config=limits_config,
                                        cpu_heavy=plan.cpu_heavy, stop=guard.stop, admit=guard.admit,
                                        log_dir=out_dir / RAY_LOGS_DIR / stamp)
                    stats = WorkerStats(ray_stats.limits, ray_stats.peak_rss_mb)
                    summary.workers = ray_stats.runners
                    summary.notes = [*summary.notes, *ray_stats.notes]
                    if ray_stats.runners or ray_stats.refused:
                        summary.notes += ray_stats.lines()
                        record_ray(out_dir, ray_stats.manifest_entry())
                else:
                    raise ValueError(f"unknown backend {backend!r}; use local or ray")
            summary.limits, summary.peak_rss_mb = stats.limits, stats.peak_rss_mb or None
            summary.not_run = len(todo) - summary.ran
            if guard.error_stopped is not None and summary.not_run:
                summary.stopped_by_errors = True
                summary.stopped = (f"{max_consecutive_errors} episodes in a row failed with the same error, "
                                   f"which retrying cannot fix: {guard.error_stopped}")
            elif cost_limit_usd is not None and summary.not_run and guard.stop():
                summary.stopped = (f"cost limit reached: {guard.spent_usd:.4f} USD spent"
                                   f"{' (endpoint check included)' if checked and checked.usage.cost_usd else ''}, "
                                   f"limit {cost_limit_usd:.4f} USD, no further episode fits under it")

            if report:
                for thread in warming:
                    thread.join()
                records = read_records(path).records
                summary.report = write_report(out_dir, records, scenario.analyses,
                                              title=f"rsigym report: {scenario.name}",
                                              errors=summary.analysis_errors)
        return summary
    finally:
        if early is not None:
            early.close()


def _count(summary: RunSummary, record: Trajectory) -> None:
    summary.replied.append(Trajectory(record.episode_key, record.env, record.agent, record.seed, record.rep,
                                      usage_by_role=record.usage_by_role, tool_mode=record.tool_mode))
    if record.termination == "infra_error" and (record.error or "").startswith(COST_LIMIT_PREFIX):
        summary.cost_cut += 1  # the run's own limit, not a fault: run again on resume like an infra error
    elif record.termination == "infra_error":
        summary.infra_errors += 1
        summary.infra_causes[infra_error_cause(record.error)] += 1
    elif record.termination == "agent_error":
        summary.agent_errors += 1
    summary.grader_errors += sum(g.score is None for g in record.grades)


def _set_aside_infra_errors(out_dir: Path, keys: set[str]) -> int:
    """Move the infra_error records of episodes ``keys`` (those about to run) to
    ``infra_errors.jsonl`` (kept, never deleted); returns how many."""
    path = out_dir / RECORDS_FILE
    records = read_records(path).records
    failed = [r for r in records if r.termination == "infra_error" and r.episode_key in keys]
    if failed:
        with RecordWriter(out_dir / INFRA_ERRORS_FILE) as history:
            for record in failed:
                history.write(record)
        moved = {id(r) for r in failed}
        rewrite_records(path, [r for r in records if id(r) not in moved])
    return len(failed)
