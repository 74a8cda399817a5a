"""Generic agents: the LLM agent, offline models, Optuna baselines and the random agent.

The Agent protocol and ``make_agent`` live in the kernel (``rsigym.agent``) and are re-exported
here. Family-specific agents live in their family's folder (``rsigym.envs.<family>.agents``) and
join through the ``rsigym.agents`` entry-point group, like any third-party agent.
"""

from rsigym.agent import Agent, available_agents, make_agent, register_agent

from .llm import LLMAgent
from .offline import OfflineReply, OfflineRequest, offline_policies, register_offline_policy
from .optuna_agents import OptunaParams, RandomSearchAgent, TPEAgent, TPEParams
from .optuna_space import action_from_params, optuna_distributions
from .scripted import RandomAgent

__all__ = [
    "Agent", "LLMAgent", "OfflineReply", "OfflineRequest", "OptunaParams",
    "RandomAgent", "RandomSearchAgent", "TPEAgent", "TPEParams",
    "action_from_params", "available_agents", "make_agent", "offline_policies",
    "optuna_distributions", "register_agent", "register_offline_policy",
]
