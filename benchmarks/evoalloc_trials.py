"""EvoAlloc's acceptance rule on simulated trials of 10 to 200 candidates, from a model of allocators.

The model describes candidates and allocation policies, not the rule:

- a candidate has a latent quality u ~ U(0, 1) and is a new best when u > 0.9 (a 10% rate); the
  allocator sees a stage-0 signal u + N(0, 0.15) (what the code and the parent say) and, after a
  partial evaluation, a sharper one u + N(0, 0.05);
- a policy discards below a threshold, evaluates fully above another, runs a partial evaluation in
  between and continues to the full one when the partial signal clears a third; each decision has
  its own N(0, 0.1) noise (an LLM's sampling): two runs of one policy disagree at random;
- the incumbent executes; the challenger shadows it: its decision after a partial evaluation is
  asked only when the incumbent ran that partial evaluation too (otherwise its path is an
  *unobserved partial*); a candidate the incumbent did not evaluate fully is explored (its full
  result revealed) with probability ``EXPLORE_P``; the run's 60 earlier candidates give the rule
  its prior new-best rate.

Challengers: *equivalent* (the same policy, its own noise), *5% costlier* (it also fully evaluates
a share of the candidates it would turn away that are not new bests), *5 points fewer new bests*
(it turns away a share of the new bests it would evaluate, and spends as much on other candidates),
*20% cheaper at the same catch rate* (it turns away a share of the non-new-best candidates it would
evaluate). Each share is solved numerically so the cost or catch rate moves by the stated amount,
and the measured cost and catch rate of every policy are printed.

Run: ``python benchmarks/evoalloc_trials.py [--trials 1000] [--lengths 10,30,100] [--results FILE]``
prints acceptance per challenger and trial length with exact CIs and the smallest length that meets
every target; ``--power FILE`` prints the table of docs/families/evolution.md from a results file
(``benchmarks/results/evoalloc_trials.json``).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
from rich.console import Console
from scipy.stats import binomtest

from rsigym.envs.evolution.acceptance import Case, accept_challenger, prior_new_best_rate

EXPLORE_P = 0.1
PARTIAL_COST = 8 / 30
NEW_BEST = 0.9  # u above this is a new best
TARGETS = {"equivalent": ("<=", 0.05), "5% costlier": ("<=", 0.05), "5 points fewer new bests": ("<=", 0.05),
           "20% cheaper, same catch rate": (">=", 0.80)}


@dataclass(frozen=True)
class Policy:
    """Thresholds of the stage-0 signal (discard below ``discard``, full above ``full``, partial
    between) and of the partial signal (continue above ``carry``); ``waste``: chance to evaluate
    fully a non-new-best candidate it would turn away; ``drop_best``: chance to turn away a new
    best it would evaluate fully; ``drop_other``: chance to discard a non-new-best candidate it
    would evaluate."""

    discard: float = 0.55
    full: float = 0.85
    carry: float = 0.8
    noise: float = 0.1
    waste: float = 0.0
    drop_best: float = 0.0
    drop_other: float = 0.0

    def first(self, rng: np.random.Generator, u: float, signal: float) -> str:
        x = signal + rng.normal(0, self.noise)
        path = "discard" if x < self.discard else "full" if x > self.full else "partial"
        best = u > NEW_BEST
        if path != "discard" and not best and rng.random() < self.drop_other:
            return "discard"
        if path == "full" and best and rng.random() < self.drop_best:
            return "discard"
        if path == "discard" and not best and rng.random() < self.waste:
            return "full"
        return path

    def carry_on(self, rng: np.random.Generator, u: float, partial: float) -> bool:
        go = partial + rng.normal(0, self.noise) > self.carry
        if go and u > NEW_BEST and rng.random() < self.drop_best:
            return False
        return go


def _signals(rng: np.random.Generator) -> tuple[float, float, float]:
    u = float(rng.random())
    return u, u + float(rng.normal(0, 0.15)), u + float(rng.normal(0, 0.05))


def _cost(path: str) -> float:
    return {"discard": 0.0, "partial": PARTIAL_COST, "full": 1.0, "partial+full": 1.0}[path]


def _path(policy: Policy, rng: np.random.Generator, u: float, signal: float, partial: float) -> str:
    first = policy.first(rng, u, signal)
    if first != "partial":
        return first
    return "partial+full" if policy.carry_on(rng, u, partial) else "partial"


def measure(policy: Policy, n: int = 20000, seed: int = 99) -> tuple[float, float]:
    """(mean cost per candidate, share of new bests evaluated fully) of ``policy`` acting alone."""
    rng = np.random.default_rng(seed)
    cost = caught = bests = 0.0
    for _ in range(n):
        u, signal, partial = _signals(rng)
        path = _path(policy, rng, u, signal, partial)
        cost += _cost(path)
        if u > NEW_BEST:
            bests += 1
            caught += path in ("full", "partial+full")
    return cost / n, caught / bests


def _solve(make: Callable[[float], Policy], target: Callable[[Policy], float]) -> Policy:
    """The policy ``make(share)`` whose ``target`` is 0, by bisection on share in [0, 1]."""
    low, high = 0.0, 1.0
    for _ in range(12):
        mid = (low + high) / 2
        low, high = (mid, high) if target(make(mid)) < 0 else (low, mid)
    return make((low + high) / 2)


def challengers(incumbent: Policy, candidates: int = 20000) -> dict[str, Policy]:
    """The four challengers of the module docstring, their shares solved against ``incumbent``
    (each policy measured on ``candidates`` simulated candidates)."""
    def m(p: Policy) -> tuple[float, float]:
        return measure(p, candidates)

    cost0, catch0 = m(incumbent)
    costlier = _solve(lambda w: Policy(waste=w), lambda p: m(p)[0] / cost0 - 1.05)
    fewer_best = _solve(lambda w: Policy(drop_best=w), lambda p: catch0 - m(p)[1] - 0.05)
    fewer = _solve(lambda w: Policy(drop_best=fewer_best.drop_best, waste=w), lambda p: m(p)[0] - cost0)
    cheaper = _solve(lambda w: Policy(drop_other=w), lambda p: 0.80 - m(p)[0] / cost0)
    return {"equivalent": incumbent, "5% costlier": costlier, "5 points fewer new bests": fewer,
            "20% cheaper, same catch rate": cheaper}


def trial(rng: np.random.Generator, incumbent: Policy, challenger: Policy, length: int) -> list[Case]:
    """One trial of ``length`` candidates: the incumbent executes, the challenger shadows."""
    cases = []
    for _ in range(length):
        u, signal, partial = _signals(rng)
        inc_first, ch_first = incumbent.first(rng, u, signal), challenger.first(rng, u, signal)
        inc = inc_first if inc_first != "partial" else (
            "partial+full" if incumbent.carry_on(rng, u, partial) else "partial")
        if ch_first != "partial":
            ch = ch_first
        elif inc_first == "partial":  # the partial result is on screen: its next decision is asked
            ch = "partial+full" if challenger.carry_on(rng, u, partial) else "partial"
        else:
            ch = "partial?"  # never asked past the partial evaluation it wanted
        full = inc in ("full", "partial+full")
        explored = not full and rng.random() < EXPLORE_P
        best = u > NEW_BEST
        cases.append(Case(inc, ch, best if full or explored else None, counterfactual=explored))
    return cases


def history(rng: np.random.Generator, incumbent: Policy, n: int = 60) -> list[Case]:
    """The run's experience before the trial (the incumbent alone)."""
    return trial(rng, incumbent, incumbent, n)


def acceptance(incumbent: Policy, challenger: Policy, length: int, trials: int, seed: int,
               accept: Callable[..., bool] | None = None) -> int:
    """How many of ``trials`` trials accept ``challenger`` (``accept(cases, prior)``: the rule)."""
    rng = np.random.default_rng(seed)
    accepted = 0
    for _ in range(trials):
        prior = prior_new_best_rate(history(rng, incumbent), EXPLORE_P)
        cases = trial(rng, incumbent, challenger, length)
        if accept is None:
            accepted += accept_challenger(cases, PARTIAL_COST, explore_p=EXPLORE_P, prior_rate=prior).accepted
        else:
            accepted += accept(cases, prior)
    return accepted


def _ci(k: int, n: int) -> str:
    ci = binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"[{ci.low:.1%}, {ci.high:.1%}]"


def meets(name: str, rate: float) -> bool:
    op, bound = TARGETS[name]
    return rate <= bound if op == "<=" else rate >= bound


def run(lengths: list[int], trials: int, seed: int = 0, candidates: int = 20000) -> dict[str, Any]:
    """Acceptance counts per challenger and trial length, with the policies' measured cost and
    catch rate (on ``candidates`` simulated candidates): the content of the results file."""
    incumbent = Policy()
    pool = challengers(incumbent, candidates)
    cost0, catch0 = measure(incumbent, candidates)
    policies = {"incumbent": [round(cost0, 4), round(catch0, 4)]}
    policies.update({name: [round(v, 4) for v in measure(p, candidates)] for name, p in pool.items()})
    accepted = {str(n): {name: acceptance(incumbent, policy, n, trials, seed + i)
                         for i, (name, policy) in enumerate(pool.items())} for n in lengths}
    return {"trials": trials, "seed": seed, "explore_p": EXPLORE_P, "policies": policies, "accepted": accepted}


def smallest_length(results: dict[str, Any]) -> int | None:
    """The smallest trial length whose every challenger meets its target, None if none does."""
    n = results["trials"]
    met = [int(length) for length, counts in results["accepted"].items()
           if all(meets(name, k / n) for name, k in counts.items())]
    return min(met) if met else None


POWER_BEGIN = "<!-- evoalloc-power:begin (rendered from benchmarks/results/evoalloc_trials.json) -->"
POWER_END = "<!-- evoalloc-power:end -->"


def power_table(results: dict[str, Any]) -> str:
    """The docs page's table: acceptance per challenger and trial length with exact 95% CIs, the
    policies' measured cost and catch rate, and the smallest length that meets every target."""
    n = results["trials"]
    names = list(TARGETS)
    cost0 = results["policies"]["incumbent"][0]
    lines = [POWER_BEGIN, "", "| challenger | cost vs incumbent | new bests caught | target |", "|---|---:|---:|---|"]
    lines.append(f"| incumbent | - | {results['policies']['incumbent'][1]:.1%} | - |")
    for name in names:
        cost, catch = results["policies"][name]
        op, bound = TARGETS[name]
        lines.append(f"| {name} | {cost / cost0 - 1:+.1%} | {catch:.1%} | accepted {op} {bound:.0%} |")
    lines += ["", "| candidates per trial | " + " | ".join(names) + " | every target met |",
              "|---:|" + "---|" * len(names) + "---|"]
    for length, counts in sorted(results["accepted"].items(), key=lambda kv: int(kv[0])):
        ok = all(meets(name, counts[name] / n) for name in names)
        cells = " | ".join(f"{counts[name]}/{n} = {counts[name] / n:.1%} {_ci(counts[name], n)}" for name in names)
        lines.append(f"| {length} | {cells} | {'yes' if ok else 'NO'} |")
    best = smallest_length(results)
    lines += ["", f"Smallest trial length meeting every target: **{best if best else 'none measured'}**.", "",
              POWER_END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--lengths", default="10,30,100")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results", type=Path, help="write the counts to this JSON file")
    parser.add_argument("--power", type=Path, metavar="RESULTS", help="print the docs page's table of a results file")
    args = parser.parse_args(argv)
    if args.power:
        results = json.loads(args.power.read_text())
        print(power_table(results))
        return results
    lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
    results = run(lengths, args.trials, args.seed)
    Console(width=200).print(power_table(results), highlight=False, markup=False)
    best = smallest_length(results)
    print(f"smallest trial length meeting every target: {best if best else 'none of ' + args.lengths}")
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(results, indent=1) + "\n")
    return results


if __name__ == "__main__":
    main()
