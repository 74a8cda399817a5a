"""Agents: the Agent protocol, ``make_agent`` and the built-in agents."""

from .base import Agent, available_agents, make_agent, register_agent
from .scripted import ProbeBisectAgent, RandomAgent

__all__ = ["Agent", "ProbeBisectAgent", "RandomAgent", "available_agents", "make_agent", "register_agent"]
