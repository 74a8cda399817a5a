"""Records as inspect_ai eval logs, so ``inspect view`` opens an rsigym run.

One log per (agent, condition): ``inspect view`` lists logs with their model and headline scores,
so each row of its list is one cell of the report's summary table, with the same means (the
grouping and the latest-grade rule of ``rsigym.report.score_cells``). In a log, each episode is a sample
(id ``TASK seed SEED``, epoch = repetition + 1; agent, condition, task id, seed, repetition, env,
termination and episode key in its metadata); its messages are the system prompt and the steps
(``rsigym.report.inspect_messages``: tool calls as ``ToolCall``, results as ``ChatMessageTool``), each with
its timings and tokens in the message metadata; the sample has its start, end, total and working
time. Each grading rule is a score named for its grader (with version and parameters where a run
has several rules of one grader); a grader error is the value "error" and counts in no mean.
Infra errors are sample errors. The logs are built with inspect_ai's own models and written by its
``write_eval_log``, so the format is the installed inspect_ai's; it comes with the ``inspect`` extra.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import UserError, install_hint
from ..records.trajectory import Trajectory, Usage, utc_now
from ..records.redact import redact
from .report import condition_label
from .score_cells import Cell, latest_grades, rule_names, score_cells
from .stats import bootstrap_ci

__all__ = ["write_inspect_logs", "log_file_name"]


def log_file_name(agent: str, condition: str) -> str:
    """``AGENT__CONDITION-HASH.eval``: readable, safe on any file system, unique per cell."""
    def safe(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9_.=-]+", "-", text).strip("-.")[:60] or "x"

    digest = hashlib.sha256(f"{agent}\0{condition}".encode()).hexdigest()[:8]
    return f"{safe(agent)}__{safe(condition)}-{digest}.eval"


def _seconds_between(start: str | None, end: str | None) -> float | None:
    try:
        return (_dt.datetime.fromisoformat(str(end)) - _dt.datetime.fromisoformat(str(start))).total_seconds()
    except (TypeError, ValueError):
        return None


def _usage(u: Usage) -> Any:
    from inspect_ai.model import ModelUsage

    return ModelUsage(input_tokens=u.prompt_tokens, output_tokens=u.completion_tokens,
                      total_tokens=u.prompt_tokens + u.completion_tokens, total_cost=u.cost_usd)


def _sample(record: Trajectory, names: dict[Any, str], sample_id: str) -> Any:
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    from .inspect_messages import observation_text, sample_messages

    model = record.agent.model or f"rsigym/{record.agent.kind}"
    scores = {names[rule]: Score(value="error" if grade.score is None else float(grade.score),
                                 explanation=grade.error,
                                 metadata={"grader": grade.grader, "version": grade.version, "params": grade.params,
                                           "source": grade.source, "details": grade.details,
                                           "computed_at": grade.computed_at})
              for rule, grade in latest_grades(record).items()}
    u = record.usage
    return EvalSample(
        id=sample_id, epoch=record.rep + 1,
        input=observation_text(record.steps[0].observation) if record.steps else "", target="",
        messages=sample_messages(record),
        output=ModelOutput.from_content(model=model, content=observation_text(record.steps[-1].action)
                                        if record.steps else ""),
        scores=scores or None, model_usage={model: _usage(u)},
        role_usage={role: _usage(ru) for role, ru in record.usage_by_role.items()},
        metadata={"agent": record.agent.id, "agent_kind": record.agent.kind, "model": record.agent.model,
                  "condition": condition_label(record.env.condition), "condition_spec": record.env.condition,
                  "task_id": record.env.task_id, "seed": record.seed, "rep": record.rep, "env_id": record.env.id,
                  "env_kwargs": record.env.kwargs, "termination": record.termination, "error": record.error,
                  "total_reward": record.total_reward, "steps": len(record.steps),
                  "episode_key": record.episode_key, "latency_s": u.latency_s, "env_s": u.env_s,
                  "model_calls": u.model_calls, "cost_usd": u.cost_usd},
        error=EvalError(message=record.error or "infra_error", traceback="", traceback_ansi="")
        if record.termination == "infra_error" else None,
        started_at=record.started_at or None, completed_at=record.finished_at or None,
        total_time=_seconds_between(record.started_at, record.finished_at),
        working_time=u.latency_s + u.env_s,
    )


def _sample_ids(records: Sequence[Trajectory]) -> list[str]:
    """``TASK seed SEED``; where two episodes of one log share it and the epoch (env kwargs differ,
    or a record repeats an episode key), the episode key is appended so each id stays unique."""
    seen: set[tuple[str, int]] = set()
    ids = []
    for record in records:
        sample_id = f"{record.env.task_id} seed {record.seed}"
        if (sample_id, record.rep) in seen:
            sample_id += f" [{record.episode_key[:12]}]"
            while (sample_id, record.rep) in seen:
                sample_id += "+"
        seen.add((sample_id, record.rep))
        ids.append(sample_id)
    return ids


def write_inspect_logs(records: Sequence[Trajectory], out_dir: str | Path, *, task: str) -> list[Path]:
    """Write ``records`` as one inspect_ai eval log per (agent, condition) into ``out_dir``."""
    try:
        from inspect_ai.log import (EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalResults, EvalScore,
                                    EvalSpec, EvalStats, write_eval_log)
    except ImportError:
        raise UserError(f"export --format inspect needs inspect_ai: {install_hint('inspect', 'inspect_ai')}") from None

    # redacted again: a run folder written by an older rsigym, or by hand, may still hold secrets
    records = [Trajectory.from_dict(redact(record.to_dict())) for record in records]
    scores, _ = score_cells(records)
    names = rule_names({rule for record in records for rule in latest_grades(record)})
    groups: dict[Cell, list[Trajectory]] = defaultdict(list)
    for record in records:
        groups[(record.agent.id, condition_label(record.env.condition))].append(record)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for (agent, condition), members in sorted(groups.items()):
        samples = [_sample(r, names, i) for r, i in zip(members, _sample_ids(members))]
        models = sorted({r.agent.model or f"rsigym/{r.agent.kind}" for r in members})
        usage: dict[str, Any] = {}
        for record in members:
            model = record.agent.model or f"rsigym/{record.agent.kind}"
            usage[model] = usage[model] + _usage(record.usage) if model in usage else _usage(record.usage)
        results = []
        for rule in sorted(scores, key=lambda r: names[r]):
            values = scores[rule].get((agent, condition))
            if not values:
                continue
            low, high = bootstrap_ci(values)  # the report's interval: percentile, 2000 resamples, seed 0
            results.append(EvalScore(
                name=names[rule], scorer=names[rule], scored_samples=len(values),
                unscored_samples=len(members) - len(values),
                metrics={"mean": EvalMetric(name="mean", value=float(np.mean(values))),
                         "ci_low": EvalMetric(name="ci_low", value=low),
                         "ci_high": EvalMetric(name="ci_high", value=high)},
                metadata={"grader": rule[0], "version": rule[1], "params": rule[2]}))
        log = EvalLog(
            version=2, status="success",
            eval=EvalSpec(created=utc_now(), task=task, task_display_name=f"{task}: {agent} / {condition}",
                          task_args={"agent": agent, "condition": condition},
                          dataset=EvalDataset(name=task, samples=len(samples)),
                          model=models[0] if len(models) == 1 else ", ".join(models), config=EvalConfig(),
                          metadata={"exported_by": "rsigym", "agent": agent, "condition": condition,
                                    "agent_kind": members[0].agent.kind, "env_id": members[0].env.id}),
            results=EvalResults(total_samples=len(samples),
                                completed_samples=sum(r.termination != "infra_error" for r in members),
                                scores=results),
            stats=EvalStats(started_at=min((r.started_at for r in members if r.started_at), default=""),
                            completed_at=max((r.finished_at or "" for r in members), default=""),
                            model_usage=usage),
            samples=samples,
        )
        path = out_dir / log_file_name(agent, condition)
        write_eval_log(log, str(path), format="eval")
        paths.append(path)
    return paths
