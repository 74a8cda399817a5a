"""ToolUse-v0 speed: env steps per second in one process, and the wall time of trace_controlled.

1. Steps per second: the scripted ``role_binding`` agent and the scripted user play the
   controlled retail tasks in this process (agent, env and user time included; no runner, no
   grading). Reference, from the same run: the time inside ``agent.act`` alone, so the table
   shows what the env (with its user and database) costs per step. Target >= 2,000 steps/s.
2. ``rsigym run trace_controlled`` (1,575 episodes) with 2 workers into a fresh folder, timed
   from the outside as a user would see it. Target under 60 s.

Run: ``python benchmarks/tooluse_throughput.py [--episodes 200] [--repeats 3] [--skip-battery]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

import gymnasium as gym
from rich.console import Console
from rich.table import Table

import rsigym.envs  # noqa: F401
from rsigym.agents import make_agent
from rsigym.records import AgentSpec

STEPS_TARGET = 2000.0
BATTERY_TARGET_S = 60.0


def steps_per_second(episodes: int) -> tuple[float, float]:
    """(steps per second of the whole loop, share of the time spent in the agent)."""
    env = gym.make("rsigym/ToolUse-v0", domain="retail").unwrapped
    task_ids = env.list_tasks("controlled")
    agent = make_agent(AgentSpec("role_binding", "role_binding"))
    env.reset(seed=0, options={"task_id": task_ids[0]})  # warm the task catalogue and the database
    steps, agent_s = 0, 0.0
    started = time.perf_counter()
    for episode in range(episodes):
        task_id = task_ids[episode % len(task_ids)]
        observation, info = env.reset(seed=episode, options={"task_id": task_id})
        agent.reset({"task_id": task_id, "tools": env.tools, "rep": 0}, episode)
        while True:
            acted = time.perf_counter()
            action = agent.act(observation)
            agent_s += time.perf_counter() - acted
            observation, reward, terminated, truncated, info = env.step(action)
            steps += 1
            if terminated or truncated:
                break
    total_s = time.perf_counter() - started
    return steps / total_s, agent_s / total_s


def battery_seconds() -> float:
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rsigym.cli.commands", "run", "trace_controlled", "--out", out,
                        "--workers", "2", "--no-progress"], check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - started


def main(episodes: int = 200, repeats: int = 3, battery: bool = True) -> dict[str, float]:
    runs = [steps_per_second(episodes) for _ in range(repeats)]
    results = {"steps_per_s": statistics.median(r[0] for r in runs),
               "agent_share": statistics.median(r[1] for r in runs)}
    table = Table(title=f"ToolUse-v0 throughput (median of {repeats} runs)")
    for column in ("measurement", "value", "target", "verdict"):
        table.add_column(column, justify="left" if column == "measurement" else "right")
    table.add_row(f"env steps/s, role_binding + scripted user, {episodes} episodes", f"{results['steps_per_s']:,.0f}",
                  f">= {STEPS_TARGET:,.0f}", "PASS" if results["steps_per_s"] >= STEPS_TARGET else "MISS")
    table.add_row("  of which in agent.act (reference) / in env.step + user", f"{results['agent_share']:.0%} / "
                  f"{1 - results['agent_share']:.0%}", "", "")
    if battery:
        results["battery_s"] = battery_seconds()
        table.add_row("rsigym run trace_controlled (1,575 episodes), 2 workers", f"{results['battery_s']:.1f} s",
                      f"< {BATTERY_TARGET_S:.0f} s", "PASS" if results["battery_s"] < BATTERY_TARGET_S else "MISS")
    Console().print(table)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-battery", action="store_true")
    args = parser.parse_args()
    main(args.episodes, args.repeats, battery=not args.skip_battery)
