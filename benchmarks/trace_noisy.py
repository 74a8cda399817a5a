"""Families of TRACE data sets drawn from a model of noisy agents, for ``trace_calibration.py``.

The model describes how a stochastic tool-use agent behaves, not how the verdict decides:

- 50 tasks, each of one of three kinds (lookup, cancel, modify); the cancel tasks (about a third)
  use a tool the rename touches, so a name-bound grader can only be wrong on those;
- per task a success probability from Beta(1.5, 1), 1-5 routes through the task with Dirichlet(0.7)
  weights (the order of look-ups differs between runs), and three wrong end states with Dirichlet
  weights of their own (failures are not all alike);
- each run draws its route, its success and, on failure, its wrong state independently;
- a behaviour shift is heterogeneous: each task's success probability drops by ``shift`` times a
  Gamma(2, 1/2) multiplier (mean 1), clipped to [0.02, 0.98], and a failing treatment run leaves the
  known routes for a new one with probability 1/2 (an agent that fails tries something else);
- identical reruns: ``reps`` per task, or 1-4 at random (``varying``); with ``shared_seed`` every
  rerun of an arm repeats that arm's first draw (a harness that seeds by task only);
- the grader ``action_match`` is name-bound: under the rename it fails the passing treatment runs
  of the cancel tasks; ``action_match_mapped`` (the fixed ruler) scores the end state alone.

Truth by construction: no shift and no artifact is no effect; a shift alone is a behaviour change;
the artifact alone is a measurement artifact; both together are mixed.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from trace_families import NOT_ATTRIBUTED, RENAME, DataSet, Family, record

TASKS = 50
REPS = 3
KINDS = ("lookup", "cancel", "modify")  # cancel tasks call a renamed tool
NEW_ROUTE = 0.5  # chance that a failing treatment run takes a route the baseline never takes


def _task(rng: np.random.Generator) -> tuple[str, float, np.ndarray, np.ndarray]:
    """(kind, success probability, route weights, wrong-state weights) of one task."""
    routes = int(rng.integers(1, 6))
    return (KINDS[int(rng.integers(3))], float(rng.beta(1.5, 1.0)), rng.dirichlet(np.full(routes, 0.7)),
            rng.dirichlet(np.ones(3)))


def _run(rng: np.random.Generator, p: float, routes: np.ndarray, wrong: np.ndarray, new_route: float
         ) -> tuple[bool, int, str]:
    """One run: (success, route, end state)."""
    success = bool(rng.random() < p)
    route = int(rng.choice(len(routes), p=routes))
    if not success and rng.random() < new_route:
        route = len(routes)  # a route outside the baseline's
    return success, route, "db-gold" if success else f"db-x{int(rng.choice(3, p=wrong))}"


def noisy(shift: float = 0.0, *, artifact: bool = False, regrade: bool = True, reps: int = REPS,
          varying: bool = False, shared_seed: bool = False, tasks: int = TASKS
          ) -> Callable[[np.random.Generator], DataSet]:
    """A family's draw: data sets of a noisy agent under the model in the module docstring."""
    def draw(rng: np.random.Generator) -> DataSet:
        records = []
        for i in range(tasks):
            kind, p, routes, wrong = _task(rng)
            p_treat = float(np.clip(p - shift * rng.gamma(2.0, 0.5), 0.02, 0.98)) if shift else p
            runs = int(rng.integers(1, 5)) if varying else reps
            drawn: dict[str, tuple[bool, int, str]] = {}
            for rep in range(runs):
                for arm, prob, new_route in (("base", p, 0.0), ("treat", p_treat, NEW_ROUTE if shift else 0.0)):
                    if not shared_seed or arm not in drawn:
                        drawn[arm] = _run(rng, prob, routes, wrong, new_route)
                    ok, route, db = drawn[arm]
                    bound = 0.0 if artifact and arm == "treat" and kind == "cancel" else float(ok)
                    grades = {"action_match": bound, "action_match_mapped": float(ok)}
                    records.append(record(f"t{i:03d}", None if arm == "base" else RENAME, grades, rep=rep,
                                          path=route, db=db))
        return DataSet(records, RENAME["name"], "action_match", "action_match_mapped" if regrade else None)
    return draw


NULL_NOTE = "no effect mislabelled as an attribution <= 5%"
NOISY_FAMILIES = [
    Family("noisy agent, grader artifact on cancel tasks, fixed ruler", "measurement artifact",
           ("measurement artifact",), 0.80, noisy(artifact=True)),
    Family("noisy agent, grader artifact on cancel tasks, no regrade", "measurement artifact",
           ("measurement artifact", *NOT_ATTRIBUTED), 0.95, noisy(artifact=True, regrade=False),
           "never a behaviour attribution; the implicit regrade's identical pairs are concordant outcomes"),
    Family("noisy agent, shift -0.2, no regrade (50 x 3)", "behaviour change", ("behaviour change",), 0.70,
           noisy(0.2, regrade=False)),
    Family("noisy agent, shift -0.2, fixed ruler (50 x 3)", "behaviour change", ("behaviour change",), 0.80,
           noisy(0.2)),
    Family("noisy agent, shift -0.1, no regrade (50 x 3)", "behaviour change", ("behaviour change",), 0.0,
           noisy(0.1, regrade=False), "reported only: power at half the shift"),
    Family("noisy agent, no shift, fixed ruler", "no effect", NOT_ATTRIBUTED, 0.95, noisy(), NULL_NOTE),
    Family("noisy agent, no shift, no regrade", "no effect", NOT_ATTRIBUTED, 0.95, noisy(regrade=False), NULL_NOTE),
    Family("noisy agent, no shift, reruns share a seed, no regrade", "no effect", NOT_ATTRIBUTED, 0.95,
           noisy(regrade=False, shared_seed=True), NULL_NOTE),
    Family("noisy agent, no shift, reruns share a seed, fixed ruler", "no effect", NOT_ATTRIBUTED, 0.95,
           noisy(shared_seed=True), NULL_NOTE),
    Family("noisy agent, no shift, 1-4 reruns per task, no regrade", "no effect", NOT_ATTRIBUTED, 0.95,
           noisy(regrade=False, varying=True), NULL_NOTE),
    Family("noisy agent, artifact and shift -0.05 (mixed), fixed ruler", "mixed", ("mixed",), 0.0,
           noisy(0.05, artifact=True), "reported only: the rule's cost, a small behaviour part reads as an artifact"),
]
"""The families of the power table (``trace_calibration.py --noisy``)."""
