"""Analyses of ``rsigym/CodeRepair-v0``.

* ``coderepair_compare``: hidden-test pass per problem, each agent against a baseline (the static
  verifier), paired on (seed, problem); **the problem is the unit** (seeds averaged first), with a
  paired bootstrap CI and an exact McNemar test on discordant (seed, problem) pairs. Control: the
  blind picker (``coderepair_random``) must come out worse than the baseline with its CI below
  zero; when it does not (or was not run), every verdict is withheld.
* ``coderepair_regrade``: the flip table between two rulers on the same final programs
  (``hidden_tests`` vs ``hidden_tests_strict``). Control: the env's own hidden outcome against
  the re-executed ``hidden_tests`` (the same ruler run twice) must not flip; flips there mean the
  ruler is unstable and the verdict is withheld.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rsigym.records import Trajectory
from rsigym.report import ReportSection, register_analysis
from rsigym.stats import mcnemar_exact, paired_bootstrap_ci

__all__ = ["coderepair_compare", "coderepair_regrade", "per_problem_outcomes", "paired_rows"]

MIN_PROBLEMS = 5


def _state(record: Trajectory) -> dict[str, Any] | None:
    state = record.final.state if record.final else None
    return state if isinstance(state, dict) and state.get("family") == "code-repair" else None


def _grade(record: Trajectory, grader: str) -> Any:
    graded = [g for g in record.grades if g.grader == grader and g.score is not None]
    return graded[-1] if graded else None


def per_problem_outcomes(records: Sequence[Trajectory], grader: str
                         ) -> tuple[dict[str, dict[tuple[int, str], float]], dict[str, int]]:
    """agent id -> {(seed, problem id): pass} under ``grader``; and per agent the records missing it."""
    out: dict[str, dict[tuple[int, str], float]] = defaultdict(dict)
    missing: dict[str, int] = defaultdict(int)
    for record in records:
        if _state(record) is None:
            if record.termination == "infra_error":
                missing[record.agent.id] += 1
            continue
        grade = _grade(record, grader)
        if grade is None:
            missing[record.agent.id] += 1
            continue
        for pid, passed in grade.details["passed"].items():
            out[record.agent.id][(record.seed, pid)] = float(passed)
    return out, missing


def paired_rows(outcomes: dict[str, dict[tuple[int, str], float]], agent: str, baseline: str) -> dict[str, Any]:
    """Paired comparison of ``agent`` against ``baseline`` (problems as units)."""
    shared = sorted(set(outcomes.get(agent, {})) & set(outcomes.get(baseline, {})))
    by_problem: dict[str, list[float]] = defaultdict(list)
    b = c = 0
    for key in shared:
        x, y = outcomes[agent][key], outcomes[baseline][key]
        by_problem[key[1]].append(x - y)
        b += int(y > x)
        c += int(x > y)
    deltas = [float(np.mean(v)) for v in by_problem.values()]
    low, high = paired_bootstrap_ci(deltas) if len(deltas) >= 2 else (float("nan"), float("nan"))
    return {"n_problems": len(by_problem), "n_pairs": len(shared), "delta": float(np.mean(deltas)) if deltas else float("nan"),
            "ci": (low, high), "mcnemar_p": mcnemar_exact(b, c), "discordant": (b, c),
            "rate": float(np.mean([outcomes[agent][k] for k in shared])) if shared else float("nan"),
            "baseline_rate": float(np.mean([outcomes[baseline][k] for k in shared])) if shared else float("nan")}


def _verdict(row: dict[str, Any]) -> str:
    low, high = row["ci"]
    if row["n_problems"] < MIN_PROBLEMS or np.isnan(low):
        return "insufficient data"
    return "better" if low > 0 else "worse" if high < 0 else "no difference shown"


def _calls(records: Sequence[Trajectory]) -> dict[str, float]:
    calls: dict[str, list[float]] = defaultdict(list)
    for record in records:
        state = _state(record)
        if state and state["problems"]:
            calls[record.agent.id].append(state["online_test_calls"] / len(state["problems"]))
    return {agent: float(np.mean(v)) for agent, v in calls.items()}


def _protocol_counts(records: Sequence[Trajectory]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in records:
        state = _state(record)
        for decision in (state or {}).get("wm_decisions", []):
            event = decision.get("event", "?")
            if event == "reliability_check":
                event = "check: " + str(decision.get("result", {}).get("verdict"))
            counts[record.agent.id][event] += 1
    return counts


@register_analysis("coderepair_compare")
def coderepair_compare(records: Sequence[Trajectory], out_dir: Path, *, baseline: str = "static_verifier",
                       grader: str = "hidden_tests", control: str = "random") -> ReportSection:
    """Paired per-problem comparison of every agent against ``baseline``, with the blind control."""
    outcomes, missing = per_problem_outcomes(records, grader)
    if baseline not in outcomes:
        return ReportSection("Code repair: paired comparison", f"No `{baseline}` records graded by `{grader}`.",
                             "insufficient data")
    rows = {agent: paired_rows(outcomes, agent, baseline) for agent in sorted(outcomes) if agent != baseline}
    control_row = rows.get(control)
    control_ok = control_row is not None and _verdict(control_row) == "worse"
    calls = _calls(records)
    lines = [f"`{grader}` pass per problem; each agent against `{baseline}` on the same (seed, problem). "
             f"**The problem is the unit** (seeds averaged first). 95% paired bootstrap CI over problems; "
             f"exact McNemar on discordant (seed, problem) pairs. Control: `{control}` (blind pick) must be "
             "worse than the baseline, else no verdict is given.", "",
             "| agent | problems (pairs) | pass | baseline pass | delta | 95% CI | McNemar p | discordant b/c "
             "| online calls / problem | missing records | verdict |", "|---|---:|---:|---:|---:|---|---:|---|---:|---:|---|"]
    verdicts = []
    for agent, row in rows.items():
        verdict = _verdict(row)
        if agent != control and not control_ok:
            verdict = f"withheld ({verdict}): control failed" if control_row else f"withheld ({verdict}): no control run"
        verdicts.append(f"{agent}: {verdict}")
        low, high = row["ci"]
        lines.append(f"| {agent} | {row['n_problems']} ({row['n_pairs']}) | {row['rate']:.3f} | {row['baseline_rate']:.3f} "
                     f"| {row['delta']:+.3f} | [{low:+.3f}, {high:+.3f}] | {row['mcnemar_p']:.3g} "
                     f"| {row['discordant'][0]}/{row['discordant'][1]} | {calls.get(agent, float('nan')):.2f} "
                     f"| {missing.get(agent, 0)} | **{verdict}** |")
    lines += ["", f"Baseline `{baseline}`: online calls / problem {calls.get(baseline, float('nan')):.2f}, "
              f"missing records {missing.get(baseline, 0)}.", "",
              "Protocol decisions (from the recorded audit logs):", "",
              "| agent | decisions |", "|---|---|"]
    for agent, counts in sorted(_protocol_counts(records).items()):
        lines.append(f"| {agent} | {', '.join(f'{k}: {v}' for k, v in sorted(counts.items()))} |")
    control_text = ("control passed (the blind pick is worse)" if control_ok else
                    "control FAILED: the blind pick is not shown worse" if control_row else "no control run")
    return ReportSection("Code repair: paired comparison", "\n".join(lines), f"{control_text}; " + "; ".join(verdicts))


def _flips(a: dict[tuple[int, str], float], b: dict[tuple[int, str], float]) -> dict[str, int]:
    keys = set(a) & set(b)
    return {"pass->pass": sum(a[k] == 1 and b[k] == 1 for k in keys), "pass->fail": sum(a[k] == 1 and b[k] == 0 for k in keys),
            "fail->pass": sum(a[k] == 0 and b[k] == 1 for k in keys), "fail->fail": sum(a[k] == 0 and b[k] == 0 for k in keys)}


@register_analysis("coderepair_regrade")
def coderepair_regrade(records: Sequence[Trajectory], out_dir: Path, *, grader: str = "hidden_tests",
                       regrade_grader: str = "hidden_tests_strict") -> ReportSection:
    """Flip table between two rulers on the same final programs, with a same-ruler control."""
    first, missing_a = per_problem_outcomes(records, grader)
    second, missing_b = per_problem_outcomes(records, regrade_grader)
    live: dict[str, dict[tuple[int, str], float]] = defaultdict(dict)
    for record in records:
        state = _state(record)
        for row in (state or {}).get("problems", []):
            live[record.agent.id][(record.seed, row["problem_id"])] = float(row["hidden_pass"])
    lines = [f"Fixed trajectories, two rulers: `{grader}` then `{regrade_grader}` on the same final programs, "
             f"per (record, problem). Control: the env's live hidden outcome vs `{grader}` re-executed "
             "(the same ruler twice) must not flip.", "",
             f"| agent | control flips (live vs {grader}) | pass->pass | pass->fail | fail->pass | fail->fail "
             f"| pass rate {grader} | pass rate {regrade_grader} | missing |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    unstable, moved, total = 0, 0, 0
    for agent in sorted(set(first) | set(second)):
        control = _flips(live[agent], first.get(agent, {}))
        control_flips = control["pass->fail"] + control["fail->pass"]
        unstable += control_flips
        flips = _flips(first.get(agent, {}), second.get(agent, {}))
        moved += flips["pass->fail"] + flips["fail->pass"]
        total += sum(flips.values())
        rate_a = np.mean(list(first.get(agent, {}).values())) if first.get(agent) else float("nan")
        rate_b = np.mean(list(second.get(agent, {}).values())) if second.get(agent) else float("nan")
        lines.append(f"| {agent} | {control_flips} | {flips['pass->pass']} | {flips['pass->fail']} | {flips['fail->pass']} "
                     f"| {flips['fail->fail']} | {rate_a:.3f} | {rate_b:.3f} | {missing_a.get(agent, 0)}/{missing_b.get(agent, 0)} |")
    if total == 0:
        verdict = "insufficient data: no problem graded by both rulers"
    elif unstable:
        verdict = f"withheld: the same ruler flipped {unstable} outcomes (unstable ruler)"
    else:
        verdict = (f"control passed (0 same-ruler flips); the stricter ruler flips {moved} of {total} "
                   f"problem outcomes ({moved / total:.1%}): that part of any score difference is the ruler")
    return ReportSection("Code repair: regrade under a stricter ruler", "\n".join(lines), verdict)
