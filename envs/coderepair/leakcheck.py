"""Is anything about a candidate the agent did not execute told to it? An experiment, not a code review.

The twin of ``rsigym.envs.forecast.leakcheck``. An episode is played twice with the same seed and
the same agent: once as it is, once with the hidden attributes of every candidate the agent did
not execute changed right after the coder draws it (its code kept: the agent may read code, it
must not be *told* an origin or an outcome). The origin becomes the sentinel ``SENTINEL`` and the
kind flips between passing and failing the public tests (correct <-> wrong, sneaky <-> crash, the
hidden failure type with it). "Not executed" is read from the first play: every (problem, round,
index) but the picked one. Everything the agent receives (the reset info, then per step the
observation, reward, terminated, truncated and info) is captured as canonical JSON and hashed;
the second play must give the same hashes, and the sentinel must appear nowhere in it.

What the check cannot move: facts fixed before the draw (the coder's per-origin base mass B(o),
the mix in force) are the same in both plays by construction. They describe the coder's
distribution, identical for every candidate of a round, not a drawn candidate (see ``coder_mix``).

Run at a larger size: ``python -m rsigym.envs.coderepair.leakcheck --problems 40 --seeds 0 1 2``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import zlib
from typing import Any, Callable

import numpy as np

__all__ = ["SENTINEL", "HashPickAgent", "LeakReport", "relabelled", "unexecuted_differences"]

SENTINEL = "leakcheck:unexecuted"
_FLIP = {"correct": "wrong", "wrong": "correct", "sneaky": "crash", "crash": "sneaky"}


class HashPickAgent:
    """Picks the candidate whose code has the smallest CRC-32 (a pick that reads only the code);
    from problem ``mix_from`` on it sends one fixed ``coder_weights`` so the mixed draw is exercised."""

    def __init__(self, mix_from: int | None = 2, mix: dict[str, float] | None = None) -> None:
        self.mix_from, self.mix = mix_from, dict(mix or {"rewrite:rename": 1.0, "crash:name_error": 0.3, "*": 0.6})

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        self._sent = False

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        codes = [str(c) for c in observation["candidates"]]
        action: dict[str, Any] = {"candidate": int(np.argmin([zlib.crc32(c.encode()) for c in codes]))}
        if self.mix_from is not None and not self._sent and int(observation["problem_index"]) >= self.mix_from:
            action["coder_weights"], self._sent = self.mix, True
        return action


def relabelled(candidate: Any) -> Any:
    """The candidate with its origin replaced by the sentinel and its public outcome flipped; same code."""
    failure = "leakcheck" if candidate.failure is None else None
    return dataclasses.replace(candidate, origin=SENTINEL, kind=_FLIP.get(candidate.kind, candidate.kind),
                               failure=failure)


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True, default=str)


@dataclasses.dataclass
class _Play:
    received: list[str]                    # canonical JSON of what the agent received, in order
    chosen: dict[tuple[int, int], int]     # (problem index, round) -> executed candidate
    candidates: dict[tuple[int, int], int]  # (problem index, round) -> candidates drawn


def _play(env: Any, agent: Any, seed: int, relabel: dict[tuple[int, int], int] | None) -> _Play:
    """One episode; with ``relabel``, every candidate of a listed round but the listed index is relabelled."""
    from rsigym.agent import task_info

    drawn: dict[tuple[int, int], int] = {}
    original = env._propose

    def propose() -> None:  # the env's own draw, then (second play) the unexecuted ones relabelled
        original()
        key = (int(env._index), int(env._round))
        drawn[key] = len(env._candidates)
        if relabel is not None and key in relabel:
            env._candidates = [c if i == relabel[key] else relabelled(c) for i, c in enumerate(env._candidates)]

    env._propose = propose
    observation, info = env.reset(seed=seed)
    about = task_info(env, info=info)
    agent.reset(about, seed)
    received = [_canonical({"task_info": about, "observation": observation})]
    chosen: dict[tuple[int, int], int] = {}
    done = truncated = False
    while not (done or truncated):
        key = (int(env._index), int(env._round))
        action = agent.act(observation)
        observation, reward, done, truncated, info = env.step(action)
        if "executed" in info:
            chosen[key] = int(info["executed"]["candidate"])
        received.append(_canonical({"observation": observation, "reward": reward, "terminated": done,
                                    "truncated": truncated, "info": info}))
        observe = getattr(agent, "observe", None)
        if observe is not None:
            observe(float(reward), observation, info)
    return _Play(received, chosen, drawn)


@dataclasses.dataclass(frozen=True)
class LeakReport:
    seed: int
    steps: int                  # agent-facing messages compared (reset + steps)
    rounds: int                 # executed rounds
    unexecuted: int             # candidates relabelled in the second play
    origins_told: int           # sentinel occurrences in what the agent received
    differing: tuple[str, ...]  # "step N: keys" whose content changed, plus any length change

    @property
    def leaks(self) -> int:
        return self.origins_told + len(self.differing)

    def line(self) -> str:
        return (f"seed {self.seed}: {self.leaks} unexecuted candidates' origins or outcomes in anything an agent "
                f"receives ({self.origins_told} sentinel origins told, {len(self.differing)} of {self.steps} "
                f"messages changed; {self.unexecuted} unexecuted candidates relabelled over {self.rounds} rounds)")


def _differences(first: list[str], second: list[str]) -> list[str]:
    out = []
    for step, (a, b) in enumerate(zip(first, second)):
        if hashlib.sha256(a.encode()).digest() != hashlib.sha256(b.encode()).digest():
            left, right = json.loads(a), json.loads(b)
            keys = sorted(k for k in left if left[k] != right.get(k))
            inner = [f"{k}.{sub}" for k in keys if isinstance(left[k], dict) and isinstance(right.get(k), dict)
                     for sub in sorted(left[k]) if left[k][sub] != right[k].get(sub)]
            out.append(f"step {step}: {', '.join(inner or keys)}")
    if len(first) != len(second):
        out.append(f"episode length {len(first)} vs {len(second)}")
    return out


def unexecuted_differences(make_env: Callable[[], Any], make_agent: Callable[[], Any], seed: int) -> LeakReport:
    """Play twice (see the module docstring) and count what the agent was told about unexecuted candidates."""
    env = make_env()
    try:
        first = _play(env, make_agent(), seed, None)
    finally:
        env.close()
    env = make_env()
    try:
        second = _play(env, make_agent(), seed, first.chosen)
    finally:
        env.close()
    unexecuted = sum(second.candidates.get(key, 0) - 1 for key in first.chosen if key in second.candidates)
    told = sum(text.count(SENTINEL) for text in second.received)
    return LeakReport(seed, len(first.received), len(first.chosen), unexecuted, told,
                      tuple(_differences(first.received, second.received)))


def main(argv: list[str] | None = None) -> int:
    from .agents import WorldModelAgent
    from .env import CodeRepairEnv
    from rsigym.records import AgentSpec

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--drift-at", type=float, default=0.4)
    parser.add_argument("--agent", choices=("hash", "joint"), default="hash",
                        help="hash: HashPickAgent; joint: adaptive_world_model with update_coder (the policy side)")
    args = parser.parse_args(argv)
    params = {"warmup": 8, "check_every": 4, "min_fit_rows": 12, "min_samples": 12, "update_coder": True}
    make_agent: Callable[[], Any] = (HashPickAgent if args.agent == "hash" else lambda: WorldModelAgent(
        AgentSpec(id="joint", kind="adaptive_world_model", params=params)))
    total = 0
    for seed in args.seeds:
        report = unexecuted_differences(lambda: CodeRepairEnv(sandbox=args.sandbox, problems=args.problems,
                                                              coder_params={"drift_at": args.drift_at}),
                                        make_agent, seed)
        print(report.line())
        for line in report.differing[:3]:
            print(f"  {line}")
        total += report.leaks
    print(f"total: {total} unexecuted candidates' origins or outcomes in anything an agent receives "
          f"({args.agent} agent, {args.problems} problems x {len(args.seeds)} seeds)")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
