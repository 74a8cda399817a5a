"""Episodes in flight per worker against a latency-bound model: episodes/s, memory, 429 storms.

A local OpenAI-compatible server (``fake_provider.py``, in its own process) answers every call
after a fixed latency (500 ms by default). The battery: ToolUse-v0, 16 controlled retail tasks x
4 seeds = 64 episodes, the ``llm`` agent (``openai/fake-model`` at the server's ``api_base``, native
tools), the scripted customer, graded live; each episode makes 3 model calls.

Each measurement runs in a fresh interpreter that first plays one warm-up episode (imports,
LiteLLM's client), then times ``run_scenario`` on the battery:

* ``--workers 0`` (this process is the worker) at concurrency 1 (the sequential runner: the
  reference), 8, 32 and 64;
* the process pool, ``--workers 4`` at concurrency 1, timed with its workers' start-up (that is
  what the pool costs);

* with ``--backend ray``, the same battery on a Ray started by the child (one runner actor with
  each level's episodes in flight, its warm-up episode run through the same runner, which later
  runs reuse), next to the local row of the same level: the ratio ray / local is printed (target
  >= 0.8 at 32 in flight);

and reports episodes/s, the ratio to concurrency 1, the ideal latency-bound rate
(concurrency / (calls per episode x latency)) and the share of it reached, the worker's peak
resident memory, and whether every record (keys, actions, grades, termination) equals the
sequential run's. Then a 429 storm: the server answers every other call 429 for the first 10 s
of a concurrency-32 run; the table shows episodes lost (must be 0), retries against the 429s
served, and the provider gate's summary line (the cap's trajectory).

The table also shows the worker's CPU time per episode and how many cores it kept busy: where
``share of ideal`` falls short while ``cores busy`` sits near what the machine gives one process,
the worker is CPU-bound (LiteLLM's client and the env), not waiting on the runner.

Run: ``python benchmarks/concurrency.py [--episodes 64] [--repeats 3] [--latency 0.5]
[--levels 1,8,32,64] [--storm 10] [--no-pool] [--backend ray]``. Targets: concurrency 32 >= 20x
concurrency 1; peak memory at 32 < 2x that at 1; no episode lost in the storm; Ray at 32 >= 0.8x
local at 32.

``--whole-process`` measures what a user pays instead: ``rsigym run --workers 1 --concurrency C``
in its own process (imports, endpoint check, worker start, sandboxes, records, grading, report),
on a Probe-v0 battery (``--episodes``, ``--max-guesses`` checks at most, ``--sandbox``) against the
same server, for C = 1 and 32 (``--levels``) and each ``--backend`` (default: local, then Ray):
the whole-process wall, user and system CPU of the process and every descendant it waited for, CPU
per episode, and, in the same run, the ratios 32 vs 1 of each backend. The Ray rows run on one node,
a Ray cluster of 1 CPU that this script starts once (``rsigym run --address``, as on a cluster a
user keeps running): one runner, so "1 in flight" is one episode at a time, as in the local rows
(on a node of N CPUs ``--workers 1`` is N runners). ``--ray-own`` adds rows where each run starts
its own Ray on this machine with all its CPUs (``--workers 1`` then means a runner per CPU). Each
row also has the machine's CPU during the run (``/proc/stat``: every process, the Ray runners and
the Docker engine included, which the process's own figure misses); the Ray rows' CPU ratio uses it.
Targets: wall 32 vs 1 >= 8x; CPU per episode at 32 <= 1.5x that at 1 (the sequential path). The
load average before and after is printed: on a shared machine the walls move with it, the ratios
much less.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
SPEEDUP_TARGET = 20.0   # concurrency 32 vs 1
RAY_TARGET = 0.8        # the Ray backend at 32 in flight vs the local in-flight runner at 32
MEMORY_TARGET = 2.0     # peak RSS at 32 vs at 1
TASKS = 16


def battery(api_base: str, episodes: int, *, name: str = "concurrency-bench", backoff_base_s: float = 1.0,
            seeds: list[int] | None = None, tasks: int = TASKS) -> dict[str, Any]:
    """The scenario mapping: ToolUse-v0 controlled retail tasks x seeds, the llm agent at ``api_base``."""
    return {
        "name": name,
        "env": {"id": "rsigym/ToolUse-v0", "kwargs": {"domain": "retail", "user": "scripted"}},
        "tasks": {"split": "controlled", "limit": tasks},
        "conditions": ["identity"],
        "agents": [{"id": "llm", "kind": "llm", "model": "openai/fake-model",
                    "params": {"temperature": 0.0, "max_tokens": 256, "tool_mode": "tools", "api_base": api_base,
                               "backoff_base_s": backoff_base_s}}],
        "seeds": seeds if seeds is not None else list(range(math.ceil(episodes / tasks))),
        "max_steps": 20,
        "graders": ["db_state", "outputs", "action_match", "reward"],
    }


def signature(record: Any) -> tuple[Any, ...]:
    """What must not depend on concurrency: termination, actions, grades (not timings)."""
    return (record.termination, json.dumps([s.action for s in record.steps], sort_keys=True),
            tuple((g.grader, g.score) for g in record.grades))


# -- one measurement, in a fresh interpreter ----------------------------------------------------
def measure(config: dict[str, Any]) -> dict[str, Any]:
    """Warm up on one episode, then time the battery; returns seconds, memory and the records' signatures."""
    import resource

    from rsigym.records.jsonl import read_records
    from rsigym.runner import run_scenario
    from rsigym.scenario import parse_scenario

    api_base, out = config["api_base"], Path(config["out"])
    backend = config.get("backend", "local")
    if backend == "ray":
        import ray

        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    warm = parse_scenario(battery(config.get("warm_api_base", api_base), 1, name="warm-up", seeds=[10_000], tasks=1))
    # through the in-flight runner (concurrency 2, one episode), so that it counts the env as warm;
    # on Ray through the runner the timed run reuses (same workers and concurrency)
    run_scenario(warm, out / "warm", progress=False, report=False, backend=backend,
                 workers=config["workers"] if backend == "ray" else 0,
                 concurrency=config["concurrency"] if backend == "ray" else 2)
    scenario = parse_scenario(battery(api_base, config["episodes"], backoff_base_s=config.get("backoff_base_s", 1.0)))
    started, cpu_started = time.perf_counter(), _cpu_s(config["workers"])
    summary = run_scenario(scenario, out / "run", workers=config["workers"], concurrency=config["concurrency"],
                           progress=False, report=False, backend=backend)
    seconds = time.perf_counter() - started
    cpu_s = _cpu_s(config["workers"]) - cpu_started
    who = resource.RUSAGE_CHILDREN if config["workers"] else resource.RUSAGE_SELF
    peak_rss_mb = resource.getrusage(who).ru_maxrss / 1024.0
    if backend == "ray":  # the runner is Ray's process, not a child of this one
        cpu_s, peak_rss_mb = float("nan"), summary.peak_rss_mb or float("nan")
    records = read_records(out / "run" / "records.jsonl").records
    from rsigym.llm.limits import format_stats

    return {"seconds": seconds, "cpu_s": cpu_s, "episodes": len(records), "ran": summary.ran,
            "infra_errors": sum(r.termination == "infra_error" for r in records),
            "calls": sum(r.usage.model_calls for r in records),
            "retries": sum(r.usage.provider_retries for r in records),
            "peak_rss_mb": peak_rss_mb,
            "limits": [format_stats(s) for s in summary.limits],
            "signatures": {r.episode_key: list(signature(r)) for r in records},
            # the api_base is part of the agent's spec, so a second server means other keys
            "by_task": {f"{r.env.task_id}/{r.seed}/{r.rep}": list(signature(r)) for r in records}}


def _cpu_s(workers: int) -> float:
    """CPU seconds of the worker(s): this process, or its finished children (the pool's workers)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN if workers else resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_child(config: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--child", json.dumps(config)], capture_output=True,
                          text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"measurement {config} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class Server:
    """``fake_provider.py`` in its own process (its threads must not share the measured GIL)."""

    def __init__(self, latency_s: float, storm_s: float = 0.0) -> None:
        self.process = subprocess.Popen([sys.executable, str(HERE / "fake_provider.py"), "--latency", str(latency_s),
                                         "--storm", str(storm_s)], stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"fake provider did not start: {line!r}")
        self.port = int(line.split()[1])
        self.api_base = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as response:
            return dict(json.loads(response.read()))

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.kill()
        self.process.wait()


# -- the table ---------------------------------------------------------------------------------
def main(episodes: int = 64, repeats: int = 3, latency_s: float = 0.5, levels: tuple[int, ...] = (1, 8, 32, 64),
         storm_s: float = 10.0, pool: bool = True, backends: tuple[str, ...] = ("local",)) -> dict[str, Any]:
    console = Console(width=160)
    rows: dict[str, dict[str, Any]] = {}
    configs = [(f"concurrency {c}, 1 worker (this process)", 0, c, "local") for c in levels]
    if "ray" in backends:
        configs += [(f"ray, concurrency {c}, 1 runner actor", 1, c, "ray") for c in levels if c > 1]
    if pool:
        configs.append(("process pool, --workers 4, concurrency 1", 4, 1, "local"))
    with Server(latency_s) as server, tempfile.TemporaryDirectory() as scratch:
        for label, workers, concurrency, backend in configs:
            runs = []
            for repeat in range(repeats):
                out = Path(scratch) / f"{backend}-{workers}-{concurrency}-{repeat}"
                runs.append(run_child({"api_base": server.api_base, "out": str(out), "episodes": episodes,
                                       "workers": workers, "concurrency": concurrency, "backend": backend}))
                console.log(f"{label}: {runs[-1]['episodes'] / runs[-1]['seconds']:.2f} episodes/s "
                            f"({runs[-1]['seconds']:.1f} s, peak {runs[-1]['peak_rss_mb']:.0f} MiB)")
            rows[label] = {"runs": runs, "workers": workers, "concurrency": concurrency, "backend": backend,
                           "eps": statistics.median(r["episodes"] / r["seconds"] for r in runs),
                           "rss": statistics.median(r["peak_rss_mb"] for r in runs),
                           "cpu_per_episode": statistics.median(r["cpu_s"] / r["episodes"] for r in runs),
                           "core_share": statistics.median(r["cpu_s"] / r["seconds"] for r in runs)}
    reference = next(iter(rows.values()))  # concurrency 1 in this process: the sequential runner
    sequential = reference["runs"][0]["signatures"]
    sequential_by_task = reference["runs"][0]["by_task"]
    calls_per_episode = reference["runs"][0]["calls"] / max(reference["runs"][0]["episodes"], 1)
    table = Table(title=f"{episodes} ToolUse-v0 episodes, llm agent, {latency_s * 1000:.0f} ms per model call, "
                        f"{calls_per_episode:.1f} calls per episode (median of {repeats} runs)")
    for column in ("runner", "episodes/s", "x concurrency 1", "ideal episodes/s", "share of ideal",
                   "CPU ms / episode", "cores busy", "peak RSS MiB", "x RSS at 1", "records = sequential"):
        table.add_column(column, justify="left" if column == "runner" else "right")
    results: dict[str, Any] = {}
    for label, row in rows.items():
        in_flight = max(row["workers"], 1) * row["concurrency"]
        ray_row = row["backend"] == "ray"
        ideal = in_flight / (calls_per_episode * latency_s)
        same = all(r["signatures"] == sequential and r["infra_errors"] == 0 and r["episodes"] == episodes
                   for r in row["runs"])
        speedup, memory = row["eps"] / reference["eps"], row["rss"] / reference["rss"]
        table.add_row(label, f"{row['eps']:.2f}", f"{speedup:.1f}x", f"{ideal:.2f}", f"{row['eps'] / ideal:.0%}",
                      "-" if ray_row else f"{row['cpu_per_episode'] * 1000:.0f}",
                      "-" if ray_row else f"{row['core_share']:.2f}", f"{row['rss']:.0f}",
                      f"{memory:.2f}x" if row["workers"] == 0 or ray_row else "(4 workers)",
                      "yes" if same else "NO")
        results[label] = {"eps": row["eps"], "speedup": speedup, "memory_ratio": memory, "identical": same}
    console.print(table)
    at32 = next((v for k, v in results.items() if k.startswith("concurrency 32,")), None)
    if at32 is not None:
        console.print(f"concurrency 32 vs 1: {at32['speedup']:.1f}x (target >= {SPEEDUP_TARGET:.0f}x: "
                      f"{'PASS' if at32['speedup'] >= SPEEDUP_TARGET else 'MISS'}); peak memory "
                      f"{at32['memory_ratio']:.2f}x (target < {MEMORY_TARGET:.0f}x: "
                      f"{'PASS' if at32['memory_ratio'] < MEMORY_TARGET else 'MISS'}); records identical: "
                      f"{'PASS' if at32['identical'] else 'FAIL'}")
    for level in levels:
        local, remote = results.get(f"concurrency {level}, 1 worker (this process)"), \
            results.get(f"ray, concurrency {level}, 1 runner actor")
        if local is not None and remote is not None:
            ratio = remote["eps"] / local["eps"]
            results[f"ray/local at {level}"] = ratio
            verdict = ("PASS" if ratio >= RAY_TARGET else "MISS") if level == 32 else "no target"
            console.print(f"ray vs local at {level} in flight: {ratio:.2f}x (target >= {RAY_TARGET} at 32: {verdict}); "
                          f"records identical: {'PASS' if remote['identical'] else 'FAIL'}")
    if storm_s > 0:
        results["storm"] = storm(episodes, latency_s, storm_s, sequential_by_task, console)
    return results


def storm(episodes: int, latency_s: float, storm_s: float, sequential: dict[str, Any], console: Console) -> dict[str, Any]:
    """Concurrency 32 while the server answers every other call 429 for ``storm_s`` seconds."""
    # The warm-up episode talks to a calm server: the storm starts with the battery's first call.
    with Server(latency_s, storm_s) as server, Server(latency_s) as calm, tempfile.TemporaryDirectory() as scratch:
        run = run_child({"api_base": server.api_base, "warm_api_base": calm.api_base, "out": scratch,
                         "episodes": episodes, "workers": 0, "concurrency": 32})
        served = server.stats()
    lost = episodes - run["episodes"] + run["infra_errors"]
    table = Table(title=f"429 storm: every other call for {storm_s:.0f} s, concurrency 32")
    for column in ("episodes recorded", "lost (infra_error or missing)", "429s served", "retries in records",
                   "retries per episode", "records = sequential", "seconds"):
        table.add_column(column, justify="right")
    identical = run["by_task"] == sequential
    table.add_row(str(run["episodes"]), str(lost), str(served["throttled"]), str(run["retries"]),
                  f"{run['retries'] / max(run['episodes'], 1):.2f}", "yes" if identical else "NO",
                  f"{run['seconds']:.1f}")
    console.print(table)
    for line in run["limits"]:
        console.print(line)
    verdict = lost == 0 and run["retries"] == served["throttled"]
    console.print(f"storm: {'PASS' if verdict else 'FAIL'} (no episode lost; every 429 retried once, "
                  "none beyond)")
    return {"lost": lost, "throttled": served["throttled"], "retries": run["retries"], "identical": identical,
            "limits": run["limits"]}


# -- the whole process: `rsigym run` on a Probe battery, 1 vs 32 in flight ----------------------
WALL_TARGET = 8.0      # whole-process wall, 32 in flight vs 1
CPU_TARGET = 1.5       # CPU per episode at 32 in flight vs 1 (user + sys of the whole process tree)


def probe_battery(episodes: int, sandbox: str, max_guesses: int) -> dict[str, Any]:
    """Probe-v0, the llm agent (its model and api_base come from the command line), graded live."""
    return {
        "name": "concurrency-probe",
        "env": {"id": "rsigym/Probe-v0", "kwargs": {"sandbox": sandbox, "low": 0, "high": 100,
                                                    "max_guesses": max_guesses}},
        "tasks": {"split": "train", "limit": min(episodes, 100)},
        "conditions": ["none"],
        "agents": [{"id": "llm", "kind": "llm", "model": "openai/fake-model",
                    "params": {"temperature": 0.0, "max_tokens": 64}}],
        "seeds": list(range(math.ceil(episodes / min(episodes, 100)))),
        "max_steps": max_guesses + 2,
        # the answer check in the same kind of sandbox as the env (its default, auto, is docker
        # wherever an engine answers: a local-sandbox row would still create containers)
        "graders": [{"name": "probe_answer", "params": {"sandbox": sandbox}}, "probe_efficiency"],
    }


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (every CPU, ``/proc/stat``)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def whole_run(scenario: Path, out: Path, api_base: str, concurrency: int, backend: str,
              address: str | None = None) -> dict[str, Any]:
    """One `rsigym run` in its own process: wall, user + sys CPU of it and every descendant it
    waited for (its worker processes; with Ray, the node's processes the driver started), and the
    machine's CPU over the same time."""
    import shutil

    rsigym = shutil.which("rsigym", path=str(Path(sys.executable).parent)) or "rsigym"
    argv = [rsigym, "run", str(scenario), "--out", str(out), "--backend", backend, "--workers", "1",
            "--concurrency", str(concurrency), "--api-base", api_base, "--no-progress"]
    argv += ["--address", address] if address else []
    machine = machine_cpu_s()
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    machine = machine_cpu_s() - machine
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {process.returncode}:\n{output.decode(errors='replace')[-3000:]}")
    from rsigym.records.jsonl import read_records

    records = read_records(out / "records.jsonl").records
    episodes = max(len(records), 1)
    return {"seconds": seconds, "user_s": usage.ru_utime, "sys_s": usage.ru_stime, "machine_s": machine,
            "cpu_per_episode": (usage.ru_utime + usage.ru_stime) / episodes, "machine_per_episode": machine / episodes,
            "episodes": len(records),
            "infra_errors": sum(r.termination == "infra_error" for r in records),
            "calls": sum(r.usage.model_calls for r in records),
            "by_task": {f"{r.env.task_id}/{r.seed}": list(signature(r)) for r in records}}


@contextlib.contextmanager
def ray_cluster(cpus: int = 1) -> Iterator[str]:
    """A Ray of ``cpus`` CPUs started in this process for the Ray rows; yields its address."""
    import ray

    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def whole_process(episodes: int = 64, latency_s: float = 0.5, levels: tuple[int, ...] = (1, 32),
                  backends: tuple[str, ...] = ("local", "ray"), sandbox: str = "auto", max_guesses: int = 3,
                  repeats: int = 1, ray_own: bool = False) -> dict[str, Any]:
    """`rsigym run --workers 1 --concurrency C` on a Probe battery, each level and backend in turn
    (interleaved over repeats), against the fake provider at ``latency_s``: wall, CPU, CPU per
    episode, and the ratios 32 vs 1 of the same row kind, all from this one run. Ray rows: on a
    1-CPU Ray this script runs (one runner), and with ``ray_own`` also on a Ray each run starts."""
    import yaml

    console = Console(width=170)
    load_before = os.getloadavg()
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    kinds = [b for b in backends if b != "ray"] + (["ray"] if "ray" in backends else [])
    kinds += ["ray-own"] if ray_own and "ray" in backends else []
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(Server(latency_s))
        scratch = stack.enter_context(tempfile.TemporaryDirectory())
        address = stack.enter_context(ray_cluster(1)) if "ray" in kinds else None
        scenario = Path(scratch) / "probe.yaml"
        scenario.write_text(yaml.safe_dump(probe_battery(episodes, sandbox, max_guesses)))
        for repeat in range(repeats):
            for kind in kinds:
                for level in levels:
                    out = Path(scratch) / f"{kind}-{level}-{repeat}"
                    backend = "ray" if kind.startswith("ray") else kind
                    run = whole_run(scenario, out, server.api_base, level, backend,
                                    address if kind == "ray" else None)
                    runs.setdefault((kind, level), []).append(run)
                    console.log(f"{kind}, {level} in flight: {run['seconds']:.1f} s wall, "
                                f"{run['user_s']:.1f} s user + {run['sys_s']:.1f} s sys, machine {run['machine_s']:.1f} "
                                f"CPU-s, {run['episodes']} episodes (load {os.getloadavg()[0]:.1f})")
    load_after = os.getloadavg()
    first = next(iter(runs.values()))[0]
    table = Table(title=f"whole process: `rsigym run --workers 1 --concurrency C`, {episodes} Probe-v0 episodes "
                        f"(sandbox {sandbox}), llm agent, {latency_s * 1000:.0f} ms per call, "
                        f"{first['calls'] / max(first['episodes'], 1):.1f} calls per episode; median of {repeats}; "
                        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after. ray: a running 1-CPU "
                        "Ray (one runner); ray-own: each run starts a Ray with this machine's CPUs")
    for column in ("backend", "in flight", "wall s", "user s", "sys s", "machine CPU s", "CPU ms / episode",
                   "wall 1 / wall C", "CPU/episode vs 1", "machine CPU/episode vs 1", "records = 1 in flight"):
        table.add_column(column, justify="left" if column == "backend" else "right")
    results: dict[str, Any] = {"load_before": load_before, "load_after": load_after,
                               "ray": "a running Ray of 1 CPU started by the benchmark (one runner)",
                               "ray-own": "each run starts its own Ray with the machine's CPUs"}
    for kind in kinds:
        base = runs.get((kind, levels[0]))
        for level in levels:
            rows = runs.get((kind, level))
            if not rows or not base:
                continue

            def median(key: str, of: list[dict[str, Any]]) -> float:
                return statistics.median(r[key] for r in of)

            wall, base_wall = median("seconds", rows), median("seconds", base)
            cpu, base_cpu = median("cpu_per_episode", rows), median("cpu_per_episode", base)
            machine, base_machine = median("machine_per_episode", rows), median("machine_per_episode", base)
            same = all(r["by_task"] == base[0]["by_task"] and r["infra_errors"] == 0 and r["episodes"] == episodes
                       for r in rows)
            table.add_row(kind, str(level), f"{wall:.1f}", f"{median('user_s', rows):.1f}",
                          f"{median('sys_s', rows):.1f}", f"{median('machine_s', rows):.1f}", f"{cpu * 1000:.0f}",
                          f"{base_wall / wall:.1f}x", f"{cpu / base_cpu:.2f}x", f"{machine / base_machine:.2f}x",
                          "yes" if same else "NO")
            results[f"{kind} {level}"] = {"wall_s": wall, "cpu_per_episode_s": cpu, "speedup": base_wall / wall,
                                           "cpu_ratio": cpu / base_cpu, "machine_cpu_per_episode_s": machine,
                                           "machine_cpu_ratio": machine / base_machine, "identical": same,
                                           "walls": [r["seconds"] for r in rows]}
    console.print(table)
    top = levels[-1]
    for kind in kinds:
        row = results.get(f"{kind} {top}")
        if row is None:
            continue
        # the Ray runners are not this run's children: their CPU shows only in the machine's
        cpu_ratio = row["machine_cpu_ratio"] if kind.startswith("ray") else row["cpu_ratio"]
        console.print(f"{kind}: {top} vs {levels[0]} in flight, whole-process wall {row['speedup']:.1f}x (target >= "
                      f"{WALL_TARGET:.0f}x: {'PASS' if row['speedup'] >= WALL_TARGET else 'MISS'}); CPU per episode "
                      f"{cpu_ratio:.2f}x{' (machine)' if kind.startswith('ray') else ''} (target <= {CPU_TARGET}x: "
                      f"{'PASS' if cpu_ratio <= CPU_TARGET else 'MISS'}); records identical: "
                      f"{'PASS' if row['identical'] else 'FAIL'}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=None, help="runs per row (default 3; 1 with --whole-process)")
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--levels", default="1,8,32,64")
    parser.add_argument("--storm", type=float, default=10.0, help="seconds of 429 storm (0: skip)")
    parser.add_argument("--no-pool", action="store_true")
    parser.add_argument("--backend", action="append", choices=["local", "ray"], default=None,
                        help="add rows for this backend (ray: next to the local rows); repeatable")
    parser.add_argument("--whole-process", action="store_true",
                        help="`rsigym run` in its own process on a Probe battery: wall and CPU, 1 vs 32 in flight "
                             "(levels from --levels, default 1,32; backends from --backend, default local and ray)")
    parser.add_argument("--sandbox", default="auto", help="Probe's sandbox for --whole-process (auto, docker, local)")
    parser.add_argument("--max-guesses", type=int, default=3, help="Probe's max_guesses for --whole-process")
    parser.add_argument("--ray-own", action="store_true",
                        help="--whole-process: also rows where each run starts its own Ray (all CPUs)")
    parser.add_argument("--json", default=None, help="--whole-process: write the numbers to this file")
    args = parser.parse_args()
    if args.whole_process:
        levels = tuple(int(c) for c in args.levels.split(",")) if args.levels != "1,8,32,64" else (1, 32)
        found = whole_process(args.episodes, args.latency, levels, tuple(args.backend or ["local", "ray"]),
                              args.sandbox, args.max_guesses, args.repeats or 1, args.ray_own)
        if args.json:
            Path(args.json).write_text(json.dumps(found, indent=2) + "\n")
    elif args.child:
        print(json.dumps(measure(json.loads(args.child))))
    else:
        main(args.episodes, args.repeats or 3, args.latency, tuple(int(c) for c in args.levels.split(",")), args.storm,
             not args.no_pool, tuple(args.backend or ["local"]))
