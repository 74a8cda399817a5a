"""MASS-style workflow search with the search run as the unit: many independent runs per arm, controls replicated.

A *run* is one search from the seed workflow under its own secret salt (its own training and
held-out task instances) and its own seed, spending ``--budget`` candidate workflows (each run
on the five training tasks, one per family); the workflow it ends with then runs on
``--test-per-family`` held-out instances per family. The arms of one run share its salt and its
role seed (paired: they meet the same instances with the same role noise):

* ``seed``: no search;
* ``random search``: ``budget`` independent random candidates (1-3 generic edits of the seed),
  the shipped judge keeps the one it prefers most over the seed;
* ``coin-judge loop``: the hill-climbing loop with a coin in the judge's seat (the null control);
* ``judge loop``: the hill-climbing loop with the shipped judge (``rsigym/workflow_judge``);
* ``oracle-judge loop``: the loop with a judge that reads the grader (the positive control:
  what a judge known to be right does with the same optimiser and budget);
* on request (``--arms``): ``reasons loop`` (the shipped judge, the optimiser that aims its edits
  at the judge's stated reasons, ``rsigym/workflow_optimizer_reasons``), ``sound-judge loop`` and
  ``sound-judge reasons loop`` (the same with the soundness-reading judge). Runs are paired by
  index across invocations (same salts and seeds), so these meet the judge loop's instances.

Per arm over ``--runs`` runs: the share of runs whose final workflow writes the sound analysis
program on most held-out tasks (exact Clopper-Pearson CI), the mean held-out score (t CI over
runs), the paired difference to the seed per run (t CI over runs, minimum detectable difference
at alpha 0.05 and power 0.8) and its verdict. The whole design is repeated ``--replications``
times for the controls (seed, coin loop, oracle loop, on fresh salts): the oracle loop must be
called better than the seed in >= 80% of replications and the coin loop in <= 5% (exact CIs).
Execution is memoised (``memo.ExecutionMemo``: workspace hash -> program outcome, run inputs
-> run), which is what makes this many runs affordable; the memo's hits are printed.

    python benchmarks/workflow_search_runs.py --runs 20 --replications 10 --out benchmarks/results/workflow_search_runs.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as st

import rsigym.envs.workflow.mass_policies  # noqa: F401  (offline judge and optimiser)
import rsigym.envs.workflow.policies  # noqa: F401  (offline roles)
from rsigym.envs.workflow.agents import RolePlayer
from rsigym.envs.workflow.families import FAMILIES
from rsigym.envs.workflow.mass import EvolutionResult, Execution, evolve, execute, random_search
from rsigym.envs.workflow.memo import ExecutionMemo
from rsigym.envs.workflow.pairwise_judge import OracleJudge
from rsigym.envs.workflow.spec import seed_spec
from rsigym.sandbox import open_sandbox
from rsigym.report.stats import minimum_detectable_difference

ARMS = ("seed", "random search", "coin-judge loop", "judge loop", "oracle-judge loop")
# The optimiser that listens (run on request, paired by run with the arms above: same salts and seeds).
EXTRA_ARMS = ("reasons loop", "sound-judge loop", "sound-judge reasons loop")
CONTROL_ARMS = ("seed", "coin-judge loop", "oracle-judge loop")


@dataclass
class Args:
    """Benchmark settings."""

    runs: int = 20                    # independent search runs per arm and replication
    replications: int = 10            # repeats of the design for the controls (the first has every arm)
    budget: int = 8                   # candidate workflows per search run
    test_per_family: int = 2          # held-out instances per family per run
    role_model: str = "rsigym/workflow_scripted"
    judge_model: str = "rsigym/workflow_judge"
    coin_model: str = "rsigym/workflow_judge_coin"
    optimizer_model: str = "rsigym/workflow_optimizer"
    reasons_optimizer: str = "rsigym/workflow_optimizer_reasons"
    sound_judge: str = "rsigym/workflow_judge_sound"
    sandbox: str = "local"
    salt_base: str = "workflow-search-runs"   # salts are sha256(salt_base:replication:run): reproducible
    arms: list[str] = field(default_factory=lambda: list(ARMS))
    out: str | None = None
    append: bool = False              # add replications to those already in ``out`` (same settings)
    workers: int = 1                  # processes running a replication's runs side by side (runs are independent)


def run_salt(base: str, replication: int, run: int) -> str:
    return hashlib.sha256(f"{base}:{replication}:{run}".encode()).hexdigest()


def train_tasks(run: int) -> list[str]:
    return [f"{name}-{run % 50:03d}" for name in FAMILIES]


def test_tasks(per_family: int) -> list[str]:
    return [f"{name}-{100 + i:03d}" for name in FAMILIES for i in range(per_family)]


def wrote_sound_method(execution: Execution) -> bool:
    """Whether the delivered analysis.py is the family's sound program (with or without the file-name slip)."""
    robust = FAMILIES[execution.task_id.rpartition("-")[0]].code["robust"]
    code = execution.files.get("analysis.py", "")
    return robust in code or robust.replace("'results.json'", "'result.json'") in code


def search(arm: str, args: Args, seed: int, salt: str, box: Any,
           memo: ExecutionMemo | None) -> EvolutionResult | None:
    tasks = train_tasks(seed)
    common: dict[str, Any] = dict(role_model=args.role_model, seed=seed, sandbox=box, task_salt=salt, memo=memo)
    loop: dict[str, Any] = dict(rounds=args.budget, candidates=1, optimizer_model=args.optimizer_model, **common)
    if arm == "seed":
        return None
    if arm == "random search":
        return random_search(tasks, judge_model=args.judge_model, budget=args.budget, **common)
    if arm == "coin-judge loop":
        return evolve(tasks, judge_model=args.coin_model, **loop)
    if arm == "judge loop":
        return evolve(tasks, judge_model=args.judge_model, **loop)
    if arm == "oracle-judge loop":
        return evolve(tasks, judge_model="oracle", judge=OracleJudge(salt), **loop)
    listening = dict(loop, optimizer_model=args.reasons_optimizer)
    if arm == "reasons loop":
        return evolve(tasks, judge_model=args.judge_model, **listening)
    if arm == "sound-judge loop":
        return evolve(tasks, judge_model=args.sound_judge, **loop)
    if arm == "sound-judge reasons loop":
        return evolve(tasks, judge_model=args.sound_judge, **listening)
    raise ValueError(f"unknown arm {arm!r}; known: {', '.join(ARMS + EXTRA_ARMS)}")


def one_run(args: Args, replication: int, run: int, arms: list[str], box: Any,
            use_memo: bool = True) -> tuple[dict[str, Any], ExecutionMemo]:
    """Every arm of one run: held-out scores, whether the sound method was found, accepted edits.

    ``use_memo=False`` runs every execution afresh (the returned memo then stays empty): the
    check that the memo changes no result."""
    seed = replication * 1000 + run
    salt = run_salt(args.salt_base, replication, run)
    memo = ExecutionMemo()
    shared = memo if use_memo else None
    player = RolePlayer(args.role_model, seed=seed)
    out: dict[str, Any] = {}
    for arm in arms:
        result = search(arm, args, seed, salt, box, shared)
        spec = seed_spec() if result is None else result.final_spec
        held = [execute(spec, t, player, seed=seed, sandbox=box, task_salt=salt, memo=shared)
                for t in test_tasks(args.test_per_family)]
        sound = sum(wrote_sound_method(e) for e in held)
        out[arm] = {"score": float(np.mean([e.score for e in held])), "sound_share": sound / len(held),
                    "found": sound * 2 > len(held),
                    "accepted": [] if result is None else [r.mutation.get("op", "candidate") for r in result.rounds
                                                            if r.accepted and r.mutation]}
    return out, memo


_MEMO_COUNTS = ("program_hits", "program_misses", "run_hits", "run_misses")


def _run_in_worker(job: tuple[Args, int, int, list[str]]) -> tuple[dict[str, Any], dict[str, int]]:
    """One run in a worker process, with the worker's own local sandbox."""
    args, replication, run, arms = job
    with open_sandbox(args.sandbox) as box:
        result, memo = one_run(args, replication, run, arms, box)
    return result, {key: getattr(memo, key) for key in _MEMO_COUNTS}


def run_all(args: Args, replication: int, arms: list[str], box: Any,
            pool: Any = None) -> list[tuple[dict[str, Any], dict[str, int]]]:
    """Every run of one replication, in run order: in this process, or over ``args.workers`` processes.

    A run depends only on (settings, replication, run): its salt, seeds and memo are its own, so
    running runs side by side changes no result (a test holds the two ways equal). ``pool`` (a
    ``multiprocessing`` pool of ``args.workers``) is reused; without one a pool is made for the call."""
    if args.workers <= 1:
        out = []
        for run in range(args.runs):
            result, memo = one_run(args, replication, run, arms, box)
            out.append((result, {key: getattr(memo, key) for key in _MEMO_COUNTS}))
        return out
    jobs = [(args, replication, run, arms) for run in range(args.runs)]
    if pool is not None:
        return list(pool.map(_run_in_worker, jobs, chunksize=1))
    with worker_pool(args.workers) as own:
        return list(own.map(_run_in_worker, jobs, chunksize=1))


def worker_pool(workers: int) -> Any:
    """A pool of fresh (spawned) worker processes."""
    import multiprocessing

    return multiprocessing.get_context("spawn").Pool(workers)


def proportion(k: int, n: int) -> dict[str, Any]:
    """k of n with the exact (Clopper-Pearson) 95% CI."""
    if n == 0:
        return {"k": 0, "n": 0, "rate": None, "low": None, "high": None}
    ci = st.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return {"k": k, "n": n, "rate": k / n, "low": float(ci.low), "high": float(ci.high)}


def mean_ci(values: list[float]) -> dict[str, Any]:
    """Mean with a t 95% CI over runs (the unit); None bounds under 2 values."""
    n = len(values)
    mean = float(np.mean(values)) if n else math.nan
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "sd": None, "n": n}
    sd = float(np.std(values, ddof=1))
    half = float(st.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return {"mean": mean, "low": mean - half, "high": mean + half, "sd": sd, "n": n}


def paired(values: list[float], base: list[float], min_runs: int = 5) -> dict[str, Any]:
    """Paired difference per run (arm minus base): t CI over runs, MDD, and its verdict."""
    diff = [a - b for a, b in zip(values, base)]
    summary = mean_ci(diff)
    if len(diff) < min_runs:
        return {**summary, "mdd": None, "verdict": f"insufficient data ({len(diff)} runs)"}
    summary["mdd"] = minimum_detectable_difference(summary["sd"], len(diff)) if summary["sd"] else 0.0
    if summary["sd"] == 0:  # every run gave the same difference: the CI is that value
        summary["low"] = summary["high"] = summary["mean"]
    summary["verdict"] = ("better" if summary["low"] > 0 else "worse" if summary["high"] < 0
                          else "no detectable difference")
    return summary


def summarise(runs: list[dict[str, Any]], arms: list[str]) -> dict[str, Any]:
    """Per arm: found-the-sound-method rate, held-out score over runs, paired difference to the seed."""
    out = {}
    for arm in arms:
        scores = [r[arm]["score"] for r in runs]
        out[arm] = {"found": proportion(sum(r[arm]["found"] for r in runs), len(runs)), "score": mean_ci(scores),
                    "vs_seed": paired(scores, [r["seed"]["score"] for r in runs]) if arm != "seed" else None}
    return out


def main(args: Args) -> dict[str, Any]:
    started = time.perf_counter()
    replications: list[dict[str, Any]] = []
    memo_totals = dict.fromkeys(_MEMO_COUNTS, 0)
    if args.append and args.out and Path(args.out).exists():  # go on where an earlier invocation stopped
        earlier = json.loads(Path(args.out).read_text())
        mismatch = {k for k in ("runs", "budget", "test_per_family", "salt_base", "role_model", "sandbox",
                                "judge_model", "coin_model", "optimizer_model")
                    if earlier["args"][k] != getattr(args, k)}
        if mismatch:
            raise ValueError(f"--append with other settings than {args.out}: {sorted(mismatch)}")
        replications, memo_totals = earlier["replications"], earlier["memo"]
        args.arms = earlier["args"]["arms"]
        started -= earlier["wall_s"]
    pool = worker_pool(args.workers) if args.workers > 1 else None
    with open_sandbox(args.sandbox) as box, contextlib.ExitStack() as stack:
        if pool is not None:
            stack.enter_context(pool)
        for replication in range(len(replications), len(replications) + args.replications):
            arms = list(args.arms) if replication == 0 else [a for a in CONTROL_ARMS if a in args.arms]
            t0 = time.perf_counter()
            runs = []
            for result, memo in run_all(args, replication, arms, box, pool):
                runs.append(result)
                for key in memo_totals:
                    memo_totals[key] += memo[key]
            summary = summarise(runs, arms)
            replications.append({"arms": arms, "runs": runs, "summary": summary,
                                 "wall_s": time.perf_counter() - t0})
            if args.out:  # what is done so far, so a cut-short run still leaves its replications
                write(args, replications, memo_totals, started)
            print(f"replication {replication}: " + "; ".join(
                f"{arm} {s['score']['mean']:.3f}" + (f" ({s['vs_seed']['verdict']})" if s["vs_seed"] else "")
                for arm, s in summary.items()) + f" [{time.perf_counter() - t0:.0f} s]", flush=True)
    result = write(args, replications, memo_totals, started)
    from workflow_results import render_search  # the same text the README carries

    print(render_search(result))
    return result


def write(args: Args, replications: list[dict[str, Any]], memo_totals: dict[str, int], started: float) -> dict[str, Any]:
    """The result so far (controls over the replications done), written to ``args.out`` if set."""
    controls = {arm: proportion(sum(r["summary"][arm]["vs_seed"]["verdict"] == "better" for r in replications
                                    if arm in r["summary"]), sum(arm in r["summary"] for r in replications))
                for arm in ("oracle-judge loop", "coin-judge loop") if arm in args.arms}
    result = {"args": asdict(args), "replications": replications, "controls": controls, "memo": memo_totals,
              "wall_s": time.perf_counter() - started}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--replications", type=int, default=10)
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--test-per-family", type=int, default=2)
    parser.add_argument("--sandbox", default="local")
    parser.add_argument("--arms", nargs="+", default=list(ARMS))
    parser.add_argument("--out", default=None)
    parser.add_argument("--append", action="store_true", help="add --replications to those in --out")
    parser.add_argument("--workers", type=int, default=1, help="processes running a replication's runs side by side")
    ns = parser.parse_args()
    main(Args(runs=ns.runs, replications=ns.replications, budget=ns.budget, test_per_family=ns.test_per_family,
              sandbox=ns.sandbox, arms=ns.arms, out=ns.out, append=ns.append, workers=ns.workers))
    sys.exit(0)
