"""A scripted agent with no model: the seeded random policy."""

from __future__ import annotations

from typing import Any

import numpy as np

from rsigym.agent import register_agent
from rsigym.records import AgentSpec, Usage

__all__ = ["RandomAgent"]


class RandomAgent:
    """Samples the env's action space with its own seeded generator: the floor every agent beats."""

    def __init__(self, spec: AgentSpec) -> None:
        if spec.params:
            raise TypeError(f"random agent takes no params, got {sorted(spec.params)}")
        self.spec = spec
        self.last_usage = Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        self._space = task_info["action_space"]
        self._space.seed(int(np.random.SeedSequence([seed, 0x5A4D]).generate_state(1)[0]))

    def act(self, observation: dict[str, Any]) -> Any:
        return self._space.sample()


register_agent("random")(RandomAgent)
