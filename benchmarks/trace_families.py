"""Simulated families of TRACE data sets with known truth, for ``trace_calibration.py``.

Each family draws a fresh data set per call, modelled on how tool-use agents behave rather than on
the verdict rules: 48 tasks (the size of the retail replication split) x 3 identical reruns (as
``trace_llm`` runs), a per-task success probability from Beta(1.5, 1) (mean 0.6, spread over
(0, 1) as pass^k curves of LLM agents show), each run taking one of 1-4 task-specific paths
(Dirichlet weights: the order of look-ups varies between runs) and ending in the gold state or
in one of two wrong states. A deterministic agent draws its outcome and path once per task.
Graders: ``reward`` and the fixed ruler ``reward_v2`` read the end state; ``action_match`` is
name-bound (it fails renamed tools) and ``action_match_mapped`` its correction.

A family gives the label(s) that count as right, the share it must reach, and whether that
share is a floor (>=) or a ceiling (<=) on the *wrong* labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Grade, Step, Trajectory, episode_key

MAPPING = {"get_order": "fetch_order", "cancel_order": "void_order"}
RENAME = {"name": "rename_tools", "params": {"mapping": MAPPING}}
HIDE = {"name": "hide_cancel", "params": {}}
PARAPHRASE = {"name": "paraphrase_descriptions", "params": {}}
MISLEAD = {"name": "misleading_names", "params": {}}
GOLD = [{"tool": "get_order", "arguments": {"order_id": "#1"}},
        {"tool": "cancel_order", "arguments": {"order_id": "#1", "reason": "no longer needed"}}]

def record(task: str, condition: dict[str, Any] | None, grades: dict[str, float | None], *, rep: int = 0,
           path: int = 0, db: str = "db-gold", termination: str = "agent_stop") -> Trajectory:
    """One ToolUse-like record. ``path`` > 0 adds an extra lookup: another way through the task
    (a behaviour difference); tools are shown renamed when the condition renames them."""
    mapping = (condition or {}).get("params", {}).get("mapping", {})
    actions = GOLD + ([{"tool": "get_order", "arguments": {"order_id": f"#{path}"}}] if path else [])
    shown = [{**a, "tool": mapping.get(a["tool"], a["tool"])} for a in actions]
    env = EnvRef("rsigym/ToolUse-v0", {"domain": "retail"}, task, condition)
    spec = AgentSpec("agent", "scripted")
    steps = [Step(t, {"text": "ok"}, a, 0.0, t == len(shown) - 1, False) for t, a in enumerate(shown)]
    final = FinalSnapshot.of({"db_sha256": db, "tool_calls": shown})
    return Trajectory(episode_key(env, spec, 0, rep), env, spec, 0, rep, steps, final, termination,
                      grades=[Grade(name, "1", score) for name, score in grades.items()])


TASKS = 48
REPS = 3
RENAME_SHARE = 0.35  # share of tasks whose gold actions use a renamed tool (12 of 25 in the controlled split)
ATTRIBUTIONS = ("behaviour change", "measurement artifact", "mixed")
NOT_ATTRIBUTED = ("no effect", "indistinguishable from noise", "inconclusive", "withheld", "insufficient data")


@dataclass(frozen=True)
class DataSet:
    records: list[Trajectory]
    treatment: str
    grader: str
    regrade: str | None


@dataclass(frozen=True)
class Family:
    name: str
    truth: str  # what is true by construction
    good: tuple[str, ...]  # labels that count as right
    target: float  # share of data sets whose label is in ``good`` must be >= target
    draw: Callable[[np.random.Generator], DataSet]
    note: str = ""


def _agent(rng: np.random.Generator, tasks: int) -> list[tuple[float, np.ndarray, int]]:
    """Per task: success probability, path weights, and which wrong state a failure usually ends in."""
    out = []
    for _ in range(tasks):
        paths = int(rng.integers(1, 5))
        out.append((float(rng.beta(1.5, 1.0)), rng.dirichlet(np.ones(paths)), int(rng.integers(2))))
    return out


def _run(rng: np.random.Generator, p: float, weights: np.ndarray) -> tuple[bool, int, str]:
    success = bool(rng.random() < p)
    path = int(rng.choice(len(weights), p=weights))
    return success, path, "db-gold" if success else f"db-x{int(rng.integers(2))}"


def _stochastic(shift: float, regrade: bool, reps: int = REPS, rerun_share: float = 1.0,
                artifact: bool = False, missing_if_failed: float = 0.0) -> Callable[[np.random.Generator], DataSet]:
    """A stochastic agent; the treatment multiplies each task's success probability by
    (1 - shift / 0.6) (a mean drop of ``shift``). ``rerun_share``: share of tasks run ``reps``
    times (the rest once: a cost limit stopped the reruns). ``artifact``: the name-bound grader
    fails the treatment runs of the tasks that use a renamed tool. ``missing_if_failed``: a
    failing treatment run ends as an infra error with that probability (long failing episodes
    hit a timeout): informative missingness."""
    def draw(rng: np.random.Generator) -> DataSet:
        condition = RENAME if artifact else HIDE
        records = []
        for i, (p, weights, _) in enumerate(_agent(rng, TASKS)):
            renamed = rng.random() < RENAME_SHARE
            runs = reps if rng.random() < rerun_share else 1
            for rep in range(runs):
                for arm, prob in (("base", p), ("treat", p * (1 - shift / 0.6))):
                    ok, path, db = _run(rng, prob, weights)
                    if artifact:
                        name_bound = 0.0 if arm == "treat" and renamed else float(ok)
                        grades = {"action_match": name_bound, "action_match_mapped": float(ok)}
                    else:
                        grades = {"reward": float(ok), "reward_v2": float(ok)}
                    rec = record(f"t{i:03d}", None if arm == "base" else condition, grades, rep=rep, path=path, db=db)
                    if arm == "treat" and not ok and rng.random() < missing_if_failed:
                        rec.termination, rec.grades = "infra_error", []
                    records.append(rec)
        grader, fixed = ("action_match", "action_match_mapped") if artifact else ("reward", "reward_v2")
        return DataSet(records, condition["name"], grader, fixed if regrade else None)
    return draw


def _deterministic_artifact(down: float, up: float, regrade: bool) -> Callable[[np.random.Generator], DataSet]:
    """A deterministic agent (one outcome and path per task, identical in every rerun and arm);
    under the treatment the grader fails a share ``down`` of the passing tasks and passes a share
    ``up`` of the failing ones (at least one task each way when the share is > 0)."""
    def draw(rng: np.random.Generator) -> DataSet:
        agent = _agent(rng, TASKS)
        outcome = [_run(rng, p, w) for p, w, _ in agent]
        passing = [i for i, (ok, _, _) in enumerate(outcome) if ok]
        failing = [i for i, (ok, _, _) in enumerate(outcome) if not ok]
        flip: dict[int, float] = {}
        for share, pool, score in ((down, passing, 0.0), (up, failing, 1.0)):
            if share > 0 and pool:
                k = max(1, int(rng.binomial(len(pool), share)))
                flip.update({int(i): score for i in rng.choice(pool, size=min(k, len(pool)), replace=False)})
        records = []
        for i, (ok, path, db) in enumerate(outcome):
            for rep in range(2):
                score = float(ok)
                records.append(record(f"t{i:03d}", None, {"judge": score, "reward": score}, rep=rep, path=path, db=db))
                records.append(record(f"t{i:03d}", PARAPHRASE, {"judge": flip.get(i, score), "reward": score},
                                      rep=rep, path=path, db=db))
        return DataSet(records, PARAPHRASE["name"], "judge", "reward" if regrade else None)
    return draw


def _regrade_hides_behaviour(rng: np.random.Generator) -> DataSet:
    """A deterministic agent under a rename: the name-bound grader fails the renamed-tool tasks,
    and 8-15 other tasks really fail (other actions, wrong state); the fixed ruler errors on
    exactly those failing treatment records (no grade), so the regrade looks closed. The truth is
    mixed; the actions and end states show the behaviour change without any grade."""
    real = set(int(i) for i in rng.choice(TASKS, size=int(rng.integers(8, 16)), replace=False))
    records = []
    for i in range(TASKS):
        renamed = i not in real and rng.random() < RENAME_SHARE
        for rep in range(2):
            records.append(record(f"t{i:03d}", None, {"action_match": 1.0, "action_match_mapped": 1.0}, rep=rep))
            fails = i in real
            records.append(record(f"t{i:03d}", RENAME, {"action_match": 0.0 if fails or renamed else 1.0,
                                                         "action_match_mapped": None if fails else 1.0},
                                  rep=rep, path=1 if fails else 0, db="db-x0" if fails else "db-gold"))
    return DataSet(records, RENAME["name"], "action_match", "action_match_mapped")


FAMILIES = [
    Family("stochastic agent, no shift, fixed ruler", "no effect", NOT_ATTRIBUTED, 0.95, _stochastic(0.0, True), "no effect mislabelled as an attribution <= 5%"),
    Family("stochastic agent, no shift, no regrade", "no effect", NOT_ATTRIBUTED, 0.95, _stochastic(0.0, False), "no effect mislabelled as an attribution <= 5%"),
    Family("stochastic agent, shift -0.2, fixed ruler", "behaviour change", ("behaviour change",), 0.80,
           _stochastic(0.2, True)),
    Family("stochastic agent, shift -0.2, no regrade", "behaviour change", ("behaviour change",), 0.0,
           _stochastic(0.2, False), "reported only: the behaviour-level test is weak for a stochastic agent"),
    Family("stochastic agent, grader artifact, reruns on 1/3 of tasks, no regrade", "measurement artifact",
           ("measurement artifact", *NOT_ATTRIBUTED), 0.95,
           _stochastic(0.0, False, rerun_share=1 / 3, artifact=True), "never behaviour change (no zero floors)"),
    Family("stochastic agent, grader artifact, reruns on 1/3 of tasks, fixed ruler", "measurement artifact",
           ("measurement artifact", *NOT_ATTRIBUTED), 0.95, _stochastic(0.0, True, rerun_share=1 / 3, artifact=True),
           "never a behaviour attribution; 48 noisy tasks rarely bound the fixed ruler within +-0.10"),
    Family("stochastic agent, shift -0.2, no reruns (reps 1), fixed ruler", "behaviour change",
           ("behaviour change",), 0.0, _stochastic(0.2, True, reps=1), "reported only: one run per task"),
    Family("certain artifact, down (deterministic agent), no regrade", "measurement artifact",
           ("measurement artifact",), 0.95, _deterministic_artifact(0.10, 0.0, False)),
    Family("certain artifact, up (deterministic agent), no regrade", "measurement artifact",
           ("measurement artifact",), 0.95, _deterministic_artifact(0.0, 0.10, False)),
    Family("certain artifact, both directions (net ~0), no regrade", "measurement artifact",
           ("measurement artifact",), 0.95, _deterministic_artifact(0.10, 0.10, False)),
    Family("certain artifact, both directions, fixed ruler", "measurement artifact",
           ("measurement artifact",), 0.95, _deterministic_artifact(0.10, 0.10, True)),
    Family("infra errors hide a behaviour drop (failing treatment runs 70% missing)", "withheld", ("withheld",),
           0.95, _stochastic(0.3, True, missing_if_failed=0.7)),
    Family("the fixed ruler's missing grades hide the behaviour part", "mixed", ("mixed", "withheld"), 0.95,
           _regrade_hides_behaviour, "real failures (other actions, wrong state) and a rename artifact: mixed, "
           "shown by the behaviour-level test whatever the missing grades say; else withheld"),
]
