"""Steps per second in-process vs served on loopback (``rsigym serve``), at 1, 16 and 64 sessions.

One run measures, for each session count N: N envs stepped in this process (round robin, one
thread: what a single-process trainer does), then N ``rsigym.remote.make_async`` sessions of one
``rsigym serve`` subprocess on 127.0.0.1, stepped concurrently from one event loop here. Every
session plays the same seeded actions (the env's example action, then seeded samples of its
action space), resetting when an episode ends. The table gives total steps per second (the
median of ``--repeats`` timed blocks), the served/in-process ratio, the server's overhead per step
at one session (served seconds per step minus in-process seconds per step: the round trip,
OpenEnv's session loop, rsigym's recording with its fsync), and the server's resident memory per
session ((RSS with N sessions open and reset - RSS with none) / N). Clients and server share this
machine's cores, so the served rate is that of the whole loop, client included.

    python benchmarks/serve.py                          # BlackBox-v0 (cheap steps: overhead shows)
    python benchmarks/serve.py --env rsigym/Probe-v0 --set sandbox=local --out benchmarks/results/serve_probe.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import yaml

from rsigym.records import to_jsonable
from rsigym.registry import register_gym_envs
from rsigym.serve import start_server_process

SESSIONS = (1, 16, 64)


def _actions(env_id: str, kwargs: dict[str, Any], n: int, seed: int = 0) -> list[Any]:
    env = gym.make(env_id, **kwargs)
    try:
        env.action_space.seed(seed)
        examples = list(getattr(env.unwrapped, "example_actions", None) or [])
        actions = [to_jsonable(a) for a in examples[:1]]
        while len(actions) < n:
            actions.append(to_jsonable(env.action_space.sample()))
        return actions
    finally:
        env.close()


def in_process(env_id: str, kwargs: dict[str, Any], sessions: int, steps_each: int, actions: list[Any]) -> float:
    """Steps per second of ``sessions`` envs stepped round robin in this process."""
    envs = [gym.make(env_id, **kwargs) for _ in range(sessions)]
    try:
        for i, env in enumerate(envs):
            env.reset(seed=i)
        started = time.perf_counter()
        for t in range(steps_each):
            for i, env in enumerate(envs):
                _, _, terminated, truncated, _ = env.step(actions[t % len(actions)])
                if terminated or truncated:
                    env.reset(seed=i + t)
        return sessions * steps_each / (time.perf_counter() - started)
    finally:
        for env in envs:
            env.close()


def in_process_recorded(env_id: str, kwargs: dict[str, Any], sessions: int, steps_each: int,
                        actions: list[Any], run_dir: Path) -> float:
    """Steps per second of ``sessions`` served sessions driven without a network: the server's own
    ``ServedEnv`` objects (the step stored, each finished episode's record written and fsynced by
    the one writer) called in this process. Served minus this is the wire."""
    from rsigym.serve.app import describe_env
    from rsigym.serve.config import ServeConfig
    from rsigym.serve.models import action_model, observation_model
    from rsigym.serve.recorder import RunRecorder
    from rsigym.serve.session import ServedEnv
    from rsigym.serve.wire import build_space

    config = ServeConfig(env_id, kwargs, run_dir=run_dir)
    about = describe_env(config)
    action_cls = action_model(env_id, about["action_schema"] or {"type": "object"})
    observation_cls = observation_model(env_id, build_space(about["observation_space"]))
    with RunRecorder(run_dir, env_id, kwargs) as recorder:
        envs = [ServedEnv(config, recorder, observation_cls) for _ in range(sessions)]
        try:
            for i, env in enumerate(envs):
                env.reset(seed=i)
            wire = [action_cls.model_validate(a if isinstance(a, dict) else {"rsigym_text_action": a}) for a in actions]
            started = time.perf_counter()
            for t in range(steps_each):
                for i, env in enumerate(envs):
                    if env.step(wire[t % len(wire)]).done:
                        env.reset(seed=i + t)
            return sessions * steps_each / (time.perf_counter() - started)
        finally:
            for env in envs:
                env.close()


async def _served(url: str, sessions: int, steps_each: int, actions: list[Any]) -> float:
    import rsigym.remote as remote

    envs = [await remote.make_async(url, agent_id="bench") for _ in range(sessions)]
    try:
        for i, env in enumerate(envs):
            await env.reset(seed=i)

        async def play(i: int, env: Any) -> None:
            for t in range(steps_each):
                _, _, terminated, truncated, _ = await env.step(actions[t % len(actions)])
                if terminated or truncated:
                    await env.reset(seed=i + t)

        started = time.perf_counter()
        await asyncio.gather(*(play(i, env) for i, env in enumerate(envs)))
        return sessions * steps_each / (time.perf_counter() - started)
    finally:
        for env in envs:
            await env.close()


async def _open_sessions(url: str, sessions: int) -> list[Any]:
    import rsigym.remote as remote

    envs = [await remote.make_async(url) for _ in range(sessions)]
    for i, env in enumerate(envs):
        await env.reset(seed=i)
    return envs


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="rsigym/BlackBox-v0")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="env kwarg (YAML value)")
    parser.add_argument("--steps", type=int, default=1280, help="steps per timed block at each session count")
    parser.add_argument("--repeats", type=int, default=3, help="timed blocks per measurement (median)")
    parser.add_argument("--sessions", type=int, nargs="+", default=list(SESSIONS))
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    register_gym_envs()
    kwargs = {k: yaml.safe_load(v) for k, _, v in (s.partition("=") for s in args.set)}
    actions = _actions(args.env, kwargs, 64)
    load_start = os.getloadavg()[0]  # a shared machine: the load says how far to trust absolute rates
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_server_process(args.env, Path(tmp) / "served", sets=args.set, max_sessions=max(args.sessions))
        try:
            idle_mb = _rss_mb(process.pid)
            for n in args.sessions:
                steps_each = max(1, args.steps // n)
                local = statistics.median(in_process(args.env, kwargs, n, steps_each, actions)
                                          for _ in range(args.repeats))
                recorded = statistics.median(in_process_recorded(args.env, kwargs, n, steps_each, actions,
                                                                 Path(tmp) / f"local-{n}-{r}")
                                             for r in range(args.repeats))
                served = statistics.median(asyncio.run(_served(url, n, steps_each, actions))
                                           for _ in range(args.repeats))

                async def held() -> float:
                    envs = await _open_sessions(url, n)
                    await asyncio.sleep(0.5)
                    rss = _rss_mb(process.pid)
                    for env in envs:
                        await env.close()
                    return rss

                with_sessions_mb = asyncio.run(held())
                rows.append({"sessions": n, "steps": n * steps_each, "in_process_steps_per_s": local,
                             "in_process_recorded_steps_per_s": recorded,
                             "served_steps_per_s": served, "served_over_in_process": served / local,
                             "server_rss_mb": with_sessions_mb,
                             "server_mb_per_session": (with_sessions_mb - idle_mb) / n})
                print(f"{n:>3} sessions: in-process {local:8.1f} steps/s, recorded {recorded:8.1f}, served {served:8.1f} steps/s "
                      f"(x{served / local:.3f}), server {with_sessions_mb:.0f} MB", flush=True)
        finally:
            process.terminate()
            process.wait(timeout=60)
    first = rows[0]
    overhead_ms = 1000 * (1 / first["served_steps_per_s"] - 1 / first["in_process_steps_per_s"])
    wire_ms = 1000 * (1 / first["served_steps_per_s"] - 1 / first["in_process_recorded_steps_per_s"])
    result = {"env": args.env, "kwargs": kwargs, "repeats": args.repeats, "cpu_count": os.cpu_count(),
              "load_average_1min_at_start_and_end": [load_start, os.getloadavg()[0]],
              "server_idle_rss_mb": idle_mb, "overhead_ms_per_step_at_1_session": overhead_ms,
              "wire_ms_per_step_at_1_session": wire_ms, "rows": rows}
    print(f"\n{args.env}: steps per second, in-process vs served on loopback (median of {args.repeats})\n")
    print(render_table(result))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


def _load(result: dict[str, Any]) -> str:
    load = result.get("load_average_1min_at_start_and_end")
    return f", 1-min load average {load[0]:.0f} at the start and {load[1]:.0f} at the end" if load else ""


def render_table(result: dict[str, Any]) -> str:
    """The Markdown table of a results file (the README shows this, rendered from the committed file)."""
    lines = ["| sessions | in-process steps/s | in-process + records steps/s | served steps/s | served / in-process "
             "| server MB per session |", "|---:|---:|---:|---:|---:|---:|"]
    for row in result["rows"]:
        lines.append(f"| {row['sessions']} | {row['in_process_steps_per_s']:.0f} | "
                     f"{row['in_process_recorded_steps_per_s']:.0f} | {row['served_steps_per_s']:.0f} | "
                     f"{row['served_over_in_process']:.3f} | {row['server_mb_per_session']:.2f} |")
    lines.append(f"\nServer overhead per step at 1 session: {result['overhead_ms_per_step_at_1_session']:.2f} ms "
                 f"over the bare env ({result['wire_ms_per_step_at_1_session']:.2f} ms over the same recording "
                 f"without the network); server RSS with no session {result['server_idle_rss_mb']:.0f} MB. {result['env']}, "
                 f"{result['cpu_count']} cores" + _load(result) + ".")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
