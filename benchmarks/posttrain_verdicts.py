"""Paired comparisons, claim verdicts and the seed-block stability rule of the post-training benchmarks.

A benchmark block is a grid of runs: warm starts (independent supervised trainings) x seeds (RL
or distillation seeds on one warm start). Runs on one warm start share it, so they are not
independent: the unit of inference is the warm start. The interval of a paired difference is a
Student-t interval over the warm starts' mean differences (each the mean over its seeds), and needs
at least ``MIN_WARM_STARTS`` warm starts, or the verdict is "insufficient data". (Until round three it
was a warm-start-then-seed percentile bootstrap: over 3 warm starts that interval is about the range
of the 3 means, so a no-op variant was called in a quarter of the blocks; ``nested_bootstrap_ci``
stays for the resampled view.) The MDD uses the same t quantiles, so a difference of one MDD is
detected with probability 0.8 by this rule. A claim "holds" in a block when the whole interval lies on the side
the paper claims, is "refuted" when it lies on the other side, and is "not shown" when it covers 0.
The benchmark runs two blocks with disjoint warm starts and seeds; the stable verdict is the
blocks' common one, or "unstable" when they disagree.

Bootstraps here are written out (scipy's ``bootstrap`` has no nested resampling); every unit is
taken in sorted key order, so the order runs were recorded in changes nothing.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scipy import stats as st

MIN_WARM_STARTS = 3
LABELS = ("holds", "refuted", "not shown", "insufficient data", "unstable")

RunKey = str
"""``"w{warm start}_s{seed}"``: one run of a block"""


def run_key(warm_start: int, seed: int) -> RunKey:
    return f"w{warm_start}_s{seed}"


def warm_start_of(key: RunKey) -> int:
    return int(key.split("_")[0][1:])


def nested_bootstrap_ci(deltas: Mapping[RunKey, float], confidence: float = 0.95, resamples: int = 4000,
                        seed: int = 0) -> tuple[float, float]:
    """Percentile CI of the mean paired difference: warm starts resampled, then runs within each.

    The statistic of a resample is the mean over its warm starts of their mean delta, so every warm
    start weighs the same whatever its number of seeds.
    """
    groups: dict[int, list[float]] = {}
    for key in sorted(deltas):
        groups.setdefault(warm_start_of(key), []).append(float(deltas[key]))
    arrays = [np.asarray(groups[w]) for w in sorted(groups)]
    if not arrays:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    count = len(arrays)
    picks = rng.integers(0, count, (resamples, count))  # (B, W) the warm starts of each resample
    slots = np.empty((resamples, count))
    for slot in range(count):
        # a fresh inner resample of every warm start for this slot: (B, W) means, then the picked one's
        inner = np.stack([a[rng.integers(0, len(a), (resamples, len(a)))].mean(axis=1) for a in arrays], axis=1)
        slots[:, slot] = inner[np.arange(resamples), picks[:, slot]]
    means = slots.mean(axis=1)  # (B,)
    alpha = (1 - confidence) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def warm_start_means(deltas: Mapping[RunKey, float]) -> list[float]:
    """Mean paired difference of every warm start over its seeds, in warm-start order."""
    groups: dict[int, list[float]] = {}
    for key in sorted(deltas):
        groups.setdefault(warm_start_of(key), []).append(float(deltas[key]))
    return [statistics.fmean(groups[w]) for w in sorted(groups)]


def t_interval(means: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of the warm starts' mean differences (nan under 2 warm starts)."""
    if len(means) < 2:
        return math.nan, math.nan
    centre, half = statistics.fmean(means), 0.0
    sd = statistics.stdev(means)
    if sd > 0:
        half = float(st.t.ppf(1 - (1 - confidence) / 2, len(means) - 1)) * sd / math.sqrt(len(means))
    return centre - half, centre + half


def t_mdd(means: Sequence[float], alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true difference the t rule detects with probability ``power``:
    ``(t_{1-alpha/2} + t_{power}) * sd / sqrt(n)`` over ``n`` warm-start means, ``n - 1`` degrees of freedom."""
    if len(means) < 2:
        return math.nan
    df = len(means) - 1
    factor = float(st.t.ppf(1 - alpha / 2, df) + st.t.ppf(power, df))
    return factor * statistics.stdev(means) / math.sqrt(len(means))


def label(ci: Sequence[float], direction: int, warm_starts: int) -> str:
    """Verdict of one block on a claim that the difference has sign ``direction`` (+1 or -1)."""
    if warm_starts < MIN_WARM_STARTS or any(math.isnan(x) for x in ci):
        return "insufficient data"
    low, high = ci[0] * direction, ci[1] * direction
    low, high = min(low, high), max(low, high)
    return "holds" if low > 0 else "refuted" if high < 0 else "not shown"


def stable(labels: Sequence[str]) -> str:
    """The blocks' common verdict, or "unstable" when they differ (one block: its own verdict)."""
    return labels[0] if len(set(labels)) == 1 else "unstable"


def compare(per_run: Mapping[str, Mapping[RunKey, Mapping[str, float]]], variant: str, baseline: str, metric: str,
            direction: int = 1) -> dict[str, Any]:
    """Paired difference ``variant - baseline`` on ``metric`` over the runs both have.

    Returns its mean (over warm starts of their mean), the t interval over warm starts, the verdict
    of the claim that the sign is ``direction``, the minimum detectable difference of that rule
    (alpha 0.05, power 0.8) and the number of warm starts and runs.
    """
    keys = sorted(set(per_run[variant]) & set(per_run[baseline]))
    deltas = {k: per_run[variant][k][metric] - per_run[baseline][k][metric] for k in keys}
    means = warm_start_means(deltas)
    warm_starts = len(means)
    mean = statistics.fmean(means) if means else math.nan
    ci = t_interval(means)
    mdd = t_mdd(means)
    return {"mean": mean, "ci": list(ci), "label": label(ci, direction, warm_starts), "mdd": mdd,
            "warm_starts": warm_starts, "runs": len(deltas), "deltas": deltas}


def variant_means(per_run: Mapping[RunKey, Mapping[str, float]]) -> dict[str, float]:
    """Mean of every metric over a variant's runs (warm starts weigh by their run count: equal grids)."""
    metrics = sorted({m for values in per_run.values() for m in values})
    return {m: statistics.fmean(per_run[k][m] for k in sorted(per_run)) for m in metrics}


def block_summary(per_run: Mapping[str, Mapping[RunKey, Mapping[str, float]]], baseline: str,
                  metrics: Sequence[str]) -> dict[str, Any]:
    """Means per variant and the paired difference of every variant against ``baseline`` per metric."""
    return {variant: {"mean": variant_means(runs),
                      f"vs_{baseline}": {m: compare(per_run, variant, baseline, m) for m in metrics}}
            for variant, runs in per_run.items()}


def claim_verdicts(blocks: Mapping[str, Mapping[str, Mapping[RunKey, Mapping[str, float]]]],
                   claims: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each claim (``text``, ``variant``, ``baseline``, ``metric``, ``direction``) compared in every block,
    with the stable verdict across blocks."""
    out = []
    for claim in claims:
        per_block = {name: compare(per_run, claim["variant"], claim["baseline"], claim["metric"], claim["direction"])
                     for name, per_run in blocks.items()}
        out.append({**claim, "blocks": per_block, "verdict": stable([c["label"] for c in per_block.values()])})
    return out


def stability_column(block_summaries: Mapping[str, Mapping[str, Any]], baseline: str, variant: str,
                     metric: str) -> str:
    """Stable verdict of "``variant`` differs from ``baseline`` upwards" across blocks: a sign that holds in
    both is "higher"/"lower", no sign in both "no difference shown", else "unstable"."""
    labels = [summary[variant][f"vs_{baseline}"][metric]["label"] for summary in block_summaries.values()]
    verdict = stable(labels)
    return {"holds": "higher", "refuted": "lower", "not shown": "no difference shown"}.get(verdict, verdict)


def exact_rate(count: int, total: int, confidence: float = 0.95) -> dict[str, Any]:
    """``count / total`` with its exact (Clopper-Pearson) interval."""
    if total == 0:
        return {"count": 0, "total": 0, "rate": math.nan, "ci": [math.nan, math.nan]}
    ci = st.binomtest(count, total).proportion_ci(confidence_level=confidence, method="exact")
    return {"count": count, "total": total, "rate": count / total, "ci": [float(ci.low), float(ci.high)]}


def power_arms(blocks: Mapping[str, Mapping[str, Mapping[RunKey, Mapping[str, float]]]],
               arms: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Detection and false-call rates of the verdict rule over independent replications.

    ``blocks``: replications (each a block of the shipped design: its own warm starts and seeds).
    Each arm (``arm``: "positive control" or "null", ``variant``, ``baseline``, ``metric``,
    ``direction``) is compared in every block by the table's rule. A positive control counts as
    detected where the block says "holds"; a null counts as called where it says "holds" or
    "refuted". The two-block rule of the tables (a verdict where two blocks agree) is counted over
    disjoint consecutive pairs of blocks (A+B, C+D, ...). Returns, per arm, both rates with exact
    intervals, the mean MDD and the mean difference (``effect_mean``: the mean over blocks of each block's mean
    difference, the size the MDD is to be read against) over the blocks.
    """
    names = sorted(blocks, key=lambda name: (len(name), name))  # A .. Z, AA ..: the order blocks were made in
    out = []
    for arm in arms:
        labels = []
        mdds = []
        effects = []
        for name in names:
            c = compare(blocks[name], arm["variant"], arm["baseline"], arm["metric"], arm["direction"])
            labels.append(c["label"])
            mdds.append(c["mdd"])
            effects.append(c["mean"])
        pairs = [stable(labels[i:i + 2]) for i in range(0, len(labels) - 1, 2)]
        if arm["arm"] == "positive control":
            hits, pair_hits = labels.count("holds"), pairs.count("holds")
        else:
            hits = sum(x in ("holds", "refuted") for x in labels)
            pair_hits = sum(x in ("holds", "refuted") for x in pairs)
        finite = [m for m in mdds if not math.isnan(m)]
        out.append({**arm, "labels": labels, "per_block": exact_rate(hits, len(labels)),
                    "two_blocks": exact_rate(pair_hits, len(pairs)),
                    "mdd_mean": statistics.fmean(finite) if finite else math.nan,
                    "effect_mean": statistics.fmean(effects) if effects else math.nan})
    return out
