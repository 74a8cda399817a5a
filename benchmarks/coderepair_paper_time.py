"""How long does a ``coderepair_paper`` episode take, with and without the execution memo?

Drives ``CodeRepair-v0`` directly (no runner) with the paper scenario's env kwargs and its five
agents, on the first ``--problems`` problems (shuffled per seed) x ``--seeds`` seeds, and grades
each episode with the scenario's three graders (each re-executes the final programs in a fresh
sandbox, as ``rsigym run`` does). Each (seed, agent) episode runs twice back to back, memo off and
memo on (a fresh memo in a temporary folder, shared by every episode of the "on" arm, as the runner's
workers share one), so that both arms see the same machine load.

Prints per agent the median seconds per problem-episode (env + graders) in each arm and their ratio,
the memo's hit share, whether every record is the same in both arms (choices, public outcomes, hidden
pass and the graders' per-problem verdicts), and a projection for the full design
(164 problems x seeds x 5 agents over ``--workers`` workers).

Run: ``python benchmarks/coderepair_paper_time.py --problems 20 --seeds 2 --sandbox docker``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from rsigym.agent import make_agent, task_info
from rsigym.envs.coderepair import memo as memo_module
from rsigym.envs.coderepair.env import CodeRepairEnv
from rsigym.envs.coderepair.graders import regrade_programs

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "coderepair_paper.yaml"
GRADERS = {"hidden_tests": (False, False), "hidden_tests_strict": (True, False), "hidden_only": (False, True)}


def episode(kwargs: dict[str, Any], agent_spec: dict[str, Any], seed: int, problems: int, sandbox: str
            ) -> tuple[float, dict[str, Any]]:
    """Seconds for one episode and its three gradings; and what must match across the arms."""
    start = time.perf_counter()
    env = CodeRepairEnv(**{**kwargs, "sandbox": sandbox, "problems": problems})
    agent = make_agent(agent_spec)
    try:
        obs, info = env.reset(seed=seed)
        agent.reset(task_info(env, info=info), seed)
        done, actions = False, []
        while not done:
            action = agent.act(obs)
            obs, reward, done, _, info = env.step(action)
            actions.append(action["candidate"])
            if hasattr(agent, "observe"):
                agent.observe(reward, obs, info)
        state = env.snapshot()
    finally:
        env.close()
    verdicts = {name: regrade_programs(state, strict, sandbox, hidden_only)[0]
                for name, (strict, hidden_only) in GRADERS.items()}
    seconds = time.perf_counter() - start
    outcome = {"actions": actions, "public": [[r["public_pass"] for r in p["rounds"]] for p in state["problems"]],
               "hidden": [p["hidden_pass"] for p in state["problems"]], "graders": verdicts}
    return seconds, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--sandbox", default="docker")
    parser.add_argument("--workers", type=int, default=2, help="the runner's workers, for the projection")
    args = parser.parse_args()
    scenario = yaml.safe_load(SCENARIO.read_text())
    kwargs = {k: v for k, v in scenario["env"]["kwargs"].items() if k != "sandbox"}
    agents = [{"id": a["id"], "kind": a["kind"], "params": a.get("params") or {}} for a in scenario["agents"]]
    seconds: dict[tuple[str, str], list[float]] = {}
    same, total = 0, 0
    with tempfile.TemporaryDirectory() as folder:
        memo_module._LRU.clear()
        for seed in range(args.seeds):
            for spec in agents:
                arms = {}
                for arm, setting in (("off", "off"), ("on", str(Path(folder) / "memo.sqlite"))):
                    os.environ["RSIGYM_CODEREPAIR_MEMO"] = setting
                    took, arms[arm] = episode(kwargs, spec, seed, args.problems, args.sandbox)
                    seconds.setdefault((spec["id"], arm), []).append(took / args.problems)
                    print(f"seed {seed} {spec['id']:16s} memo {arm:3s} {took:7.1f} s", file=sys.stderr, flush=True)
                same += arms["off"] == arms["on"]
                total += 1
        os.environ.pop("RSIGYM_CODEREPAIR_MEMO", None)
        store = memo_module.ExecMemo(Path(folder) / "memo.sqlite")
        db = store._db()
        stored = db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0] if db else 0
        store.close()
    print(f"\n{args.problems} problems x {args.seeds} seeds x {len(agents)} agents, sandbox {args.sandbox}; "
          f"seconds per problem-episode (env + 3 graders), median over seeds\n")
    print("| agent | memo off | memo on | ratio off/on |\n|---|---:|---:|---:|")
    medians = {}
    for spec in agents:
        off, on = (statistics.median(seconds[(spec["id"], arm)]) for arm in ("off", "on"))
        medians[spec["id"]] = (off, on)
        print(f"| {spec['id']} | {off:.3f} | {on:.3f} | {off / on:.2f} |")
    off_all = sum(m[0] for m in medians.values())
    on_all = sum(m[1] for m in medians.values())
    print(f"| all agents (sum) | {off_all:.3f} | {on_all:.3f} | {off_all / on_all:.2f} |")
    lookups = memo_module.STATS["hits"] + memo_module.STATS["misses"]
    print(f"\nrecords identical in both arms: {same} of {total}; distinct jobs stored in the memo: {stored}; "
          f"memo hits {memo_module.STATS['hits']} of {lookups} job lookups ({memo_module.STATS['hits'] / max(lookups, 1):.0%})")
    for seeds in (25, 50):
        hours = [164 * seeds * s / args.workers / 3600 for s in (off_all, on_all)]
        print(f"projection, 164 problems x {seeds} seeds x {len(agents)} agents, {args.workers} workers: "
              f"memo off {hours[0]:.1f} h, memo on {hours[1]:.1f} h (hit share measured on {args.seeds} seeds; "
              f"more seeds share more)")


if __name__ == "__main__":
    main()
