"""Agents: the Agent protocol, ``make_agent`` and the built-in agents."""

from .base import Agent, available_agents, make_agent, register_agent
from .llm import LLMAgent
from .llm_provider import ProviderError, RetryPolicy
from .offline import OfflineReply, OfflineRequest, offline_policies, register_offline_policy
from .optuna_agents import OptunaParams, RandomSearchAgent, TPEAgent, TPEParams
from .optuna_space import action_from_params, optuna_distributions
from .scripted import ProbeBisectAgent, RandomAgent

# The env families' own agents and offline models live in their folders (envs/<family>/) and
# register themselves on import. Imported as modules (no names), after everything above, so that
# importing a family module first does not meet a half-initialised name here.
from rsigym.envs.tooluse import agents as _tooluse_agents  # noqa: E402,F401
from rsigym.envs.hpo import policies as _hpo_policies  # noqa: E402,F401
from rsigym.envs.dataselect import agents as _dataselect_agents  # noqa: E402,F401
from rsigym.envs.evolution import agents as _evolution_agents  # noqa: E402,F401
from rsigym.envs.evolution import evoalloc as _evolution_evoalloc  # noqa: E402,F401
from rsigym.envs.evolution import policies as _evolution_policies  # noqa: E402,F401

__all__ = [
    "Agent", "LLMAgent", "OfflineReply", "OfflineRequest", "OptunaParams", "ProbeBisectAgent",
    "ProviderError", "RandomAgent", "RandomSearchAgent", "RetryPolicy", "TPEAgent", "TPEParams",
    "action_from_params", "available_agents", "make_agent", "offline_policies",
    "optuna_distributions", "register_agent", "register_offline_policy",
]
