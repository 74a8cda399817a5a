"""Records as an inspect_ai eval log, so ``inspect view`` opens an rsigym run.

One log per run folder: each episode is a sample (id = its episode key, so identical reruns stay
apart; agent, condition, task, seed and repetition in the sample's metadata), its steps are the
conversation (each observation a user message, each action the assistant's reply as JSON), each
grade a score named for its grader (the version, source and details in the score's metadata; a
grader error is the value "error"), usage per model, and infra errors as sample errors. The log is
built with inspect_ai's own models and written by its ``write_eval_log``, so the format is the
installed inspect_ai's; it comes with the ``inspect`` extra.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from .errors import UserError
from .records import Trajectory, utc_now
from .redact import redact
from .report import condition_label

__all__ = ["write_inspect_log"]


def _text(value: Any) -> str:
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return value["text"]
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def write_inspect_log(records: Sequence[Trajectory], path: str | Path, *, task: str) -> Path:
    """Write ``records`` as one inspect_ai eval log at ``path`` (``.eval`` or ``.json``)."""
    try:
        from inspect_ai.log import (EvalConfig, EvalDataset, EvalError, EvalLog, EvalMetric, EvalResults,
                                    EvalSample, EvalScore, EvalSpec, EvalStats, write_eval_log)
        from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput, ModelUsage
        from inspect_ai.scorer import Score
    except ImportError:
        raise UserError("export --format inspect needs inspect_ai: pip install 'rsigym[inspect]'") from None

    # redacted again: a run folder written by an older rsigym, or by hand, may still hold secrets
    records = [Trajectory.from_dict(redact(record.to_dict())) for record in records]
    samples = []
    run_usage: dict[str, Any] = {}
    scores_by_grader: dict[str, list[float]] = defaultdict(list)
    for record in records:
        messages: list[Any] = []
        for step in record.steps:
            messages.append(ChatMessageUser(content=_text(step.observation)))
            messages.append(ChatMessageAssistant(content=_text(step.action), model=record.agent.model))
        model = record.agent.model or f"rsigym/{record.agent.kind}"
        u = record.usage
        usage = ModelUsage(input_tokens=u.prompt_tokens, output_tokens=u.completion_tokens,
                           total_tokens=u.prompt_tokens + u.completion_tokens, total_cost=u.cost_usd)
        run_usage[model] = run_usage[model] + usage if model in run_usage else usage
        scores = {}
        for grade in record.grades:  # the latest grade of each grader counts, as in the report
            scores[grade.grader] = Score(
                value="error" if grade.score is None else float(grade.score), explanation=grade.error,
                metadata={"version": grade.version, "source": grade.source, "params": grade.params,
                          "details": grade.details, "computed_at": grade.computed_at})
        for name, score in scores.items():
            if isinstance(score.value, float):
                scores_by_grader[name].append(score.value)
        last_action = _text(record.steps[-1].action) if record.steps else ""
        samples.append(EvalSample(
            id=record.episode_key, epoch=1,
            input=_text(record.steps[0].observation) if record.steps else "", target="",
            messages=messages, output=ModelOutput.from_content(model=model, content=last_action),
            scores=scores or None, model_usage={model: usage},
            metadata={"agent": record.agent.id, "agent_kind": record.agent.kind, "condition":
                      condition_label(record.env.condition), "task_id": record.env.task_id, "seed": record.seed,
                      "rep": record.rep, "env_id": record.env.id, "termination": record.termination,
                      "total_reward": record.total_reward},
            error=EvalError(message=record.error or "infra_error", traceback="", traceback_ansi="")
            if record.termination == "infra_error" else None,
            started_at=record.started_at or None, completed_at=record.finished_at or None,
        ))
    models = sorted(run_usage) or ["rsigym/none"]
    log = EvalLog(
        version=2, status="success",
        eval=EvalSpec(created=utc_now(), task=task, dataset=EvalDataset(name=task, samples=len(samples)),
                      model=models[0] if len(models) == 1 else "mixed", config=EvalConfig(),
                      metadata={"exported_by": "rsigym", "models": models}),
        results=EvalResults(
            total_samples=len(samples), completed_samples=sum(r.termination != "infra_error" for r in records),
            scores=[EvalScore(name=name, scorer=name, scored_samples=len(values),
                              metrics={"mean": EvalMetric(name="mean", value=sum(values) / len(values))})
                    for name, values in sorted(scores_by_grader.items()) if values]),
        stats=EvalStats(started_at=min((r.started_at for r in records if r.started_at), default=""),
                        completed_at=max((r.finished_at or "" for r in records), default=""),
                        model_usage=run_usage),
        samples=samples,
    )
    path = Path(path)
    write_eval_log(log, str(path), format="json" if path.suffix == ".json" else "eval")
    return path
