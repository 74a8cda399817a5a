"""One checked step: ``env.step`` plus what every step of a conforming env must satisfy.

Used by the env checks and the fuzz alike; needs nothing beyond rsigym's own dependencies (the
fuzz's ``hypothesis`` is not imported here, so ``check_family`` runs after a plain install).
"""

from __future__ import annotations

import json
import math
from typing import Any

import gymnasium as gym

from rsigym.records.trajectory import canonical_json

__all__ = ["step_checked"]


def step_checked(env: gym.Env[Any, Any], action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
    """``env.step(action)`` plus the checks every fuzzed step must pass (raises AssertionError)."""
    observation, reward, terminated, truncated, info = env.step(action)
    assert isinstance(info, dict) and isinstance(terminated, bool) and isinstance(truncated, bool)
    assert math.isfinite(float(reward)), reward
    assert env.observation_space.contains(observation), "observation outside the observation space"
    if "error" in info:
        assert isinstance(info["error"], str) and info["error"], info["error"]
    json.loads(canonical_json(info))
    json.loads(canonical_json(env.unwrapped.snapshot()))  # type: ignore[attr-defined]
    return observation, float(reward), terminated, truncated, info
