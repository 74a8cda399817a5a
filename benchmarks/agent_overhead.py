"""Per-step overhead of LLMAgent with an offline model, model time excluded.

For each output mode (native tool calls, JSON in the prompt) it plays episodes of ``--steps``
turns against the offline model ``rsigym/bench`` and measures, per step:

* ``act``: the whole ``LLMAgent.act`` call (messages, LiteLLM routing, parsing, validation,
  usage and cost bookkeeping, plus the model);
* ``model``: the time inside the model itself (the offline policy, timed from inside);
* the reference: drawing the same kind of action directly (``sample_instance``), what the model
  costs with no agent around it.

The overhead is ``act - model`` per step; the table prints its median (target <= 5 ms).

Run: ``python benchmarks/agent_overhead.py [--steps 20] [--episodes 10]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from rsigym.agents import LLMAgent, OfflineReply, register_offline_policy
from rsigym.agents.schema_sampling import sample_instance

TARGET_MS = 5.0
SCHEMA = {
    "type": "object", "required": ["learning_rate", "optimizer", "layers"], "additionalProperties": False,
    "properties": {
        "learning_rate": {"type": "number", "minimum": 1e-5, "maximum": 1e-1, "x-log": True},
        "optimizer": {"enum": ["adam", "sgd", "adamw"]},
        "layers": {"type": "integer", "minimum": 1, "maximum": 8},
    },
}
_model_s: list[float] = []


@register_offline_policy("bench")
def _bench_policy(request):  # the "model": a schema draw, timed from inside
    started = time.perf_counter()
    action = sample_instance(request.schema or SCHEMA, request.rng)
    _model_s.append(time.perf_counter() - started)
    return OfflineReply(action=action)


def measure(mode: str, steps: int, episodes: int) -> dict[str, float]:
    overhead, act_total, model_total = [], [], []
    for episode in range(episodes + 1):  # episode 0 warms LiteLLM up and is not counted
        agent = LLMAgent("rsigym/bench", tool_mode=mode)
        agent.reset({"env_id": "bench", "action_schema": SCHEMA}, seed=episode)
        for step in range(steps):
            _model_s.clear()
            started = time.perf_counter()
            agent.act({"text": f"Trial {step}: validation error 0.{step:03d}. Propose the next config."})
            act_s = time.perf_counter() - started
            if episode:
                act_total.append(act_s)
                model_total.append(sum(_model_s))
                overhead.append(act_s - sum(_model_s))
    rng = np.random.default_rng(0)
    reference = []
    for _ in range(steps * episodes):
        started = time.perf_counter()
        sample_instance(SCHEMA, rng)
        reference.append(time.perf_counter() - started)
    ms = lambda xs: 1000 * statistics.median(xs)  # noqa: E731
    return {"act": ms(act_total), "model": ms(model_total), "overhead": ms(overhead),
            "reference": ms(reference)}


def main(steps: int = 20, episodes: int = 10) -> dict[str, dict[str, float]]:
    results = {mode: measure(mode, steps, episodes) for mode in ("tools", "json")}
    table = Table(title=f"LLMAgent per-step overhead, offline model, median of {steps * episodes} steps")
    for column in ("mode", "act ms", "model ms", "direct draw ms (reference)", "overhead ms", "target", "verdict"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    for mode, r in results.items():
        verdict = "PASS" if r["overhead"] <= TARGET_MS else "MISS"
        table.add_row(mode, f"{r['act']:.2f}", f"{r['model']:.3f}", f"{r['reference']:.3f}",
                      f"{r['overhead']:.2f}", f"<= {TARGET_MS:.0f}", verdict)
    Console().print(table)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=10)
    args = parser.parse_args()
    main(args.steps, args.episodes)
