"""``rsigym/evoalloc_heuristic``: the offline stand-in for the LLM parts of EvoAlloc.

Served through LiteLLM like any model, it reads only the messages:

* a decision request (the allocation policy in a system message, the observation text last):
  it follows the policy's ``[params: ...]`` line (the default policy when the text has none)
  on features parsed from the observation text, and answers ``{"decision": ...}``;
* a revision request (``[evoalloc:revise]``): from the experience summary's counts it loosens
  the policy when good candidates were turned away, tightens it when full evaluations were
  wasted, and otherwise tries a slightly thriftier one; it answers with the new policy text.
"""

from __future__ import annotations

import re
from dataclasses import replace

from rsigym.agents.offline import OfflineReply, OfflineRequest, register_offline_policy

from .allocation_policy import DEFAULT_POLICY, decide, parse_features, parse_policy, policy_text

__all__ = ["revise_policy"]

_COUNT = re.compile(r"^(refuting|supporting) \(([^)]*)\): (\d+)$", re.MULTILINE)
_VERSION = re.compile(r"Allocation policy v(\d+)")


def revise_policy(policy: str, summary: str) -> str:
    params = parse_policy(policy) or DEFAULT_POLICY
    match = _VERSION.search(policy)
    version = int(match.group(1)) if match else 1
    counts = {(kind, what.split(":")[0].split(" ")[0]): int(n) for kind, what, n in _COUNT.findall(summary)}
    turned_away = counts.get(("refuting", "missed"), 0)
    wasted = counts.get(("refuting", "wasted"), 0)
    found = counts.get(("supporting", "full"), 0)
    if turned_away > 0:
        params = params.scaled(1.6)
    elif wasted > 2 * max(found, 1):
        params = replace(params.scaled(0.6), prefer_partial=1)
    elif wasted == 0 and found > 0:
        params = replace(params, prefer_partial=0)  # evaluations pay off: skip the partial step
    else:
        params = params.scaled(0.85)
    return policy_text(params, version + 1)


@register_offline_policy("evoalloc_heuristic")
def evoalloc_heuristic_policy(request: OfflineRequest) -> OfflineReply:
    """EvoAlloc's LLM parts offline: decides by the policy text, revises it from the experience summary."""
    system = "\n".join(str(m.get("content") or "") for m in request.messages if m.get("role") == "system")
    if "[evoalloc:revise]" in system:
        user = str(request.messages[-1].get("content") or "")
        policy, _, summary = user.partition("\n\nExperience:\n")
        return OfflineReply(text=revise_policy(policy.removeprefix("Current policy:\n"), summary))
    observation = ""
    for message in reversed(request.messages):
        content = str(message.get("content") or "")
        if message.get("role") in ("user", "tool") and "Candidate code:" in content:
            observation = content
            break
    params = parse_policy(system) or DEFAULT_POLICY
    return OfflineReply(action={"decision": decide(params, parse_features(observation))})
