"""Label each program of this set by running it: sound or naive by outcome, not by its author's intent.

Each program runs (local sandbox, this interpreter, so numpy, scipy, sklearn and pandas are there)
on ``INSTANCES`` fresh tasks of its family: ``make_task`` with a fresh 128-bit salt and a random
task index, scored by the family's own score against the task's key. A program whose mean answer
score is at least ``SOUND_SCORE`` is labelled sound, any other naive. The labels and each program's
scores go to ``labels.json``. This is the ruler the execution judge is calibrated against; the
judge never reads it, nor the task's generator or key (it draws its own instances).

Usage: python benchmarks/workflow_exec_judge_set/label.py [--instances 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from rsigym.envs.workflow.exec_soundness import FIELDS, run_analysis
from rsigym.envs.workflow.tasks import make_task
from rsigym.sandbox import LocalSandbox, SandboxLimits

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
SOUND_SCORE = 0.75
LIMITS = SandboxLimits(memory_mb=4096, pids=4096)


def programs() -> dict[str, tuple[str, str]]:
    """name -> (family, code) for every program file (``<family>__<idiom>.py``)."""
    return {p.stem: (p.stem.split("__")[0], p.read_text()) for p in sorted(PROGRAMS.glob("*.py"))}


def label(name: str, family: str, code: str, rng: np.random.Generator, instances: int,
          sandbox: LocalSandbox) -> dict[str, object]:
    scores = []
    for _ in range(instances):
        salt = "".join(f"{b:02x}" for b in rng.integers(0, 256, size=16))
        task = make_task(f"{family}-{int(rng.integers(0, 150)):03d}", salt)
        files = {k: v for k, v in task.files.items() if k != "task.md"}
        results, _ = run_analysis(sandbox, code, files, interpreter=sys.executable)
        try:
            score = float(task.family.score(results, task.key)) if results and FIELDS[family] in results else 0.0
        except (TypeError, ValueError, KeyError):
            score = 0.0
        scores.append(score)
    mean = float(np.mean(scores))
    return {"family": family, "label": "sound" if mean >= SOUND_SCORE else "naive", "mean_score": round(mean, 3),
            "scores": [round(s, 3) for s in scores]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20261207)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    out = {}
    with LocalSandbox(LIMITS) as sandbox:
        for name, (family, code) in programs().items():
            out[name] = label(name, family, code, rng, args.instances, sandbox)
            print(f"{name:55s} {out[name]['label']:6s} {out[name]['mean_score']:.2f} {out[name]['scores']}", flush=True)
    (HERE / "labels.json").write_text(json.dumps({"instances": args.instances, "seed": args.seed,
                                                  "sound_score": SOUND_SCORE, "programs": out}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
