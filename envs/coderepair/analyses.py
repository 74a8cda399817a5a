"""Analyses of ``rsigym/CodeRepair-v0``.

* ``coderepair_compare``: hidden-test pass per (seed, problem) cell, each agent against a baseline
  (the static verifier) on the same cells after the warm-up; **the unit is the seed stream x
  problem cell**, resampled two ways (``rsigym.report.crossed``) for the CI, the paired test and the
  minimum detectable difference, printed next to each verdict with the paper's effect size.
  Control: the blind picker (``coderepair_random``) must come out worse than the baseline with its
  CI below zero; when it does not (or was not run), every verdict is withheld.
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
from rsigym.report import ReportSection, md_code, md_text, register_analysis
from rsigym.report.crossed import crossed_bootstrap

__all__ = ["coderepair_compare", "coderepair_regrade", "per_problem_outcomes", "paired_rows", "paired_cells", "holm_adjusted",
           "warmup_cells", "PAPER_EFFECT"]

MIN_PROBLEMS = 5
MIN_SEEDS = 2
PAPER_EFFECT = 0.03  # RSI-Anything's world-model gains are 2-3 pp


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


def paired_cells(outcomes: dict[str, dict[tuple[int, str], float]], agent: str, baseline: str,
                 excluded: set[tuple[int, str]] | frozenset[tuple[int, str]] = frozenset()) -> dict[tuple[int, str], float]:
    """{(seed, problem): agent pass - baseline pass} on the cells both have, minus ``excluded``."""
    shared = (set(outcomes.get(agent, {})) & set(outcomes.get(baseline, {}))) - set(excluded)
    return {key: outcomes[agent][key] - outcomes[baseline][key] for key in sorted(shared)}


def paired_rows(outcomes: dict[str, dict[tuple[int, str], float]], agent: str, baseline: str,
                excluded: set[tuple[int, str]] | frozenset[tuple[int, str]] = frozenset()) -> dict[str, Any]:
    """Paired comparison of ``agent`` against ``baseline``: the (seed, problem) cell is measured once,
    and seeds and problems are resampled together (``rsigym.report.crossed``) for the CI, the test and the MDD."""
    cells = paired_cells(outcomes, agent, baseline, excluded)
    row: dict[str, Any] = {"n_pairs": len(cells), "n_problems": len({k[1] for k in cells}),
                           "n_seeds": len({k[0] for k in cells})}
    if not cells:
        return {**row, "delta": float("nan"), "ci": (float("nan"), float("nan")), "p": float("nan"),
                "mdd": float("nan"), "rate": float("nan"), "baseline_rate": float("nan"), "blocks": []}
    result = crossed_bootstrap(cells)
    seeds = sorted({k[0] for k in cells}, key=repr)
    half = len(seeds) // 2
    blocks = [float(np.mean([v for k, v in cells.items() if k[0] in set(part)]))
              for part in (seeds[:half], seeds[half:]) if part]
    return {**row, "delta": result.estimate, "ci": result.ci, "p": result.p_value, "mdd": result.mdd,
            "blocks": blocks if half else [],
            "rate": float(np.mean([outcomes[agent][k] for k in cells])),
            "baseline_rate": float(np.mean([outcomes[baseline][k] for k in cells]))}


def holm_adjusted(p_values: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values of one family of tests (NaN stays NaN, outside the family)."""
    tested = sorted((p, name) for name, p in p_values.items() if not np.isnan(p))
    adjusted, running = {name: float("nan") for name in p_values}, 0.0
    for rank, (p, name) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * p))
        adjusted[name] = running
    return adjusted


def _verdict(row: dict[str, Any]) -> str:
    low, high = row["ci"]
    if row["n_problems"] < MIN_PROBLEMS or row["n_seeds"] < MIN_SEEDS or np.isnan(low):
        return "insufficient data"
    if low <= 0 <= high:
        return "no difference shown"
    if row.get("p_holm", row["p"]) >= 0.05:  # shown alone, not as one of the family of agents
        return f"no difference shown after Holm (p {row['p']:.3g}, Holm p {row['p_holm']:.3g})"
    call = "better" if low > 0 else "worse"
    sign = 1.0 if call == "better" else -1.0
    if any(sign * block <= 0 for block in row["blocks"]):  # the two seed blocks disagree
        return f"unstable ({call} overall; seed blocks {', '.join(f'{b:+.3f}' for b in row['blocks'])})"
    return call


def warmup_cells(records: Sequence[Trajectory], warmup: int) -> set[tuple[int, str]]:
    """(seed, problem) cells a world model met during its warm-up (stream index < ``warmup``)."""
    out: set[tuple[int, str]] = set()
    for record in records:
        for row in (_state(record) or {}).get("problems", []):
            if int(row.get("index", 0)) < warmup:
                out.add((record.seed, row["problem_id"]))
    return out


def _warmup_of(records: Sequence[Trajectory]) -> int:
    """The largest warm-up any world-model agent in ``records`` declared (20 is the agents' default)."""
    found = [int(r.agent.params.get("warmup", 20)) for r in records if r.agent.kind in ("fixed_world_model", "adaptive_world_model")]
    return max(found, default=0)


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
                       grader: str = "hidden_tests", control: str = "random", warmup: int | None = None,
                       paper_effect: float = PAPER_EFFECT) -> ReportSection:
    """Paired comparison of every agent against ``baseline`` on (seed, problem) cells after the warm-up,
    two-way bootstrap CI, test and MDD, with the blind control."""
    outcomes, missing = per_problem_outcomes(records, grader)
    if baseline not in outcomes:
        return ReportSection("Code repair: paired comparison", f"No {md_code(baseline)} records graded by {md_code(grader)}.",
                             "insufficient data")
    warmup = _warmup_of(records) if warmup is None else int(warmup)
    excluded = warmup_cells(records, warmup)
    rows = {agent: paired_rows(outcomes, agent, baseline, excluded) for agent in sorted(outcomes) if agent != baseline}
    family = holm_adjusted({agent: row["p"] for agent, row in rows.items() if agent != control})
    for agent, adjusted in family.items():
        rows[agent]["p_holm"] = adjusted
    control_row = rows.get(control)
    control_verdict = _verdict(control_row) if control_row else "not run"
    control_ok = control_verdict == "worse"
    calls = _calls(records)
    lines = [f"{md_code(grader)} pass per (seed, problem) cell; each agent against {md_code(baseline)} on the same cells. "
             f"**Unit: the (seed stream x problem) cell, seeds and problems resampled together** (two-way "
             f"bootstrap, 95% CI; the p-value and the 80%-power minimum detectable difference (MDD) come from "
             f"the same resampling). The first {warmup} problems of each stream (the warm-up, where the world "
             f"models are the static verifier) are excluded ({len(excluded)} cells). The paper's effect is "
             f"{paper_effect:+.3f}: a design whose MDD exceeds it is underpowered. Control: {md_code(control)} (blind "
             "pick) must be worse than the baseline, else no verdict is given. The agents other than the control "
             f"are one family of {len(family)} tests: a call needs its Holm-adjusted p below 0.05 as well as a "
             "95% CI without 0. A call whose two seed blocks disagree in sign is reported unstable.", "",
             "| agent | seeds x problems (cells) | pass | baseline pass | delta | 95% CI | p | Holm p | MDD "
             "| power for paper effect | online calls / problem | missing records | verdict |",
             "|---|---|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---|"]
    verdicts = []
    for agent, row in rows.items():
        verdict = _verdict(row)
        if agent != control and not control_ok:
            verdict = f"withheld ({verdict}): control failed" if control_row else f"withheld ({verdict}): no control run"
        verdicts.append(f"{md_text(agent)}: {verdict} (MDD {row['mdd']:.3f})")
        low, high = row["ci"]
        powered = "n/a" if np.isnan(row["mdd"]) else "ok" if row["mdd"] <= paper_effect else "**underpowered**"
        lines.append(f"| {md_text(agent)} | {row['n_seeds']} x {row['n_problems']} ({row['n_pairs']}) | {row['rate']:.3f} "
                     f"| {row['baseline_rate']:.3f} | {row['delta']:+.3f} | [{low:+.3f}, {high:+.3f}] | {row['p']:.3g} "
                     f"| {format(row['p_holm'], '.3g') if 'p_holm' in row else 'control'} | {row['mdd']:.3f} | {powered} | {calls.get(agent, float('nan')):.2f} "
                     f"| {missing.get(agent, 0)} | **{verdict}** |")
    lines += ["", f"Baseline {md_code(baseline)}: online calls / problem {calls.get(baseline, float('nan')):.2f}, "
              f"missing records {missing.get(baseline, 0)}.", "",
              "Protocol decisions (from the recorded audit logs):", "",
              "| agent | decisions |", "|---|---|"]
    for agent, counts in sorted(_protocol_counts(records).items()):
        lines.append(f"| {md_text(agent)} | {md_text(', '.join(f'{k}: {v}' for k, v in sorted(counts.items())))} |")
    mdds = [row["mdd"] for agent, row in rows.items() if agent != control and not np.isnan(row["mdd"])]
    power_text = (f"underpowered for the paper's {paper_effect:+.3f} (MDD {max(mdds):.3f})" if mdds and max(mdds) > paper_effect
                  else f"powered for the paper's {paper_effect:+.3f} (MDD {max(mdds):.3f})" if mdds else "no MDD")
    control_text = (f"control passed (the blind pick is worse, MDD {control_row['mdd']:.3f})" if control_ok and control_row else
                    f"control FAILED: the blind pick is {control_verdict}" if control_row else "no control run")
    return ReportSection("Code repair: paired comparison", "\n".join(lines),
                         f"{control_text}; {power_text}; " + "; ".join(verdicts))


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
    lines = [f"Fixed trajectories, two rulers: {md_code(grader)} then {md_code(regrade_grader)} on the same final programs, "
             f"per (record, problem). Control: the env's live hidden outcome vs {md_code(grader)} re-executed "
             "(the same ruler twice) must not flip.", "",
             f"| agent | control flips (live vs {md_text(grader)}) | pass->pass | pass->fail | fail->pass | fail->fail "
             f"| pass rate {md_text(grader)} | pass rate {md_text(regrade_grader)} | missing |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
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
        lines.append(f"| {md_text(agent)} | {control_flips} | {flips['pass->pass']} | {flips['pass->fail']} | {flips['fail->pass']} "
                     f"| {flips['fail->fail']} | {rate_a:.3f} | {rate_b:.3f} | {missing_a.get(agent, 0)}/{missing_b.get(agent, 0)} |")
    if total == 0:
        verdict = "insufficient data: no problem graded by both rulers"
    elif unstable:
        verdict = f"withheld: the same ruler flipped {unstable} outcomes (unstable ruler)"
    else:
        verdict = (f"control passed (0 same-ruler flips); the stricter ruler flips {moved} of {total} "
                   f"problem outcomes ({moved / total:.1%}): that part of any score difference is the ruler")
    return ReportSection("Code repair: regrade under a stricter ruler", "\n".join(lines), verdict)
