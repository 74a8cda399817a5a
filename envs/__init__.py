"""rsigym environments, registered with Gymnasium on import (ids in the ``rsigym`` namespace)."""

from __future__ import annotations

import gymnasium as gym

from rsigym.conditions import Condition, ConditionRegistry
from rsigym.spaces import INVALID_ACTION_KEY, TEXT_CHARSET, JsonActions, invalid_action, text_space

__all__ = ["Condition", "ConditionRegistry", "JsonActions", "INVALID_ACTION_KEY", "TEXT_CHARSET",
           "invalid_action", "text_space", "ENV_IDS"]

# id -> entry point. Entry points are strings so that importing rsigym.envs stays cheap: a
# family's heavy dependencies load only when its env is made.
_ENTRY_POINTS = {
    "rsigym/Probe-v0": "rsigym.envs.probe.env:ProbeEnv",
    "rsigym/ToolUse-v0": "rsigym.envs.tooluse.env:ToolUseEnv",
    "rsigym/BlackBox-v0": "rsigym.envs.blackbox.env:BlackBoxEnv",
    "rsigym/HyperparamSearch-v0": "rsigym.envs.hpo.env:HyperparamSearchEnv",
    "rsigym/ProgramEvolution-v0": "rsigym.envs.evolution.env:ProgramEvolutionEnv",
    "rsigym/DataSelection-v0": "rsigym.envs.dataselect.env:DataSelectionEnv",
}
ENV_IDS = tuple(_ENTRY_POINTS)

for _env_id, _entry_point in _ENTRY_POINTS.items():
    if _env_id not in gym.registry:
        gym.register(id=_env_id, entry_point=_entry_point)
