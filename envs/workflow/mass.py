"""The MASS loop: execute a workflow, judge it pairwise against the incumbent, let the optimiser revise.

``execute`` runs one spec on one task with a ``RolePlayer`` through the AEC env and returns the
delivered workspace, its deterministic score (kept away from the judge and the optimiser: for
reports only) and its dialogues. ``evolve`` starts from the seed spec; each step the optimiser
proposes an edit (refused edits are retried, up to ``max_proposals``), the candidate runs on the
training tasks and meets the incumbent pairwise per task; it replaces the incumbent when it wins
more tasks than it loses (ties keep the incumbent). A losing edit joins the incumbent's
``edit_log``, so it is not proposed again. The feedback the optimiser reads is the judge's
reasons and the refusals; never the score or the grader's checks. ``random_search`` spends the
same evaluation budget on independent random candidates and keeps the one the judge prefers most.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from rsigym.llm import complete
from rsigym.records import Usage
from rsigym.sandbox import Sandbox

import numpy as np

from .aec import WorkflowAECEnv
from .agents import RolePlayer, extract_json
from .memo import ExecutionMemo
from .operators import random_spec
from .pairwise_judge import Comparer, PairwiseJudge, Verdict
from .mutations import MUTATION_SCHEMA, apply_mutation, mutation_key
from .spec import seed_spec, spec_sha256
from .tasks import new_salt, task_brief

__all__ = ["Execution", "Round", "EvolutionResult", "execute", "propose_edit", "evolve", "random_search",
           "feedback_text"]


@dataclass
class Execution:
    task_id: str
    spec_sha256: str
    files: dict[str, str]
    score: float
    output_tokens: int
    dialogues: list[dict[str, Any]]
    termination: str | None
    task_salt: str = ""


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
            sandbox: str | Sandbox = "auto", max_steps: int = 80, task_salt: str | None = None,
            memo: ExecutionMemo | None = None) -> Execution:
    """Run ``spec`` on ``task_id`` (drawn under ``task_salt``) with every role played by ``player``.

    With a ``memo`` (and a salt) a run with the same inputs (spec behaviour, task, salt, role
    model and seed) is answered from it, and program runs on an identical workspace too."""
    key = (spec_sha256(spec), task_id, task_salt, player.model, int(seed), int(max_steps))
    if memo is not None and task_salt is not None:
        found = memo.run(key)
        if found is not None:
            return found
    env = WorkflowAECEnv(spec, task_id=task_id, sandbox=sandbox, max_steps=max_steps, task_salt=task_salt, memo=memo)
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
    execution = Execution(task_id, snap["spec_sha256"], snap["files"], float(snap["score"] or 0.0), tokens,
                          snap["dialogues"], snap["termination"], snap["task_salt"])
    if memo is not None and task_salt is not None:
        memo.store_run(key, execution)
    return execution


_OPTIMIZER_SYSTEM = ("[workflow:optimize] You improve a multi-agent research workflow. Propose ONE edit of the "
                     "workflow spec as JSON following ```json\n" + json.dumps(MUTATION_SCHEMA) + "\n```")


def feedback_text(verdicts: list[Verdict], refusals: list[str]) -> str:
    """What the optimiser reads: the judge's reasons for its last verdicts, and refused edits."""
    lines = [f"- judge ({v.winner}): {reason}" for v in verdicts for reason in v.reasons[:1]]
    lines += [f"- {r}" for r in refusals]
    return "\n".join(lines) or "- no feedback yet"


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


def _judge_all(judge: Comparer, tasks: list[str], a: dict[str, Execution],
               b: dict[str, Execution]) -> list[Verdict]:
    return [judge.compare(task_brief(t), a[t].files, b[t].files) for t in tasks]


def evolve(train_tasks: list[str], *, role_model: str, judge_model: str, optimizer_model: str,
           rounds: int = 2, candidates: int = 2, seed: int = 0, sandbox: str | Sandbox = "auto",
           api_base: str | None = None, max_proposals: int = 4, start: dict[str, Any] | None = None,
           task_salt: str | None = None, judge: Comparer | None = None,
           memo: ExecutionMemo | None = None) -> EvolutionResult:
    """Evolve a workflow from ``start`` (the seed spec) on ``train_tasks``; see the module docstring.

    The evaluation budget is ``rounds * candidates`` candidate workflows, each run on every
    training task. ``task_salt`` (default: a fresh one) draws the training instances. ``judge``
    (anything with ``compare``, e.g. the ``OracleJudge`` control) replaces ``judge_model``;
    ``memo`` answers repeated runs (``memo.ExecutionMemo``).
    """
    salt = task_salt or new_salt()
    player = RolePlayer(role_model, api_base=api_base, seed=seed)
    judge = judge or PairwiseJudge(judge_model, api_base=api_base, seed=seed)
    incumbent = start or seed_spec()
    first = incumbent
    runs = {t: execute(incumbent, t, player, seed=seed, sandbox=sandbox, task_salt=salt, memo=memo)
            for t in train_tasks}
    selected = list(runs.values())
    history: list[Round] = []
    usage = Usage()
    last_verdicts: list[Verdict] = []
    for index in range(rounds * candidates):
        refusals: list[str] = []
        candidate, mutation = None, None
        for attempt in range(max_proposals):
            feedback = feedback_text(last_verdicts, refusals)
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
        trial = {t: execute(candidate, t, player, seed=seed, sandbox=sandbox, task_salt=salt, memo=memo)
                 for t in train_tasks}
        verdicts = _judge_all(judge, train_tasks, runs, trial)
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
        else:  # remembered, so the same edit is not proposed again
            incumbent = dict(incumbent, edit_log=[*incumbent.get("edit_log", []), mutation_key(mutation)])
    final = dict(incumbent, name=f"evolved-seed{seed}")
    final_sha = spec_sha256(final)
    return EvolutionResult(first, final, history, [e for e in selected if e.spec_sha256 == final_sha], usage)


def random_search(train_tasks: list[str], *, role_model: str, judge_model: str, budget: int, seed: int = 0,
                  sandbox: str | Sandbox = "auto", api_base: str | None = None, max_edits: int = 3,
                  start: dict[str, Any] | None = None, task_salt: str | None = None, judge: Comparer | None = None,
                  memo: ExecutionMemo | None = None) -> EvolutionResult:
    """``budget`` independent candidates (1 to ``max_edits`` random edits of the seed), each judged
    against the seed per task; the one with the largest wins minus losses (if above 0) is kept."""
    salt = task_salt or new_salt()
    rng = np.random.default_rng([seed, 4242])
    player = RolePlayer(role_model, api_base=api_base, seed=seed)
    judge = judge or PairwiseJudge(judge_model, api_base=api_base, seed=seed)
    base = start or seed_spec()
    runs = {t: execute(base, t, player, seed=seed, sandbox=sandbox, task_salt=salt, memo=memo) for t in train_tasks}
    best, best_margin, best_runs = base, 0, runs
    history: list[Round] = []
    usage = Usage()
    for index in range(budget):
        candidate = random_spec(base, rng, 1 + int(rng.integers(max_edits)))
        trial = {t: execute(candidate, t, player, seed=seed, sandbox=sandbox, task_salt=salt, memo=memo)
                 for t in train_tasks}
        verdicts = _judge_all(judge, train_tasks, runs, trial)
        usage += sum((v.usage for v in verdicts), Usage())
        wins = sum(v.winner == "b" for v in verdicts)
        losses = sum(v.winner == "a" for v in verdicts)
        history.append(Round(index, {"edits": candidate.get("edit_log", [])}, [], wins - losses > best_margin, wins,
                             losses, len(verdicts) - wins - losses, verdicts,
                             [trial[t].score for t in train_tasks], [runs[t].score for t in train_tasks]))
        if wins - losses > best_margin:
            best, best_margin, best_runs = candidate, wins - losses, trial
    final = dict(best, name=f"random-search-seed{seed}")
    return EvolutionResult(base, final, history, list(best_runs.values()), usage)
