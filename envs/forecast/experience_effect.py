"""Does experience help? The same forecaster with and without it, the target as the unit.

For every agent and every experience condition C (``in_env``, ``cross_env``, ``shuffled_gains``;
each observed mode), an episode under C is paired with the same agent's ``no_experience``
episode of the same target, seed and rep (and observed mode): ``delta = Regret@3(C) -
Regret@3(no_experience)`` (negative: experience helps). Two readings:

* **round 1**: the one-shot pick, before the episode's own executions teach anything (the
  paper's question); and
* **curve**: the mean over all rounds, also per round (the table shows rounds 1..R), and the
  mean over the rounds whose best candidate is real (``best_is_noise`` false: not a placebo, and
  significant), since a round whose best is noise ranks nothing real.

Regrets are divided by the target's scale before pooling (gains differ 50x between digits-mlp
and charlm): the blind reference ``zero``'s mean Regret@3 on that target (``target_scales``), so
a delta of -1 removes all of a blind picker's regret; the target's gain SD where no ``zero``
episode exists (an SD is inflated by crashed runs floored at -1, the blind regret is not). **The target is the unit**: each
target's mean delta is one number, and the pooled estimate is their mean with a t interval over
targets (``cluster_t_ci``: the mean of the target means, their SD / sqrt(targets), t with targets - 1
degrees of freedom, the exact small-sample interval when every target counts once) and the MDD of that
t test (``cluster_mdd``); per-target rows show where an effect lives. Verdict: "helps" when the
pooled CI is below 0, "hurts" above 0, else "no detectable effect" with its minimum detectable
difference; "insufficient data" under ``min_targets`` targets; "unstable" when the two seed blocks
(even, odd seeds) reach opposite significant verdicts or the verdict's sign flips in one of them.
``zero`` never reads experience, so its delta is exactly 0: the floor and a control that fails
when the condition changes anything but what the agent sees.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from rsigym.report import md_text
from rsigym.report.stats import cluster_means, cluster_t_ci

__all__ = ["experience_pairs", "experience_effects", "experience_markdown", "target_scales", "cluster_mdd",
           "EXPERIENCE_READINGS"]

EXPERIENCE_READINGS = ("round1", "curve", "curve_real")


def _reading(row: dict[str, Any], reading: str) -> float:
    regrets = row["round_regret"]
    if reading == "round1":
        return float(regrets[0])
    if reading == "curve":
        return math.fsum(regrets) / len(regrets)
    real = [r for r, noise in zip(regrets, row["round_noise"]) if not noise]
    return math.fsum(real) / len(real) if real else math.nan


def experience_pairs(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(agent, condition label) -> paired episodes: task, seed, the two rows (C first)."""
    base = {(r["agent"], r["observed"], r["task"], r["seed"], r["rep"]): r for r in rows
            if r["condition_name"] == "no_experience"}
    pairs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        if row["condition_name"] == "no_experience":
            continue
        other = base.get((row["agent"], row["observed"], row["task"], row["seed"], row["rep"]))
        if other is not None:
            pairs.setdefault((row["agent"], row["condition"]), []).append(
                {"task": row["task"], "seed": row["seed"], "with": row, "without": other})
    return pairs


def target_scales(rows: list[dict[str, Any]], reference: str = "zero") -> dict[str, float]:
    """Per target: ``reference``'s mean Regret@3 over all its episodes there (else the gain SD, else 1)."""
    scales: dict[str, float] = {}
    for task in sorted({r["task"] for r in rows}):
        blind = sorted(r["regret_best"] for r in rows if r["task"] == task and r["agent"] == reference
                       and not math.isnan(r["regret_best"]))
        mean = math.fsum(blind) / len(blind) if blind else 0.0
        sd = next((r.get("gain_sd") for r in rows if r["task"] == task and r.get("gain_sd")), None)
        scales[task] = mean if mean > 0 else float(sd) if sd else 1.0
    return scales


def cluster_mdd(sd_between: float, clusters: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimum detectable difference of the t interval over ``clusters`` cluster means whose SD is ``sd_between``.

    ``(t_{1 - alpha/2, n-1} + t_{power, n-1}) * sd / sqrt(n)``: the verdict's test has n - 1 degrees
    of freedom, so its power at a given effect is the t test's, not the normal test's (the normal
    factor, 2.80 at alpha 0.05 and power 0.8, gives an MDD 5% too small at 22 clusters and 25% too
    small at 5). nan under two clusters.
    """
    if clusters < 2 or math.isnan(sd_between):
        return math.nan
    from scipy import stats
    factor = float(stats.t.ppf(1 - alpha / 2, clusters - 1) + stats.t.ppf(power, clusters - 1))
    return factor * sd_between / math.sqrt(clusters)


def _verdict(low: float, high: float) -> str:
    return "helps" if high < 0 else "hurts" if low > 0 else "no detectable effect"


def experience_effects(rows: list[dict[str, Any]], *, min_targets: int = 3) -> list[dict[str, Any]]:
    """One result per (agent, condition, reading): pooled normalised delta, CI, per-target means, verdict."""
    out = []
    scale = target_scales(rows)
    for (agent, condition), pairs in sorted(experience_pairs(rows).items()):
        for reading in EXPERIENCE_READINGS:
            values = [(_reading(p["with"], reading) - _reading(p["without"], reading)) / scale[p["task"]]
                      for p in pairs]
            tasks = [p["task"] for p in pairs]
            mean, low, high, targets = cluster_t_ci(values, tasks)
            per_target = cluster_means(values, tasks)
            raw = cluster_means([_reading(p["with"], reading) - _reading(p["without"], reading) for p in pairs], tasks)
            missing = sum(math.isnan(v) for v in values)
            sd = statistics.stdev(per_target.values()) if len(per_target) >= 2 else math.nan
            mdd = cluster_mdd(sd, targets)
            if targets < min_targets:
                verdict = "insufficient data"
            else:
                verdict = _verdict(low, high)
                blocks = []
                for parity in (0, 1):
                    chosen = [(v, t) for v, t, p in zip(values, tasks, pairs) if int(p["seed"]) % 2 == parity]
                    if chosen:
                        bm, bl, bh, bn = cluster_t_ci([v for v, _ in chosen], [t for _, t in chosen])
                        blocks.append((bm, _verdict(bl, bh) if bn >= min_targets else "insufficient data"))
                significant = {v for _, v in blocks} & {"helps", "hurts"}
                flipped = verdict != "no detectable effect" and any(
                    (bm > 0) != (mean > 0) for bm, _ in blocks if not math.isnan(bm))
                if len(significant) == 2 or flipped:
                    verdict = "unstable"
            out.append({"agent": agent, "condition": condition, "reading": reading, "pairs": len(pairs),
                        "missing": missing, "targets": targets, "mean": mean, "low": low, "high": high,
                        "mdd": mdd, "per_target": per_target, "per_target_raw": raw, "verdict": verdict})
    return out


def _f(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:+.3f}"


def experience_markdown(rows: list[dict[str, Any]], *, min_targets: int = 3) -> tuple[list[str], list[str]]:
    """The section's tables (pooled, per target, per-round curve) and its verdict sentences."""
    effects = experience_effects(rows, min_targets=min_targets)
    if not effects:
        return ["No condition has no_experience episodes of the same agent to pair with."], []
    lines = ["### Does experience help? (same agent, condition - no_experience)", "",
             "Regret@3 (best of 3) difference, divided by the target's scale (`zero`'s mean Regret@3 there); "
             "negative = experience helps, -1 = all of a blind picker's regret removed. "
             "Unit: the target (each target's mean over its paired seeds is one value); 95% t interval over "
             "targets; MDD = minimum detectable difference of that t test (alpha 0.05, power 0.8, targets - 1 df). "
             "round 1 = the one-shot pick; "
             "curve = mean over all rounds; curve (real) = rounds whose best candidate is a significant, "
             "non-placebo intervention. `zero` never reads experience: its delta must be exactly 0.", "",
             "| agent | condition | reading | pairs (missing) | targets | delta [95% CI] | MDD | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    summary = []
    for e in effects:
        lines.append(f"| {md_text(e['agent'])} | {md_text(e['condition'])} | {e['reading']} | {e['pairs']} ({e['missing']}) | "
                     f"{e['targets']} | {_f(e['mean'])} [{_f(e['low'])}, {_f(e['high'])}] | "
                     f"{_f(e['mdd']).lstrip('+')} | {e['verdict']} |")
        if e["agent"] == "zero":
            ok = e["mean"] == 0.0 or math.isnan(e["mean"])
            if e["reading"] == "round1":
                summary.append(f"zero floor in {md_text(e['condition'])}: {'passes' if ok else 'FAILS'} ({_f(e['mean'])})")
        elif e["reading"] in ("round1", "curve") and e["condition"].startswith(("in_env", "cross_env")):
            summary.append(f"{md_text(e['agent'])} {md_text(e['condition'])} {e['reading']}: {e['verdict']} "
                           f"({_f(e['mean'])} [{_f(e['low'])}, {_f(e['high'])}], {e['targets']} targets)")
    targets = sorted({t for e in effects for t in e["per_target"]})
    lines += ["", "Per target (Regret@3 difference in gain units, not normalised; round 1 / curve):", "",
              "| agent | condition | " + " | ".join(md_text(t) for t in targets) + " |", "|---|---|" + "---|" * len(targets)]
    by_key = {(e["agent"], e["condition"], e["reading"]): e for e in effects}
    for agent, condition in sorted({(e["agent"], e["condition"]) for e in effects}):
        one, curve = by_key[(agent, condition, "round1")], by_key[(agent, condition, "curve")]
        cells = [f"{_f(one['per_target_raw'].get(t, math.nan))} / {_f(curve['per_target_raw'].get(t, math.nan))}"
                 for t in targets]
        lines.append(f"| {md_text(agent)} | {md_text(condition)} | " + " | ".join(cells) + " |")
    lines += ["", *_round_curve(rows)]
    return lines, summary


def _round_curve(rows: list[dict[str, Any]]) -> list[str]:
    """Mean normalised Regret@3 per round, per agent and condition (the multi-round curve)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["agent"], row["condition"]), []).append(row)
    rounds = max((len(r["round_regret"]) for r in rows), default=0)
    scale = target_scales(rows)
    lines = ["Regret@3 per round / target scale (mean over episodes; the multi-round curve):", "",
             "| agent | condition | " + " | ".join(f"r{i + 1}" for i in range(rounds)) + " |",
             "|---|---|" + "---|" * rounds]
    for (agent, condition), members in sorted(groups.items()):
        cells = []
        for i in range(rounds):
            values = sorted(m["round_regret"][i] / scale[m["task"]] for m in members if len(m["round_regret"]) > i)
            cells.append(f"{math.fsum(values) / len(values):.3f}" if values else "n/a")
        lines.append(f"| {md_text(agent)} | {md_text(condition)} | " + " | ".join(cells) + " |")
    return lines
