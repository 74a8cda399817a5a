"""Calibration of the workflow pairwise judge on constructed pairs whose better workspace is known.

Cases are written here, by hand, from each task's planted truth (the key) and the two analysis
programs; nothing calls the grader. Per family and instance:

* ``label vs answer``: naive code whose results.json claims a validated method and gives a wrong
  answer, against sound code with a plain label and the right answer (better: the second);
* ``checks cannot separate``: both results valid, both reports complete, the same plain label;
  sound code with the right answer against naive code with a wrong one;
* ``missing results``: a valid (wrong) answer against no results.json (better: the valid one);
* ``report``: the same code and answer, a complete report against one without Validation;
* ``edited answer``: the same sound code, the right answer against a wrong one typed over it
  (what no reader of the code can see: the judge's blind spot, counted, not hidden);
* ``identical``: the same workspace twice (must be "tie", not "first").

Every pair is also judged position-swapped. The judge and the coin control run through the same
pipeline (``PairwiseJudge``: both orders, disagreeing orders are a tie). The unit of inference is
the constructed pair; K of N verdicts that match the known truth are printed per case kind, with
the coin's per-order agreement on separable pairs (chance: 50%).

    python benchmarks/workflow_judge_calibration.py [--instances 2] [--judge rsigym/workflow_judge]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

import rsigym.envs.workflow.mass_policies  # noqa: F401  (offline judges)
from rsigym.envs.workflow.families import FAMILIES
from rsigym.envs.workflow.pairwise_judge import PairwiseJudge
from rsigym.envs.workflow.tasks import WorkflowTask, make_task

FULL = "# Report\n\n## Method\nWhat we did.\n\n## Result\nThe answer.\n\n## Validation\nHow we checked.\n"
SHORT = "# Report\n\n## Method\nWhat we did.\n\n## Result\nThe answer.\n"
KINDS = ("label vs answer", "checks cannot separate", "missing results", "report", "edited answer", "identical")


@dataclass
class Args:
    """Benchmark settings."""

    instances: int = 2                       # task instances per family
    judge: str = "rsigym/workflow_judge"
    control: str = "rsigym/workflow_judge_coin"
    salt: str = "ca11b8a7e" + "0" * 23       # fixed, so the table reproduces


def wrong_answer(task: WorkflowTask) -> dict[str, Any]:
    """An answer that the planted truth says is wrong (built from the key, not from the grader)."""
    key, name = task.key, task.family.name
    if name == "irrelevant_features":
        relevant = sorted(f"x{j}" for j in range(8) if f"x{j}" not in key["irrelevant_features"])
        return {"irrelevant_features": sorted(key["irrelevant_features"][1:] + relevant[:1])}
    if name == "model_comparison":
        return {"best_model": "linear" if key["best_model"] != "linear" else "knn1"}
    if name == "changepoint":
        return {"changepoint_index": (key["changepoint_index"] + 60) % 240}
    if name == "ab_test":
        others = sorted({f"v{i}" for i in range(1, 6)} - set(key["significant_variants"]))
        return {"significant_variants": [key["significant_variants"][0], others[0]]}
    return {"outlier_rows": sorted(key["outlier_rows"][:3] + [r + 1 for r in key["outlier_rows"][3:]])}


def _workspace(code: str | None, answer: dict[str, Any] | None, label: str, report: str | None) -> dict[str, str]:
    files: dict[str, str] = {}
    if code is not None:
        files["analysis.py"] = code
    if answer is not None:
        files["results.json"] = json.dumps({**answer, "method": label})
    if report is not None:
        files["report.md"] = report
    return files


def cases(task: WorkflowTask) -> list[tuple[str, dict[str, str], dict[str, str], str]]:
    """(kind, a, b, truth in {"a", "b", "tie"}) for one task, before the position swap."""
    robust, naive = task.family.code["robust"], task.family.code["naive"]
    right, wrong = {k: v for k, v in task.key.items() if k in task.family.result_schema["required"]}, wrong_answer(task)
    sound = _workspace(robust, right, "analysis", FULL)
    return [
        ("label vs answer", _workspace(naive, wrong, "5-fold cross-validation, held-out", FULL),
         _workspace(robust, right, "quick look", FULL), "b"),
        ("checks cannot separate", sound, _workspace(naive, wrong, "analysis", FULL), "a"),
        ("missing results", _workspace(naive, wrong, "analysis", FULL), _workspace(robust, None, "analysis", FULL), "a"),
        ("report", sound, _workspace(robust, right, "analysis", SHORT), "a"),
        ("edited answer", sound, _workspace(robust, wrong, "analysis", FULL), "a"),
        ("identical", sound, dict(sound), "tie"),
    ]


def main(args: Args) -> dict[str, Any]:
    console = Console(width=160)
    started = time.perf_counter()
    judges = {"judge": PairwiseJudge(args.judge, seed=1), "coin": PairwiseJudge(args.control, seed=1)}
    tally: dict[tuple[str, str], list[int]] = {}
    per_order: dict[str, list[int]] = {"judge": [0, 0], "coin": [0, 0]}
    for family in sorted(FAMILIES):
        for index in range(args.instances):
            task = make_task(f"{family}-{100 + index:03d}", args.salt)
            for kind, a, b, truth in cases(task):
                swapped = {"a": "b", "b": "a", "tie": "tie"}[truth]
                for first, second, want in ((a, b, truth), (b, a, swapped)):
                    for name, judge in judges.items():
                        verdict = judge.compare(task.brief, first, second)
                        cell = tally.setdefault((kind, name), [0, 0])
                        cell[0] += verdict.winner == want
                        cell[1] += 1
                        if want != "tie":
                            per_order[name][0] += sum(o == want for o in verdict.orders)
                            per_order[name][1] += len(verdict.orders)
    table = Table(title=f"Workflow judge calibration ({len(FAMILIES)} families x {args.instances} instances, "
                        "each pair in both positions; unit: the constructed pair)")
    for column in ("case kind", "truth", f"judge ({args.judge}) K/N", f"coin ({args.control}) K/N"):
        table.add_column(column)
    totals = {"judge": [0, 0], "coin": [0, 0]}
    for kind in KINDS:
        row = [kind, "tie" if kind == "identical" else "the better one"]
        for name in ("judge", "coin"):
            k, n = tally[(kind, name)]
            totals[name][0] += k
            totals[name][1] += n
            row.append(f"{k}/{n}")
        table.add_row(*row)
    table.add_row("all", "", f"{totals['judge'][0]}/{totals['judge'][1]}", f"{totals['coin'][0]}/{totals['coin'][1]}")
    console.print(table)
    rates = {name: k / n for name, (k, n) in per_order.items()}
    console.print(f"per-order agreement on separable pairs: judge {rates['judge']:.0%} "
                  f"({per_order['judge'][0]}/{per_order['judge'][1]}), coin {rates['coin']:.0%} "
                  f"({per_order['coin'][0]}/{per_order['coin'][1]}); chance 50%")
    k, n = totals["judge"]
    kc, nc = totals["coin"]
    if n < 20:
        verdict = "insufficient data"
    elif k / n > kc / nc and abs(rates["coin"] - 0.5) < 0.15:
        verdict = f"judge above the coin control ({k}/{n} vs {kc}/{nc}); the coin is at chance"
    else:
        verdict = f"JUDGE NOT ABOVE THE CONTROL or the control is off chance ({k}/{n} vs {kc}/{nc})"
    console.print(f"K = {k} of N = {n} judge verdicts match the constructed truth; verdict: {verdict}")
    console.print(f"wall time {time.perf_counter() - started:.1f} s")
    return {"tally": tally, "totals": totals, "per_order": rates, "verdict": verdict}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=2)
    parser.add_argument("--judge", default="rsigym/workflow_judge")
    parser.add_argument("--control", default="rsigym/workflow_judge_coin")
    ns = parser.parse_args()
    main(Args(instances=ns.instances, judge=ns.judge, control=ns.control))
    sys.exit(0)
