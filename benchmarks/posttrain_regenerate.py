"""Regeneration check of the post-training benchmarks: a rerun agrees with the committed results within a
tolerance measured from the spread of reruns, and gives the same verdicts.

Runs are deterministic on one machine (1 thread, seeded generators), but another CPU rounds sums in
another order, and a training run amplifies the difference: block A of vanilla GRPO gave end Pass@k
0.456 on another machine against 0.411 here, about one MDD. So a rerun elsewhere is treated like a
rerun with other random draws. Its measured spread is the null arm of the power study: vanilla
(all-token distillation) against itself with the seed shifted, on every power block. The tolerance
of a block mean is ``TOLERANCE_SDS`` standard deviations of that block-mean difference over the
power blocks (the results file's ``tolerance``). A rerun passes when every block mean of every
variant is within the tolerance of the committed one and every verdict (claims per block and across
blocks, stability columns, power labels) is the same.

Run: ``python benchmarks/posttrain_regenerate.py`` regenerates both quick presets in a temporary folder and
compares them with ``benchmarks/results/*_quick.json`` (exit 1 on a mismatch; ``--write`` rewrites them).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from posttrain_verdicts import warm_start_means

TOLERANCE_SDS = 2.0
ROOT = Path(__file__).resolve().parents[1]
QUICK = {"grpo_dropout": "benchmarks/results/grpo_dropout_quick.json", "dial_opd": "benchmarks/results/dial_opd_quick.json"}


def rerun_tolerance(power_per_run: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]], baseline: str,
                    rerun: str, metrics: Sequence[str], floor: float) -> dict[str, Any]:
    """Per metric, ``TOLERANCE_SDS`` x the SD over blocks of the block-mean difference ``rerun - baseline``,
    at least ``floor`` (one evaluation problem's share: a metric that did not move between the measured
    reruns may still move by one problem elsewhere).

    ``power_per_run``: ``{block: {variant: {run key: metrics}}}``. Under 2 blocks: nan (no spread measured).
    """
    tolerance: dict[str, Any] = {"sds": TOLERANCE_SDS, "blocks": len(power_per_run), "baseline": baseline,
                                 "rerun": rerun, "floor": floor, "metrics": {}}
    for metric in metrics:
        block_means = []
        for block in power_per_run.values():
            keys = sorted(set(block[rerun]) & set(block[baseline]))
            deltas = {k: block[rerun][k][metric] - block[baseline][k][metric] for k in keys}
            block_means.append(statistics.fmean(warm_start_means(deltas)))
        sd = statistics.stdev(block_means) if len(block_means) > 1 else math.nan
        tolerance["metrics"][metric] = max(TOLERANCE_SDS * sd, floor)
    return tolerance


def mismatches(committed: Mapping[str, Any], regenerated: Mapping[str, Any]) -> list[str]:
    """Every way ``regenerated`` disagrees with ``committed``: a setting, a block mean outside the committed
    tolerance, a verdict. Empty when the rerun agrees."""
    out = []
    if committed["settings"] != regenerated["settings"]:
        out.append("settings differ")
        return out
    tolerance = committed["tolerance"]["metrics"]
    for name, block in committed["blocks"].items():
        other = regenerated["blocks"].get(name)
        if other is None:
            out.append(f"block {name} missing")
            continue
        for variant, summary in block["variants"].items():
            for metric, limit in tolerance.items():
                a, b = summary["mean"][metric], other["variants"][variant]["mean"][metric]
                if not abs(a - b) <= limit:
                    out.append(f"block {name} {variant} {metric}: {b:.4f} against {a:.4f} (tolerance {limit:.4f})")
            for metric, comparison in summary.items():
                if metric.startswith("vs_"):
                    for m, c in comparison.items():
                        if c["label"] != other["variants"][variant][metric][m]["label"]:
                            out.append(f"block {name} {variant} {metric} {m}: verdict {other['variants'][variant][metric][m]['label']} "
                                       f"against {c['label']}")
    if committed["stability"] != regenerated["stability"]:
        out.append("stability columns differ")
    for a, b in zip(committed["claims"], regenerated["claims"], strict=True):
        labels_a = [a["verdict"], *(c["label"] for c in a["blocks"].values())]
        labels_b = [b["verdict"], *(c["label"] for c in b["blocks"].values())]
        if labels_a != labels_b:
            out.append(f"claim {a['id']}: verdicts {labels_b} against {labels_a}")
    for a, b in zip(committed.get("power", []), regenerated.get("power", []), strict=True):
        if a["labels"] != b["labels"]:
            out.append(f"power {a['arm']} {a['variant']} {a['metric']}: labels differ")
    return out


def regenerate(module_name: str, out_dir: Path) -> dict[str, Any]:
    """The module's quick preset, run in ``out_dir`` (a fresh run cache), results not written."""
    module = __import__(module_name)
    args = dataclasses.replace(module.PRESETS["quick"], out_dir=str(out_dir), results="")
    result: dict[str, Any] = json.loads(json.dumps(module.main(args)))  # as read back from a file
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the committed quick results")
    ns = parser.parse_args(argv)
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        for module_name, path in QUICK.items():
            regenerated = regenerate(module_name, Path(folder) / module_name)
            if ns.write:
                (ROOT / path).write_text(json.dumps(regenerated, indent=1) + "\n")
                continue
            found = mismatches(json.loads((ROOT / path).read_text()), regenerated)
            print(f"{module_name}: " + ("agrees with " + path if not found else "\n  ".join(["differs:", *found])))
            failed |= bool(found)
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
