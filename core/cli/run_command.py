"""``rsigym run``: scenario overrides (``--model``, ``--set``, ...), the dry-run plan, the summary.

Split from ``rsigym.cli`` (the parser and the other commands) to keep each module short. Every
mistake is a ``UserError`` raised before any episode runs; the exit status says how the run went
(0: every episode ran, 1: more infra errors than ``--max-infra-errors`` or an analysis failed).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from ..errors import UserError
from ..records.redact import redact_text
from ..scenario.safe_yaml import load_yaml

__all__ = ["run_command", "apply_set", "EXIT_RUN_FAILED", "EXIT_STOPPED"]

EXIT_RUN_FAILED = 1
EXIT_STOPPED = 3  # a limit the user set (--cost-limit) ended the run before every episode ran


def check_run_flags(args: argparse.Namespace) -> None:
    """The flags' own ranges, checked before anything heavy is imported: a mistake is refused at once."""
    if args.workers is not None and args.workers < 0:
        raise UserError(f"--workers must be >= 0, got {args.workers}")
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be >= 1, got {args.limit}")
    if args.max_infra_errors < 0:
        raise UserError(f"--max-infra-errors must be >= 0, got {args.max_infra_errors}")
    if args.max_connections is not None and args.max_connections < 1:
        raise UserError(f"--max-connections must be >= 1, got {args.max_connections}")
    if args.concurrency is not None and args.concurrency < 1:
        raise UserError(f"--concurrency must be >= 1, got {args.concurrency}")
    if args.cost_limit is not None and not args.cost_limit >= 0:
        raise UserError(f"--cost-limit must be a number of USD >= 0, got {args.cost_limit}")
    if args.max_consecutive_errors < 0:
        raise UserError(f"--max-consecutive-errors must be >= 0, got {args.max_consecutive_errors}")
    if args.episode_timeout is not None and not args.episode_timeout >= 0:
        raise UserError(f"--episode-timeout must be a number of seconds >= 0 (0: none), got {args.episode_timeout}")


def run_command(args: argparse.Namespace) -> int:
    """The ``run`` command: check everything, then run (or print the plan), then summarise."""
    check_run_flags(args)
    from ..scenario.manifest import next_free_folder
    from ..scenario.preflight import check_scenario
    from ..runner import run_scenario, select_episodes
    from ..runner.progress import ProgressMode
    from ..scenario.spec import expand, load_scenario, parse_scenario

    scenario = load_scenario(args.scenario)
    if args.set:
        scenario = parse_scenario(apply_set(scenario.raw, args.set), scenario.source)
    scenario = _override_llm_agents(scenario, args.model, args.api_base)
    scenario = _override_user_model(scenario, args.user_model)
    scenario = _override_judge_model(scenario, args.judge_model)
    backend = args.backend or scenario.runner.get("backend", "local")
    default_workers = 1 if backend == "ray" else min(4, os.cpu_count() or 1)  # on Ray: per CPU of each node
    workers = args.workers if args.workers is not None else scenario.runner.get("workers", default_workers)
    if workers < 0:
        raise UserError(f"the scenario's runner.workers must be >= 0, got {workers}")
    tasks = [t.strip() for item in args.tasks for t in item.split(",") if t.strip()] if args.tasks else None
    check_scenario(scenario, environ=os.environ)
    episodes = select_episodes(expand(scenario), tasks=tasks, limit=args.limit)
    out_dir = args.out or Path("runs") / scenario.name
    if args.force_new:
        out_dir = next_free_folder(out_dir)
    if args.dry_run:
        _print_plan(scenario, episodes, out_dir, args.episode_timeout)
        return 0
    if args.force_new:
        print(f"rsigym: new run folder {out_dir}", file=sys.stderr)

    progress: ProgressMode = "none" if args.no_progress else ("bar" if sys.stderr.isatty() else "plain")
    summary = run_scenario(scenario, out_dir, backend=backend, workers=workers, address=args.address,
                           progress=progress, retry_infra_errors=not args.keep_infra_errors,
                           tasks=tasks, limit=args.limit, imports=args.imports, preflight=False,
                           cost_limit_usd=args.cost_limit, episode_timeout_s=args.episode_timeout,
                           concurrency=args.concurrency, max_connections=args.max_connections,
                           endpoint_check=not args.no_endpoint_check,
                           max_consecutive_errors=args.max_consecutive_errors,
                           on_warnings=_print_early_warnings)
    _print_capacity(summary)
    from ..runner.capacity import HOSTED_EPISODE_TIMEOUT_S

    defaulted = [agent for agent, timeout_s in summary.episode_timeouts.items() if timeout_s]
    if args.episode_timeout is None and defaulted:
        print(f"rsigym: episode timeout {HOSTED_EPISODE_TIMEOUT_S:g} s for {', '.join(defaulted)} (the default for a "
              "hosted model; --episode-timeout S sets another, 0 none)", file=sys.stderr)
    return _print_summary(summary, args.max_infra_errors)


def _print_early_warnings(lines: list[str]) -> None:
    """Before the first episode: the endpoint check's warnings and every automatic choice."""
    for line in lines:
        print(f"rsigym: {line}", file=sys.stderr, flush=True)


def _print_capacity(summary: Any) -> None:
    """What the runner changed from the request, episodes in flight, and what the provider gates saw."""
    from ..llm.limits import format_stats

    checked = summary.endpoint_check
    if checked is not None and checked.endpoints:
        print(f"endpoint check: {len(checked.endpoints)} endpoint{'s' if len(checked.endpoints) > 1 else ''} "
              f"answered before the first episode ({checked.usage.model_calls} calls, "
              f"{checked.usage.cost_usd:.6f} USD)", file=sys.stderr)
    for note in summary.notes:
        print(f"rsigym: {redact_text(note)}", file=sys.stderr)
    if summary.concurrency > 1 or summary.limits:
        memory = f", peak worker memory {summary.peak_rss_mb:.0f} MiB" if summary.peak_rss_mb else ""
        print(f"in flight: up to {summary.concurrency} episodes per worker, {max(summary.workers, 1)} "
              f"worker{'s' if summary.workers > 1 else ''}{memory}")
    for stats in summary.limits:
        print(redact_text(format_stats(stats)))  # the provider is an api_base: userinfo, query


def _print_summary(summary: Any, max_infra_errors: int) -> int:
    if summary.bad_lines_moved:
        print(f"rsigym: moved {summary.bad_lines_moved} unreadable lines of records.jsonl to "
              "records.jsonl.bad (with their line numbers)", file=sys.stderr)
    if summary.duplicate_keys:
        print(f"rsigym: warning: {summary.duplicate_keys} records repeat an earlier record's episode key",
              file=sys.stderr)
    retried = f" ({summary.infra_retried} earlier infra errors run again)" if summary.infra_retried else ""
    print(f"{summary.total} episodes: {summary.skipped} already recorded, {summary.ran} run now{retried}, "
          f"{summary.infra_errors} infra errors; records in {summary.out_dir / 'records.jsonl'}")
    cut = f", {summary.cost_cut} cut off at their share of the cost limit" if summary.cost_cut else ""
    print(f"run now: {summary.ran - summary.infra_errors - summary.agent_errors - summary.cost_cut} finished, "
          f"{summary.agent_errors} agent errors, {summary.infra_errors} infra errors{cut}, "
          f"{summary.grader_errors} grader errors")
    for cause, count in summary.infra_causes.most_common():
        print(f"  infra error x{count}: {redact_text(cause)}")
    from ..report.reply_quality import reply_lines, reply_rates, reply_warnings

    rates = reply_rates(summary.replied)
    for line in reply_lines(rates):
        print(f"replies: {line}")
    for line in reply_warnings(rates):
        print(f"rsigym: warning: {line}", file=sys.stderr)
    estimated = summary.usage_estimated
    if estimated:  # once per run: the provider's word on tokens was not taken for these calls
        print(f"rsigym: warning: {estimated} model calls came back with a usage report that was missing, negative "
              "or not a number; their tokens were counted locally (LiteLLM's token counter) and priced from that "
              "(usage_estimated in the records)", file=sys.stderr)
    if summary.report:
        print(f"report: {summary.report}")
    status = 0
    for line in summary.analysis_errors:
        print(f"rsigym: error: {redact_text(line)} (the other report sections were written)", file=sys.stderr)
        status = EXIT_RUN_FAILED
    if summary.stopped and summary.stopped_by_errors:
        cancelled = (f", {summary.cancelled} of them in flight and cancelled when it stopped"
                     if summary.cancelled else "")
        print(f"rsigym: error: stopped early, {redact_text(summary.stopped)}; {summary.not_run} episodes not "
              f"started or not recorded{cancelled}. Next: fix the cause, then run the same command again "
              "(the recorded episodes with this error run again too)", file=sys.stderr)
        return EXIT_RUN_FAILED  # one next step: the infra-error count below says the same thing again
    elif summary.stopped:
        print(f"rsigym: stopped early, {summary.stopped}; {summary.not_run} episodes not run (run the same "
              "command again to resume them)", file=sys.stderr)
        status = EXIT_STOPPED
    if summary.infra_errors > max_infra_errors:
        print(f"rsigym: error: {summary.infra_errors} infra errors, more than --max-infra-errors "
              f"{max_infra_errors} (causes above); run the same command again to retry them",
              file=sys.stderr)
        status = EXIT_RUN_FAILED
    return status


def _print_plan(scenario: Any, episodes: list[Any], out_dir: Path, timeout_s: float | None = None) -> None:
    """The episode plan of ``--dry-run``: counts per agent, what is recorded already, known costs."""
    from ..records.jsonl import read_records
    from ..runner import RECORDS_FILE
    from ..runner.capacity import episode_timeout_s

    recorded = read_records(out_dir / RECORDS_FILE).records if (out_dir / RECORDS_FILE).exists() else []
    done = {r.episode_key for r in recorded}
    todo = [e for e in episodes if e.key not in done]
    tasks = list(dict.fromkeys(e.env.task_id for e in episodes))
    print(f"plan: {scenario.name} ({scenario.env_id}) into {out_dir}")
    print(f"  {len(episodes)} episodes = {len(tasks)} tasks x {len(scenario.conditions)} conditions x "
          f"{len(scenario.agents)} agents x {len(scenario.seeds)} seeds x {scenario.reps} reps; "
          f"max_steps {scenario.max_steps}")
    print(f"  already recorded: {len(episodes) - len(todo)}; to run: {len(todo)}")
    per_agent = Counter(e.agent.id for e in todo)
    cost_seen: dict[str, list[float]] = {}
    for record in recorded:
        cost_seen.setdefault(record.agent.id, []).append(record.usage.cost_usd)
    total, unknown = 0.0, []
    for agent in scenario.agents:
        n = per_agent[agent.id]
        model = agent.model or ""
        if not model or model.startswith("rsigym/"):
            cost = "$0 (no hosted model)"
        elif cost_seen.get(agent.id):
            per_episode = sum(cost_seen[agent.id]) / len(cost_seen[agent.id])
            total += per_episode * n
            cost = f"~${per_episode * n:.4f} (${per_episode:.4f}/episode, from {len(cost_seen[agent.id])} recorded)"
        else:
            cost = "unknown (no recorded episode of this agent yet)"
            unknown.append(agent.id)
        wall = episode_timeout_s(timeout_s, agent.model, scenario.env_kwargs)
        print(f"  agent {agent.id} ({agent.kind}{', ' + model if model else ''}): {n} episodes to run; cost {cost}; "
              f"episode timeout {f'{wall:g} s' if wall else 'none'}")
    print(f"  graders: {', '.join(g.name for g in scenario.graders) or 'none'}; "
          f"analyses: {', '.join(a.name for a in scenario.analyses)}")
    print(f"  cost estimate: ${total:.4f}" + (f" plus unknown for {', '.join(unknown)}" if unknown else ""))


_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def apply_set(raw: dict[str, Any], assignments: list[str]) -> dict[str, Any]:
    """A copy of a scenario with ``--set key.path=value`` applied (value read as YAML).

    Paths use dots and list indices: ``max_steps=5``, ``env.kwargs.sandbox=local``,
    ``agents[0].model=rsigym/random``. A missing mapping key is created; a missing list index
    or a step into a scalar is a ``UserError``.
    """
    data = yaml.safe_load(yaml.safe_dump(raw))  # a deep copy of plain data
    for item in assignments:
        path, sep, text = item.partition("=")
        if not sep or not path.strip():
            raise UserError(f"--set expects KEY=VALUE (e.g. max_steps=5), got {item!r}")
        parts = [m.group(1) if m.group(1) is not None else int(m.group(2)) for m in _PART.finditer(path.strip())]
        value = load_yaml(text, f"--set {path}")
        target: Any = data
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            where = _path_text(parts[:i + 1])
            if isinstance(part, int):
                if not isinstance(target, list) or not -len(target) <= part < len(target):
                    raise UserError(f"--set {path}: {where}: no such list entry")
            elif not isinstance(target, dict):
                raise UserError(f"--set {path}: {_path_text(parts[:i]) or '(top level)'} is not a mapping")
            if last:
                target[part] = value
            else:
                if isinstance(target, dict) and part not in target:
                    target[part] = {}
                target = target[part]
    return data


def _path_text(parts: list[Any]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(parts))


def _override_llm_agents(scenario: Any, model: str | None, api_base: str | None) -> Any:
    """Apply --model and --api-base to every agent that uses a model (kind ``llm``, or any agent
    entry that names a ``model``, such as ``oneshot_llm`` and ``evoalloc``), in the scenario and in
    its saved copy."""
    if model is None and api_base is None:
        return scenario

    def uses_model(entry: dict[str, Any]) -> bool:
        return entry["kind"] == "llm" or "model" in entry

    if not any(uses_model(a) for a in scenario.raw["agents"]):
        flag = "--model" if model is not None else "--api-base"
        raise UserError(f"{flag}: scenario {scenario.name!r} has no agent that uses a model")

    def override(entry: dict[str, Any]) -> dict[str, Any]:
        if not uses_model(entry):
            return entry
        entry = dict(entry, params=dict(entry.get("params") or {}))
        if model is not None:
            entry["model"] = model
        if api_base is not None:
            entry["params"]["api_base"] = api_base
        return entry

    from ..scenario.spec import parse_scenario

    raw = dict(scenario.raw, agents=[override(a) for a in scenario.raw["agents"]])
    return parse_scenario(raw, scenario.source)


def _override_user_model(scenario: Any, model: str | None) -> Any:
    """Apply --user-model: the env's simulated user (``env.kwargs.user``) becomes an LLM user."""
    if model is None:
        return scenario
    kwargs = dict(scenario.raw["env"].get("kwargs") or {})
    if "user" not in kwargs:
        raise UserError(f"--user-model: scenario {scenario.name!r} names no simulated user (env.kwargs.user)")
    user = kwargs["user"]
    if isinstance(user, dict) and user.get("kind") == "llm":
        kwargs["user"] = dict(user, model=model)
    else:  # a scripted user: keep what an LLM user also takes
        kept = {k: v for k, v in user.items() if k == "max_replies"} if isinstance(user, dict) else {}
        kwargs["user"] = {"kind": "llm", "model": model, **kept}
    from ..scenario.spec import parse_scenario

    return parse_scenario(dict(scenario.raw, env=dict(scenario.raw["env"], kwargs=kwargs)), scenario.source)


def _override_judge_model(scenario: Any, model: str | None) -> Any:
    """Apply --judge-model to every grader of the scenario that has a ``model`` (an LLM judge)."""
    if model is None:
        return scenario
    from ..grader import get_grader
    from ..scenario.spec import NamedSpec, parse_scenario

    graders, judges = [], 0
    for entry in scenario.raw.get("graders") or []:
        spec = NamedSpec.parse(entry)
        try:
            judge = hasattr(get_grader(spec.name, **spec.params), "model")
        except Exception:  # a bad grader entry: the scenario check names it
            judge = False
        judges += judge
        graders.append({"name": spec.name, "params": dict(spec.params, model=model)} if judge else entry)
    if not judges:
        raise UserError(f"--judge-model: scenario {scenario.name!r} has no grader that uses a model (e.g. llm_judge)")
    return parse_scenario(dict(scenario.raw, graders=graders), scenario.source)


