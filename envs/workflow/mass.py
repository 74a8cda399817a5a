"""The MASS loop: execute a workflow, judge it pairwise against the incumbent, let the optimiser revise.

``execute`` runs one spec on one task with a ``RolePlayer`` through the AEC env and returns the
delivered workspace, its deterministic score (kept away from the judge and the optimiser) and
its dialogues. ``evolve`` starts from the seed spec; each round the optimiser proposes edits
(refused edits are retried, up to ``max_proposals``), each candidate runs on the training tasks
and meets the incumbent pairwise per task; it replaces the incumbent when it wins more tasks
than it loses (ties keep the incumbent). A losing edit joins the incumbent's ``edit_log``, so
the operators refuse it next time. The feedback the optimiser reads names the problems the
key-free checks and the judge saw; never the score.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from rsigym.llm import complete
from rsigym.records import Usage
from rsigym.sandbox import Sandbox

from .aec import WorkflowAECEnv
from .agents import RolePlayer, extract_json
from .pairwise_judge import PairwiseJudge, Verdict
from .mutations import MUTATION_SCHEMA, apply_mutation, mutation_key
from .spec import seed_spec, spec_sha256
from .tasks import check_workspace, make_task

__all__ = ["Execution", "Round", "EvolutionResult", "execute", "propose_edit", "evolve", "feedback_text"]


@dataclass
class Execution:
    task_id: str
    spec_sha256: str
    files: dict[str, str]
    score: float
    output_tokens: int
    dialogues: list[dict[str, Any]]
    termination: str | None


@dataclass
class Round:
    index: int
    mutation: dict[str, Any] | None
    refusals: list[str]
    accepted: bool
    wins: int = 0
    losses: int = 0
    ties: int = 0
    verdicts: list[Verdict] = field(default_factory=list)
    candidate_scores: list[float] = field(default_factory=list)
    incumbent_scores: list[float] = field(default_factory=list)


@dataclass
class EvolutionResult:
    seed_spec: dict[str, Any]
    final_spec: dict[str, Any]
    rounds: list[Round]
    selected: list[Execution]      # executions of every accepted workflow (the SFT source)
    usage: Usage


def execute(spec: dict[str, Any], task_id: str, player: RolePlayer, *, seed: int,
            sandbox: str | Sandbox = "auto", max_steps: int = 80) -> Execution:
    """Run ``spec`` on ``task_id`` with every role played by ``player``."""
    env = WorkflowAECEnv(spec, task_id=task_id, sandbox=sandbox, max_steps=max_steps)
    try:
        env.reset(seed=seed)
        player.reset(seed)
        tokens = 0
        for agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            action, usage = player.act(observation)
            tokens += usage.completion_tokens
            env.step(action)
        snap = env.snapshot()
    finally:
        env.close()
    return Execution(task_id, snap["spec_sha256"], snap["files"], float(snap["score"] or 0.0), tokens,
                     snap["dialogues"], snap["termination"])


_OPTIMIZER_SYSTEM = ("[workflow:optimize] You improve a multi-agent research workflow. Propose ONE edit of the "
                     "workflow spec as JSON following ```json\n" + json.dumps(MUTATION_SCHEMA) + "\n```")


def feedback_text(executions: list[Execution], verdicts: list[Verdict], refusals: list[str]) -> str:
    """What the optimiser reads: key-free checks and the judge's reasons per task, and refusals."""
    lines = []
    for execution in executions:
        checks = check_workspace(make_task(execution.task_id), execution.files)
        method = (checks["results"] or {}).get("method")
        problems = [checks["results_error"]] if checks["results_error"] else []
        if method and not any(w in method.lower() for w in ("held-out", "cross-validation", "least squares",
                                                                 "bonferroni", "mahalanobis", "permutation")):
            problems.append(f"method '{method}' is not validated")
        if checks["report_missing_sections"]:
            problems.append(f"report.md lacks sections {checks['report_missing_sections']}")
        lines.append(f"- {execution.task_id}: {'; '.join(problems) or 'no problem found'} "
                     f"({execution.output_tokens} output tokens)")
    lines += [f"- judge: {reason}" for v in verdicts for reason in v.reasons[:1]]
    lines += [f"- {r}" for r in refusals]
    return "\n".join(lines)


def propose_edit(spec: dict[str, Any], feedback: str, *, model: str, api_base: str | None = None,
                 seed: int = 0) -> tuple[dict[str, Any] | None, Any, Usage]:
    """Ask ``model`` for one edit; ``(revised spec or None, the proposed edit or refusal text, usage)``."""
    user = f"Current workflow:\n{json.dumps(spec, sort_keys=True)}\n\nFeedback:\n{feedback}"
    reply = complete([{"role": "system", "content": _OPTIMIZER_SYSTEM}, {"role": "user", "content": user}],
                     model=model, role="optimizer", api_base=api_base, json_schema=MUTATION_SCHEMA,
                     params={"temperature": 0.7, "seed": seed}, rng=random.Random(seed))
    mutation = extract_json(reply.text)
    revised, refusal = apply_mutation(spec, mutation)
    return revised, (mutation if revised is not None else refusal), reply.usage


def evolve(train_tasks: list[str], *, role_model: str, judge_model: str, optimizer_model: str,
           rounds: int = 2, candidates: int = 2, seed: int = 0, sandbox: str | Sandbox = "auto",
           api_base: str | None = None, max_proposals: int = 4,
           start: dict[str, Any] | None = None) -> EvolutionResult:
    """Evolve a workflow from ``start`` (the seed spec) on ``train_tasks``; see the module docstring."""
    player = RolePlayer(role_model, api_base=api_base, seed=seed)
    judge = PairwiseJudge(judge_model, api_base=api_base, seed=seed)
    incumbent = start or seed_spec()
    first = incumbent
    runs = {t: execute(incumbent, t, player, seed=seed, sandbox=sandbox) for t in train_tasks}
    selected = list(runs.values())
    history: list[Round] = []
    usage = Usage()
    last_verdicts: list[Verdict] = []
    for index in range(rounds * candidates):
        refusals: list[str] = []
        candidate, mutation = None, None
        for attempt in range(max_proposals):
            feedback = feedback_text(list(runs.values()), last_verdicts, refusals)
            candidate, proposal, spent = propose_edit(incumbent, feedback, model=optimizer_model, api_base=api_base,
                                                      seed=seed * 1009 + index * 31 + attempt)
            usage += spent
            if candidate is not None:
                mutation = proposal
                break
            refusals.append(str(proposal))
        if candidate is None:
            history.append(Round(index, None, refusals, False))
            continue
        assert mutation is not None
        trial = {t: execute(candidate, t, player, seed=seed, sandbox=sandbox) for t in train_tasks}
        verdicts = [judge.compare(make_task(t), runs[t].files, trial[t].files) for t in train_tasks]
        usage += sum((v.usage for v in verdicts), Usage())
        wins = sum(v.winner == "b" for v in verdicts)
        losses = sum(v.winner == "a" for v in verdicts)
        record = Round(index, mutation, refusals, wins > losses, wins, losses, len(verdicts) - wins - losses,
                       verdicts, [trial[t].score for t in train_tasks], [runs[t].score for t in train_tasks])
        history.append(record)
        last_verdicts = verdicts
        if record.accepted:
            incumbent, runs = candidate, trial
            selected += list(trial.values())
        else:  # remembered, so the operators refuse the same edit next time
            incumbent = dict(incumbent, edit_log=[*incumbent.get("edit_log", []), mutation_key(mutation)])
    final = dict(incumbent, name=f"evolved-seed{seed}")
    final_sha = spec_sha256(final)
    return EvolutionResult(first, final, history, [e for e in selected if e.spec_sha256 == final_sha], usage)
