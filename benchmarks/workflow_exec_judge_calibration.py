"""Calibrate the execution judge on a program set written apart from it, beside the old judges.

The set (``benchmarks/workflow_exec_judge_set/``, provenance in its README) holds 40 analysis
programs over the five workflow families, labelled sound or naive by running them on fresh tasks
(``label.py``, ``labels.json``). Each program is judged by

* ``exec``: ``exec_soundness.execution_evidence`` (runs it on instances the judge draws itself);
* ``sound``: ``soundness.missing_evidence`` (the syntax-tree judge behind ``rsigym/workflow_judge_sound``);
* ``regex``: ``mass_policies.code_evidence`` (the token judge behind ``rsigym/workflow_judge``).

and the script prints, per judge, the share right on naive programs, on sound programs, and in
pairwise comparisons (every sound program against every naive one of the same family; right when
the sound one ranks strictly higher, a tie is wrong), with exact Clopper-Pearson 95% intervals.
For the two reading judges a pairwise comparison is the offline policy's ranking with equal
results and report: the workspace whose code shows the evidence wins.

Usage: python benchmarks/workflow_exec_judge_calibration.py [--instances 4] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scipy.stats import binomtest

from rsigym.envs.workflow.exec_soundness import execution_evidence
from rsigym.envs.workflow.mass_policies import code_evidence
from rsigym.envs.workflow.soundness import missing_evidence
from rsigym.sandbox import LocalSandbox, SandboxLimits

SET = Path(__file__).resolve().parent / "workflow_exec_judge_set"
LIMITS = SandboxLimits(memory_mb=4096, pids=4096)


def load_set() -> dict[str, dict[str, str]]:
    """name -> {family, label, code} from ``labels.json`` and the program files."""
    labels = json.loads((SET / "labels.json").read_text())["programs"]
    return {name: {"family": row["family"], "label": row["label"],
                   "code": (SET / "programs" / f"{name}.py").read_text()} for name, row in sorted(labels.items())}


def _ci(k: int, n: int) -> str:
    if n == 0:
        return "n/a"
    low, high = binomtest(k, n).proportion_ci(method="exact")
    return f"{k}/{n} = {k / n:.2f} [{low:.2f}, {high:.2f}]"


def scores(programs: dict[str, dict[str, str]], instances: int, seed: int) -> dict[str, dict[str, float]]:
    """judge -> program -> score (higher is sounder); a score >= 0.75 ('exec') or 1 is a 'sound' call."""
    out: dict[str, dict[str, float]] = {"exec": {}, "sound": {}, "regex": {}}
    with LocalSandbox(LIMITS) as sandbox:
        for name, p in programs.items():
            evidence = execution_evidence(p["family"], p["code"], sandbox, instances=instances, seed=seed,
                                          interpreter=sys.executable)
            out["exec"][name] = evidence.share
            out["sound"][name] = float(not missing_evidence(p["family"], p["code"]))
            out["regex"][name] = float(bool(code_evidence(p["code"])))
            print(f"  {name:55s} {p['label']:6s} exec {evidence.passed}/{evidence.total}  "
                  f"sound {out['sound'][name]:.0f}  regex {out['regex'][name]:.0f}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    programs = load_set()
    table = scores(programs, args.instances, args.seed)
    cut = {"exec": 0.75, "sound": 1.0, "regex": 1.0}
    sound = [n for n, p in programs.items() if p["label"] == "sound"]
    naive = [n for n, p in programs.items() if p["label"] == "naive"]
    pairs = [(s, v) for s in sound for v in naive if programs[s]["family"] == programs[v]["family"]]
    print(f"\nset: {len(programs)} programs ({len(sound)} sound, {len(naive)} naive by execution), "
          f"{len(pairs)} same-family pairs; exec judge: {args.instances} instances per program, seed {args.seed}")
    print(f"{'judge':6s} | {'naive called naive':28s} | {'sound called sound':28s} | {'pairwise right':28s}")
    for judge, row in table.items():
        right_naive = sum(row[n] < cut[judge] for n in naive)
        right_sound = sum(row[n] >= cut[judge] for n in sound)
        right_pairs = sum(row[s] > row[v] for s, v in pairs)
        print(f"{judge:6s} | {_ci(right_naive, len(naive)):28s} | {_ci(right_sound, len(sound)):28s} | "
              f"{_ci(right_pairs, len(pairs)):28s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
