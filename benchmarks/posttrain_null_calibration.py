"""Why a null arm of the post-training power study is called: the verdict rule's shape or the blocks' dependence?

For every null arm (the baseline against itself with the seed shifted) of ``grpo_dropout.py`` and ``dial_opd.py``,
over the power blocks of the committed results (``benchmarks/results/*_power.json``, the first ``power_blocks``):

- **constructed null blocks** (known truth: no effect): the measured warm-start differences of the arm, pooled over
  the blocks and centred at 0, drawn 3 distinct at a time (the design's warm starts per block); the share the
  per-block t rule (``posttrain_verdicts.t_interval``: Student t, 2 df) calls, with its exact interval. Near 5%:
  the rule fits the shape of these differences (skew, tails) and is not what inflates the observed rate. A draw
  whose 3 differences are all equal has no spread and is left out (the rule has no interval there).
- **block dependence**: the variance of the block means across blocks against the mean within-block squared
  standard error. With independent warm starts the ratio is about 1 (F test, ``n - 1`` and ``n (W - 1)`` df);
  above 1, the warm starts of a block share something (under ``"block"`` seeding they share the RL or distillation
  seed: ``posttrain_grid.block_units``) and the within-block interval misses that block-level part, so a null is
  called more often than 5%. GRPO's blocks have been ``"unit"``-seeded (a seed per warm start) since round three,
  when this ratio was 2.35 on entropy (p = 0.005); distillation's stay ``"block"``-seeded (ratios 0.69 and 0.70 over 40 blocks).

Unit of inference: the warm start within a block, the block across blocks. Reads only committed files.
Run: ``python benchmarks/posttrain_null_calibration.py [--draws N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from posttrain_verdicts import exact_rate, t_interval, warm_start_means

from scipy import stats as st

RESULTS = Path(__file__).resolve().parent / "results"


def null_deltas(blocks: dict[str, Any], arm: dict[str, Any]) -> list[list[float]]:
    """Per block, the warm starts' mean paired differences ``variant - baseline`` on the arm's metric."""
    out = []
    for block in blocks.values():
        base, other = block[arm["baseline"]], block[arm["variant"]]
        out.append(warm_start_means({k: other[k][arm["metric"]] - base[k][arm["metric"]] for k in sorted(base)}))
    return out


def calibrate(per_block: list[list[float]], draws: int, seed: int = 0) -> dict[str, Any]:
    """The t rule on constructed null blocks drawn from the pooled, centred differences; the block-dependence ratio."""
    pooled = np.array([d for block in per_block for d in block])
    pooled = pooled - pooled.mean()
    width = len(per_block[0])
    rng = np.random.default_rng(seed)
    picks = np.argsort(rng.random((draws, len(pooled))), axis=1)[:, :width]  # distinct warm starts per block
    rows = pooled[picks]  # (draws, W)
    spread = np.ptp(rows, axis=1) > 0  # no spread: no interval
    centre, sd = rows.mean(axis=1), rows.std(axis=1, ddof=1)
    # t_interval's rule, vectorised: called where the interval centre +- t quantile x SE excludes 0
    half = float(st.t.ppf(0.975, width - 1)) * sd / np.sqrt(width)
    calls = int((spread & (np.abs(centre) > half)).sum())
    total = int(spread.sum())
    assert all((lambda lo_hi: lo_hi[0] > 0 or lo_hi[1] < 0)(t_interval(r.tolist())) == bool(abs(c) > h)
               for r, c, h in zip(rows[spread][:200], centre[spread][:200], half[spread][:200]))
    means = [statistics.fmean(b) for b in per_block]
    within = statistics.fmean(statistics.variance(b) / len(b) for b in per_block)
    ratio = statistics.variance(means) / within
    return {"constructed": exact_rate(calls, total), "observed": None, "ratio": ratio,
            "f_p": float(st.f.sf(ratio, len(means) - 1, len(means) * (width - 1))),
            "skew": float(st.skew(pooled)), "kurtosis": float(st.kurtosis(pooled))}


def main(draws: int = 20000) -> list[dict[str, Any]]:
    import dial_opd
    import grpo_dropout
    from posttrain_verdicts import power_arms

    rows = []
    for name, module in (("grpo_dropout", grpo_dropout), ("dial_opd", dial_opd)):
        results = json.loads((RESULTS / f"{name}.json").read_text())
        store = json.loads((RESULTS / f"{name}_power.json").read_text())["blocks"]
        blocks = {b: store[b] for b in list(store)[:results["settings"]["power_blocks"]]}
        for arm in (a for a in module.POWER_ARMS if a["arm"] == "null"):
            row = {"benchmark": name, "metric": arm["metric"], "blocks": len(blocks),
                   **calibrate(null_deltas(blocks, arm), draws)}
            row["observed"] = power_arms(blocks, [arm])[0]["per_block"]
            rows.append(row)
    print("| benchmark | null arm metric | blocks | observed per-block calls | constructed null blocks called "
          "[exact 95% CI] | skew / excess kurtosis of the differences | between / within-block variance (F test p) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        o, c = r["observed"], r["constructed"]
        print(f"| {r['benchmark']} | {r['metric']} | {r['blocks']} | {o['count']}/{o['total']} = {o['rate']:.2f} "
              f"[{o['ci'][0]:.2f}, {o['ci'][1]:.2f}] | {c['rate']:.3f} [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}] "
              f"| {r['skew']:+.2f} / {r['kurtosis']:+.2f} | {r['ratio']:.2f} (p = {r['f_p']:.3f}) |")
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20000, help="constructed null blocks per arm")
    main(parser.parse_args().draws)
