"""Agents for DataSelection-v0: scripted selectors, and the offline LLM ``rsigym/dataselect_heuristic``.

Both follow the same plan from the observation text alone: ask the env for every row's base
loss, send the selector (``subset_selectors``, numpy only) to ``run_python``, which writes
``submission.csv`` in the sandbox, and submit that file. The scripted agent
(kind ``dataselect_selector``, params ``{"selector": name}``) runs any selector; the offline
model runs the stratified-coverage selector through ``LLMAgent``, the same code path as a
hosted model.
"""

from __future__ import annotations

import re
from typing import Any

from rsigym.agent import register_agent
from rsigym.agents.offline import OfflineReply, OfflineRequest, register_offline_policy
from rsigym.records import AgentSpec, Usage

from .subset_selectors import SELECTORS, selector_script

__all__ = ["DataSelectorAgent", "next_selection_action"]

_GROUP_SIZE = re.compile(r"groups of exactly (\d+) rows")


def next_selection_action(texts: list[str], selector: str, seed: int) -> dict[str, Any]:
    """The next action of the plan, from every observation text so far (oldest first)."""
    joined = "\n".join(texts)
    match = _GROUP_SIZE.search(joined)
    if match is None:
        return {"action": "stats"}
    group_size = int(match.group(1))
    if selector != "random" and "Base-model losses of" not in joined:
        return {"action": "base_losses", "rows": "all"}
    if "wrote submission.csv" not in joined:
        return {"action": "run_python", "code": selector_script(selector, group_size, seed)}
    return {"action": "submit", "csv_file": "submission.csv", "order": [0, 1, 2, 3, 4]}


class DataSelectorAgent:
    """Runs one of ``SELECTORS`` through the env's analysis tools; deterministic in its seed."""

    def __init__(self, spec: AgentSpec) -> None:
        unknown = set(spec.params) - {"selector"}
        if unknown:
            raise TypeError(f"dataselect_selector takes only 'selector', got {sorted(unknown)}")
        self.selector = str(spec.params.get("selector", "stratified"))
        if self.selector not in SELECTORS:
            raise TypeError(f"unknown selector {self.selector!r}; known: {', '.join(SELECTORS)}")
        self.spec = spec
        self.last_usage = Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        self._texts: list[str] = []
        self._seed = int(seed)

    def act(self, observation: dict[str, Any]) -> Any:
        self._texts.append(str(observation["text"]))
        return next_selection_action(self._texts, self.selector, self._seed)


register_agent("dataselect_selector")(DataSelectorAgent)


@register_offline_policy("dataselect_heuristic")
def heuristic_policy(request: OfflineRequest) -> OfflineReply:
    """The ``stratified`` selector played as an LLM would: inspect, run the selector, submit."""
    texts = [str(m.get("content") or "") for m in request.messages if m.get("role") in ("user", "tool")]
    return OfflineReply(action=next_selection_action(texts, "stratified", int(request.rng.integers(2**31))))
