"""Probe-v0's scripted agent: binary search from the shown feedback (agent kind ``probe_bisect``)."""

from __future__ import annotations

from typing import Any

from rsigym.agent import register_agent
from rsigym.records import AgentSpec, Usage

__all__ = ["ProbeBisectAgent"]


class ProbeBisectAgent:
    """Binary search on Probe-v0 from the shown feedback; deterministic.

    It trusts the feedback, so under the ``reverse_hints`` condition it fails: the positive
    control that shows a battery can detect an agent that uses its feedback.
    """

    def __init__(self, spec: AgentSpec) -> None:
        if spec.params:
            raise TypeError(f"probe_bisect takes no params, got {sorted(spec.params)}")
        self.spec = spec
        self.last_usage = Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        space = task_info["action_space"]["guess"]
        self._min, self._max = int(space.start), int(space.start + space.n - 1)
        self._low, self._high = self._min, self._max

    def act(self, observation: dict[str, Any]) -> Any:
        feedback = int(observation["feedback"])
        last = int(observation["last_guess"])
        if feedback == 1:       # higher
            self._low = max(self._low, last + 1)
        elif feedback == 2:     # lower
            self._high = min(self._high, last - 1)
        if self._low > self._high:  # contradictory feedback: keep guessing inside the range
            self._low, self._high = self._high, self._low
        return {"guess": min(max((self._low + self._high) // 2, self._min), self._max)}


register_agent("probe_bisect")(ProbeBisectAgent)
