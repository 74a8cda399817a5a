"""Learning curve of all-token on-policy distillation in the DIAL benchmark's regime: the share of the
in-distribution teacher gap closed every ``--every`` steps, per (targets per step, learning rate, steps) setting.

The pilot behind ``dial_opd.py``'s design (why 600 steps x 64 targets closed only 29% of the gap, and what
closes 40%): everything but the listed settings is ``dial_opd.Args()``'s, on one warm start.

Run: ``nice -n 15 python benchmarks/dial_curve.py --warm-start 0 64,1e-3,1500 256,1e-3,1000 256,2e-3,800``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import dial_opd

from rsigym.agents.train import opd


def curve(warm_start: int, prompts_per_step: int, learning_rate: float, steps: int, every: int,
          out_dir: str = "runs/dial_opd") -> dict:
    """One all-token run (seed of block 0); returns the start, the teacher and ``[step, share closed]`` pairs."""
    args = dial_opd.Args(out_dir=out_dir)
    run_args = dataclasses.replace(dial_opd.run_args(args, "all", warm_start, 100), steps=steps, eval_every=steps,
                                   prompts_per_step=prompts_per_step, learning_rate=learning_rate, curve_every=every)
    result = opd.main(run_args)
    start = result["initial_in_distribution"]["mean_at_k"]
    teacher = result["teacher_in_distribution"]["mean_at_k"]
    return {"start": start, "teacher": teacher,
            "curve": [[h["step"], (h["mean_at_k_in"] - start) / (teacher - start)]
                      for h in result["history"] if "mean_at_k_in" in h]}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-start", type=int, default=0)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("settings", nargs="+", help="targets per step,learning rate,steps")
    ns = parser.parse_args()
    for setting in ns.settings:
        pps, lr, steps = setting.split(",")
        started = time.perf_counter()
        out = curve(ns.warm_start, int(pps), float(lr), int(steps), ns.every)
        shares = ", ".join(f"{share:.2f} at {step}" for step, share in out["curve"])
        print(f"warm start {ns.warm_start}, {pps} targets/step, lr {lr}: Mean@k in distribution {out['start']:.3f} "
              f"(teacher {out['teacher']:.3f}); gap closed {shares} ({time.perf_counter() - started:.0f} s)", flush=True)
