"""The code-repair headroom table at the paper's scale, by a first-round replay.

For each seed, the env's own stream (order shuffled by the seed) and the mixture coder's first-round
candidates of every problem (the same draws the env makes: same seed, problem, round, no feedback),
their cheap sandbox checks (all rounds of a seed in one exec), features and simulator labels
(passes the public tests). The real agent classes (``static_verifier``, ``static_verifier_audit``,
``fixed_world_model``, ``adaptive_world_model``) then play the first rounds in stream order, each
seeing only its executed candidate's outcome; their picks, the in-sample oracle of each model class
and a uniform pick are scored before and after the coder's drift (``headroom.headroom_rows``:
deltas against the static verifier, two-way seed x problem bootstrap CI and MDD).

A replay of first rounds only: later rounds (after feedback) are not played, so the agents learn
from one executed candidate per problem, fewer rows than in a full episode.

Run: ``python benchmarks/coderepair_headroom.py [--problems 164] [--seeds 10] [--predictor offset]``.
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from typing import Any

import numpy as np
from rich.console import Console

from rsigym.envs.coderepair.agents import WorldModelAgent
from rsigym.envs.coderepair.checks import run_checks_many
from rsigym.envs.coderepair.env import CodeRepairEnv
from rsigym.envs.coderepair.execution import CODEREPAIR_LIMITS
from rsigym.envs.coderepair.features import candidate_features
from rsigym.envs.coderepair.headroom import FirstRound, headroom_rows
from rsigym.envs.coderepair.predictors import PREDICTOR_KINDS
from rsigym.records import AgentSpec
from rsigym.sandbox import open_sandbox


def replay_seed(env: CodeRepairEnv, seed: int, agents: dict[str, AgentSpec]) -> list[FirstRound]:
    """First rounds of one seed's stream, with each agent's pick."""
    env.reset(seed=seed)
    stream, catalogue = env._stream, env._catalogue  # the env's own stream and labelled catalogue
    rounds_in: list[tuple[Any, list[Any]]] = []
    for index, problem in enumerate(stream):
        rng = np.random.default_rng([seed, zlib.crc32(problem.problem_id.encode()), 1, zlib.crc32(b"")])
        rounds_in.append((problem, env.coder.propose(problem, catalogue.get(problem.problem_id, []), round_index=0,
                                                     progress=index / len(stream), feedback=None,
                                                     n=env.n_candidates, rng=rng)))
    assert env._sandbox is not None
    checks = run_checks_many(env._sandbox, [(p, [c.code for c in cands]) for p, cands in rounds_in], trusted=True)
    players = {name: WorldModelAgent(spec) for name, spec in agents.items()}
    for player in players.values():
        player.reset({"info": {"entry": stream[0].entry, "problem_id": stream[0].problem_id}}, seed)
    out = []
    for index, ((problem, cands), check) in enumerate(zip(rounds_in, checks)):
        codes = [c.code for c in cands]
        labels = np.array([float(c.kind in ("correct", "sneaky")) for c in cands])
        observation = {"candidates": tuple(codes), "round": np.int64(1), "checks": json.dumps(check)}
        following = stream[index + 1] if index + 1 < len(stream) else None
        picks = {}
        for name, player in players.items():
            chosen = int(player.act(observation)["candidate"])
            picks[name] = chosen
            player.observe(0.0, observation, {
                "executed": {"problem_id": problem.problem_id, "public_pass": bool(labels[chosen])},
                "problem_id": following.problem_id if following else None, "entry": following.entry if following else None})
        out.append(FirstRound(seed, problem.problem_id, env.coder.drifted(index / len(stream)),
                              candidate_features(codes, problem.entry, 0, set(), check), labels, picks))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=164)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--drift-at", type=float, default=0.4)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--predictor", default="offset", choices=list(PREDICTOR_KINDS))
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    wm = {"predictor": args.predictor, "warmup": args.warmup, "check_every": 10, "min_samples": 30, "min_fit_rows": 40}
    agents = {"static_audit": AgentSpec(id="static_audit", kind="static_verifier_audit"),
              "fixed": AgentSpec(id="fixed", kind="fixed_world_model",
                                 params={k: wm[k] for k in ("predictor", "warmup", "min_samples")}),
              "adaptive": AgentSpec(id="adaptive", kind="adaptive_world_model", params=wm)}
    rounds: list[FirstRound] = []
    with open_sandbox(args.sandbox, CODEREPAIR_LIMITS) as box:
        env = CodeRepairEnv(coder_params={"drift_at": args.drift_at}, problems=args.problems, sandbox=box)
        for seed in range(args.seeds):
            rounds += replay_seed(env, seed, agents)
        provider = box.info.get("provider")
    table = headroom_rows(rounds, list(agents))
    console = Console(width=200)
    console.print(f"headroom replay: {args.problems} problems x {args.seeds} seeds (first rounds), coder drift at "
                  f"{args.drift_at:.0%}, world models {args.predictor} (warm-up {args.warmup}), sandbox {provider}")
    for phase, rows in table.items():
        console.print(f"\n{phase}\n| method | cells | public-pass pick rate | delta vs static | 95% CI (seed x problem) | MDD |")
        for row in rows:
            extra = (f" {row['delta']:+.3f} | [{row['ci'][0]:+.3f}, {row['ci'][1]:+.3f}] | {row['mdd']:.3f} |"
                     if "delta" in row else " | | |")
            console.print(f"| {row['method']} | {row['cells']} | {row['rate']:.3f} |{extra}", markup=False)
    console.print(f"\nwall time {time.perf_counter() - started:.0f} s")
    return table


if __name__ == "__main__":
    main()
