"""Judges on the held-apart program set: do they credit sound code in other idioms and refuse naive code with good names?

Each program of ``workflow_soundness_set.PROGRAMS`` meets the family's shipped program of the
opposite label (a sound rewrite meets the shipped naive program; a naive-with-names program or
a partial fix meets the shipped robust one). Both workspaces carry the same valid answer (the
key's), the same plain label and a complete report, so only the code differs; the truth is
"the sound one is better". Every pair is judged in both positions through ``PairwiseJudge``
(both orders inside, disagreement is a tie); the unit of inference is the constructed pair, K of
N with an exact (Clopper-Pearson) CI, per case kind and in all, for the shipped judge, the
soundness-reading judge and the coin. ``--check-labels`` also runs every program on fresh
instances in the sandbox and prints its mean answer score (report only: a mislabelled program
would show).

    python benchmarks/workflow_soundness_calibration.py [--check-labels] [--shipped-set] [--out benchmarks/results/workflow_soundness_calibration.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scipy import stats as st

import rsigym.envs.workflow.mass_policies  # noqa: F401  (offline judges)
from rsigym.envs.workflow.families import FAMILIES
from rsigym.envs.workflow.pairwise_judge import PairwiseJudge
from rsigym.envs.workflow.tasks import grade_workspace, make_task

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workflow_soundness_set import PROGRAMS  # noqa: E402

FULL = "# Report\n\n## Method\nWhat we did.\n\n## Result\nThe answer.\n\n## Validation\nHow we checked.\n"
KINDS = {"sound rewrite": "sound", "naive with names": "unsound", "partial fix": "unsound"}


@dataclass
class Args:
    """Benchmark settings."""

    judges: list[str] = field(default_factory=lambda: ["rsigym/workflow_judge", "rsigym/workflow_judge_sound",
                                                       "rsigym/workflow_judge_coin"])
    salt: str = "5011d0" * 6          # fixed, so the table reproduces
    check_labels: bool = False
    shipped_set: bool = False          # also score each judge on the shipped calibration's constructed pairs
    out: str | None = None


def kind_of(index: int, label: str) -> str:
    """The set lists, per family, two sound rewrites, two naive-with-names programs, one partial fix."""
    return "sound rewrite" if label == "sound" else "naive with names" if index < 4 else "partial fix"


def exact(k: int, n: int) -> dict[str, Any]:
    ci = st.binomtest(k, n).proportion_ci(method="exact") if n else None
    return {"k": k, "n": n, "low": ci.low if ci else None, "high": ci.high if ci else None}


def label_check(salt: str, instances: int = 3) -> dict[str, float]:
    """Mean answer score of every program on fresh instances (report only)."""
    from rsigym.sandbox import open_sandbox

    scores: dict[str, float] = {}
    with open_sandbox("local") as box:
        for family, programs in PROGRAMS.items():
            for name, _, code in programs:
                got = []
                for i in range(instances):
                    task = make_task(f"{family}-{300 + i:03d}", salt)
                    box.exec(["sh", "-c", "find . -mindepth 1 -delete"], timeout=30)
                    box.write_files({**task.files, "analysis.py": code})
                    box.exec(["python3", "analysis.py"], timeout=60)
                    text = box.exec(["cat", "results.json"], timeout=10).stdout
                    got.append(grade_workspace(task, {"results.json": text})[1]["answer_score"] if text else 0.0)
                scores[f"{family}: {name}"] = sum(got) / len(got)
    return scores


def main(args: Args) -> dict[str, Any]:
    started = time.perf_counter()
    judges = {model: PairwiseJudge(model, seed=1) for model in args.judges}
    tally: dict[str, dict[str, list[int]]] = {m: {k: [0, 0] for k in KINDS} for m in args.judges}
    misses: dict[str, list[str]] = {m: [] for m in args.judges}
    for family, programs in PROGRAMS.items():
        task = make_task(f"{family}-100", args.salt)
        answer = {k: v for k, v in task.key.items() if k in task.family.result_schema["required"]}
        results = json.dumps({**answer, "method": "analysis"})
        for index, (name, label, code) in enumerate(programs):
            other = task.family.code["naive" if label == "sound" else "robust"]
            held = {"analysis.py": code, "results.json": results, "report.md": FULL}
            shipped = {"analysis.py": other, "results.json": results, "report.md": FULL}
            kind = kind_of(index, label)
            for a, b, want in ((held, shipped, "a" if label == "sound" else "b"),
                               (shipped, held, "b" if label == "sound" else "a")):
                for model, judge in judges.items():
                    hit = judge.compare(task.brief, a, b).winner == want
                    tally[model][kind][0] += hit
                    tally[model][kind][1] += 1
                    if not hit:
                        misses[model].append(f"{family}: {name}")
    table = {m: {k: exact(*v) for k, v in kinds.items()} for m, kinds in tally.items()}
    totals = {m: exact(sum(v[0] for v in kinds.values()), sum(v[1] for v in kinds.values()))
              for m, kinds in tally.items()}
    for model in args.judges:
        print(f"{model}: " + "; ".join(f"{k} {c['k']}/{c['n']}" for k, c in table[model].items())
              + f"; all {totals[model]['k']}/{totals[model]['n']} [{totals[model]['low']:.2f}, {totals[model]['high']:.2f}]"
              + (f"; missed: {sorted(set(misses[model]))}" if misses[model] else ""))
    result: dict[str, Any] = {"args": asdict(args), "table": table, "totals": totals,
                              "misses": {m: sorted(set(v)) for m, v in misses.items()}}
    if args.shipped_set:  # the constructed pairs the shipped judge was built against, for comparison
        import workflow_judge_calibration as shipped

        result["shipped_set"] = {}
        for model in args.judges[:-1]:
            out = shipped.main(shipped.Args(judge=model))
            result["shipped_set"][model] = exact(*out["totals"]["judge"])
            result["shipped_set"]["coin"] = exact(*out["totals"]["coin"])
    if args.check_labels:
        result["label_check"] = label_check(args.salt)
        for name, score in result["label_check"].items():
            print(f"  {name}: mean answer score {score:.2f}")
    result["wall_s"] = time.perf_counter() - started
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"wall time {result['wall_s']:.0f} s")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check-labels", action="store_true")
    parser.add_argument("--shipped-set", action="store_true")
    parser.add_argument("--out", default=None)
    ns = parser.parse_args()
    main(Args(check_labels=ns.check_labels, shipped_set=ns.shipped_set, out=ns.out))
    sys.exit(0)
