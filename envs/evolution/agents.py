"""Evaluation allocators for ProgramEvolution-v0 without a revisable policy.

* ``always_full``: every candidate gets a full evaluation (the baseline of the paper).
* ``cascade``: a partial evaluation first, the full one only when the partial score is within
  ``margin`` (relative) of the best partial-comparable score, like OpenEvolve's cascade; on a
  task without partial evaluation it evaluates everything fully.
* ``oneshot_llm``: an LLM that follows one fixed textual policy (``LLMAgent`` with the policy
  as its system preamble); offline model ``rsigym/evoalloc_heuristic``.
"""

from __future__ import annotations

from typing import Any

from rsigym.agent import register_agent
from rsigym.agents.llm import LLMAgent
from rsigym.records import AgentSpec, Usage

from .allocation_policy import ALLOCATOR_PREAMBLE, DEFAULT_POLICY, policy_text

__all__ = ["AlwaysFullAgent", "CascadeAgent", "oneshot_llm_agent", "ALLOCATOR_PREAMBLE"]


class AlwaysFullAgent:
    """Evaluates every candidate fully."""

    def __init__(self, spec: AgentSpec) -> None:
        if spec.params:
            raise TypeError(f"always_full takes no params, got {sorted(spec.params)}")
        self.spec, self.last_usage = spec, Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        pass

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "full"}


class CascadeAgent:
    """Partial first; full only above a threshold (see the module docstring).

    Params:
        margin: Relative shortfall from the best partial-comparable score still promoted to full.
    """

    def __init__(self, spec: AgentSpec) -> None:
        unknown = set(spec.params) - {"margin"}
        if unknown:
            raise TypeError(f"cascade takes only margin, got {sorted(unknown)}")
        self.margin = float(spec.params.get("margin", 0.02))
        if not self.margin >= 0:
            raise TypeError(f"cascade margin must be >= 0, got {self.margin}")
        self.spec, self.last_usage = spec, Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        pass

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        if not int(observation["partial_available"]):
            return {"decision": "full"}
        if int(observation["stage"]) == 0:
            return {"decision": "partial"}
        score, reference = float(observation["partial_score"]), float(observation["reference_partial"])
        threshold = reference - self.margin * max(abs(reference), 1e-9)
        return {"decision": "full" if score >= threshold else "discard"}


def oneshot_llm_agent(spec: AgentSpec) -> LLMAgent:
    """An LLMAgent following the fixed default policy (``params`` go to LLMAgent)."""
    params = dict(spec.params)
    preamble = ALLOCATOR_PREAMBLE + "\n\nFollow this fixed policy:\n" + policy_text(DEFAULT_POLICY)
    params.setdefault("tool_mode", "json")
    return LLMAgent(spec.model or "rsigym/evoalloc_heuristic", system_preamble=preamble, spec=spec, **params)


register_agent("always_full")(AlwaysFullAgent)
register_agent("cascade")(CascadeAgent)
register_agent("oneshot_llm")(oneshot_llm_agent)
