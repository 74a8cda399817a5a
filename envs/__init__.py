"""rsigym's env families, one folder each (``envs/<family>/``); importing this package registers
every env id with Gymnasium (ids in the ``rsigym`` namespace, plus those of installed plug-ins)."""

from __future__ import annotations

from rsigym.conditions import Condition, ConditionRegistry
from rsigym.registry import register_gym_envs
from rsigym.spaces import INVALID_ACTION_KEY, TEXT_CHARSET, JsonActions, invalid_action, text_space

__all__ = ["Condition", "ConditionRegistry", "JsonActions", "INVALID_ACTION_KEY", "TEXT_CHARSET",
           "invalid_action", "text_space", "ENV_IDS"]

# Env ids come from the ``rsigym.envs`` entry points (rsigym's own families declare theirs in its
# pyproject.toml, other packages in theirs); the kernel registers them with Gymnasium by their
# entry point text, so importing rsigym.envs stays cheap and imports no family.
ENV_IDS = tuple(register_gym_envs())
