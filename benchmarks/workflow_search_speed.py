"""What a control replication of ``workflow_search_runs.py`` costs, before and after the cheaper execution, same runs.

A control replication is ``--runs`` (20) search runs, each with the seed, coin-judge loop and
oracle-judge loop arms. This times the same runs (replication ``--replication``, runs
0..``--sample``-1) three ways, in one invocation:

* ``before``: as the benchmark ran them before: the spec validator built on every call, and the
  workspace listed and cleared after each program by a process of its own in the sandbox;
* ``after``: the validator built once, a local sandbox's work dir listed and cleared in this
  process (the same ``collect`` function);
* ``after, N workers``: the same runs side by side in ``--workers`` processes (warmed first).

``before`` and ``after`` alternate run by run (which goes first alternates too), so load drift on
the shared machine falls on both. Every way must return the same run results (checked; a
mismatch is an error). The table gives the median seconds per run, the replication time that
implies (x runs), and the ratio to ``before``. It also counts memo keys met by more than one run
(programs or whole workflow runs): each run has its own salt, so a memo shared across runs or
replications (on disk) would answer none of a new replication's executions.

    python benchmarks/workflow_search_speed.py --sample 4 --workers 2 --out benchmarks/results/workflow_search_speed.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import numpy as np

import rsigym.envs.workflow.aec_workspace as aec_workspace
import rsigym.envs.workflow.spec as spec_module
from rsigym.sandbox import open_sandbox

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workflow_search_runs as runs  # noqa: E402


class _PerCallValidator:
    """The validator as it was: built from the schema on every validation."""

    def validate(self, instance: Any) -> None:
        jsonschema.Draft202012Validator(spec_module.SPEC_SCHEMA).validate(instance)


@contextlib.contextmanager
def before() -> Iterator[None]:
    """The execution path the benchmark had before: see the module docstring."""
    saved = (spec_module._SPEC_VALIDATOR, spec_module._check_returns, aec_workspace.HOST_SIDE_LOCAL)
    spec_module._SPEC_VALIDATOR = _PerCallValidator()  # type: ignore[assignment]
    spec_module._check_returns = jsonschema.Draft202012Validator.check_schema  # type: ignore[assignment]
    aec_workspace.HOST_SIDE_LOCAL = False
    try:
        yield
    finally:
        spec_module._SPEC_VALIDATOR, spec_module._check_returns, aec_workspace.HOST_SIDE_LOCAL = saved


def main(sample: int, replication: int, workers: int, out: str | None, budget: int = 8,
         test_per_family: int = 2) -> dict[str, Any]:
    args = runs.Args(workers=workers, budget=budget, test_per_family=test_per_family)
    arms = list(runs.CONTROL_ARMS)
    seconds: dict[str, list[float]] = {"before": [], "after": []}
    results: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    keys: Counter[str] = Counter()
    with open_sandbox(args.sandbox) as box:
        runs.one_run(runs.Args(budget=1, test_per_family=1), 99, 0, ["seed"], box)  # imports and caches warmed
        for run in range(sample):
            order = ["before", "after"] if run % 2 == 0 else ["after", "before"]
            for way in order:
                with before() if way == "before" else contextlib.nullcontext():
                    t0 = time.perf_counter()
                    result, memo = runs.one_run(args, replication, run, arms, box)
                    seconds[way].append(time.perf_counter() - t0)
                results[way].append(result)
                if way == "after":
                    keys.update({f"program:{k}" for k in memo.programs} | {f"run:{k!r}" for k in memo.runs})
        label = f"after, {workers} workers"
        if workers > 1:
            with runs.worker_pool(workers) as pool:
                pool.map(runs._run_in_worker, [(runs.Args(budget=1, test_per_family=1), 99, i, ["seed"])
                                               for i in range(workers)], chunksize=1)  # each worker warmed
                t0 = time.perf_counter()
                side = runs.run_all(runs.Args(runs=sample, workers=workers, budget=budget, test_per_family=test_per_family),
                                    replication, arms, box, pool)
                seconds[label] = [(time.perf_counter() - t0) / sample]
            results[label] = [r for r, _ in side]
    for way, got in results.items():
        if got != results["before"]:
            raise AssertionError(f"{way} returned other run results than before: the speed-up changed a result")
    base = float(np.median(seconds["before"]))
    table = {way: {"median_s_per_run": float(np.median(s)), "replication_s": float(np.median(s)) * args.runs,
                   "ratio": base / float(np.median(s)), "per_run_s": s} for way, s in seconds.items()}
    shared = sum(count > 1 for count in keys.values())
    result = {"args": {"sample": sample, "replication": replication, "workers": workers, "runs": args.runs,
                       "arms": arms, "budget": args.budget, "test_per_family": args.test_per_family,
                       "sandbox": args.sandbox},
              "table": table, "identical_results": True, "memo_keys": len(keys), "memo_keys_in_several_runs": shared}
    print(render(result))
    if out:
        Path(out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


def render(result: dict[str, Any]) -> str:
    """The speed table (markdown) and the memo-overlap sentence."""
    a = result["args"]
    lines = [f"Cost of one control replication ({a['runs']} runs x {len(a['arms'])} arms, budget {a['budget']}, "
             f"{a['sandbox']} sandbox), timed on {a['sample']} of its runs in one invocation; the same run results "
             "every way:", "",
             "| execution | median s per run (workers: wall / runs) | s per replication (x runs) | speed-up vs before |", "|---|---:|---:|---:|"]
    for way, row in sorted(result["table"].items(), key=lambda item: (item[0] != "before", item[0])):
        lines.append(f"| {way} | {row['median_s_per_run']:.1f} | {row['replication_s']:.0f} | {row['ratio']:.2f}x |")
    lines.append(f"\nMemo keys met by more than one run: {result['memo_keys_in_several_runs']} of "
                 f"{result['memo_keys']} (each run has its own salt, so a memo shared across runs or on disk "
                 "would answer none of a new replication's executions).")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=4, help="runs of the replication timed each way")
    parser.add_argument("--replication", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--out", default=None)
    ns = parser.parse_args()
    main(ns.sample, ns.replication, ns.workers, ns.out, budget=ns.budget)
    sys.exit(0)
