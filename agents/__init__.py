"""Agents: the Agent protocol, ``make_agent`` and the built-in agents."""

from . import hpo_policies  # noqa: F401  (registers the rsigym/hpo_* offline models)
from . import evoalloc_offline  # noqa: F401  (registers the rsigym/evoalloc_heuristic offline model)
from . import dataselect_agents  # noqa: F401  (dataselect-selector agents, rsigym/dataselect_heuristic)
from .base import Agent, available_agents, make_agent, register_agent
from .llm import LLMAgent
from .offline import OfflineReply, OfflineRequest, offline_policies, register_offline_policy
from .optuna_agents import OptunaParams, RandomSearchAgent, TPEAgent, TPEParams
from .optuna_space import action_from_params, optuna_distributions
from .scripted import ProbeBisectAgent, RandomAgent
from .tooluse_agents import ToolUsePlanAgent
from .allocators import AlwaysFullAgent, CascadeAgent, oneshot_llm_agent
from .evoalloc import EvoAllocAgent, accept_challenger

__all__ = [
    "Agent", "LLMAgent", "OfflineReply", "OfflineRequest", "OptunaParams", "ProbeBisectAgent",
    "RandomAgent", "RandomSearchAgent", "ToolUsePlanAgent", "TPEAgent", "TPEParams",
    "action_from_params", "available_agents", "make_agent", "offline_policies",
    "optuna_distributions", "register_agent", "register_offline_policy",
    "AlwaysFullAgent", "CascadeAgent", "EvoAllocAgent", "accept_challenger", "oneshot_llm_agent",
]
