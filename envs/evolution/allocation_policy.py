"""Textual evaluation-allocation policies for ProgramEvolution-v0, and their offline reading.

A policy is text an LLM follows. The policies written here end with a machine-readable line
(``[params: full_margin=0.02 ...]``) so the offline stand-in can follow them too: it reads the
same policy text and the same observation text an LLM would, and decides by ``decide``.
Margins are relative shortfalls: ``(reference - value) / |reference|``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

__all__ = ["PolicyParams", "Features", "decide", "policy_text", "parse_policy", "parse_features", "DEFAULT_POLICY",
           "ALLOCATOR_PREAMBLE"]

# The system preamble every LLM allocator (oneshot_llm, evoalloc) starts from.
ALLOCATOR_PREAMBLE = ("You allocate the evaluation budget of a program-evolution run. For each candidate program "
                      "choose discard, partial (a cheaper, partial evaluation) or full. Full evaluations are the "
                      "budget; missing a new best candidate is the worst mistake.")


@dataclass(frozen=True)
class PolicyParams:
    """The knobs of a rule-based allocation policy."""

    full_margin: float = 0.02          # parent within this of the best: evaluate (fully, or partial first)
    partial_margin: float = 0.10       # parent within this: a partial evaluation (full where there is none)
    stage1_margin: float = 0.02        # after a partial: finish it when within this of the best partial-comparable
    max_sibling_failures: float = 0.6  # discard when siblings failed more often than this (unless near the best)
    prefer_partial: int = 1            # 1: near-best candidates get a partial evaluation first

    def clipped(self) -> "PolicyParams":
        return PolicyParams(min(max(self.full_margin, 0.0), 1.0), min(max(self.partial_margin, 0.0), 10.0),
                            min(max(self.stage1_margin, 0.0), 1.0), min(max(self.max_sibling_failures, 0.0), 1.0),
                            1 if self.prefer_partial else 0)

    def scaled(self, factor: float) -> "PolicyParams":
        """Margins times ``factor`` (> 1 loosens: more evaluation; < 1 tightens)."""
        return replace(self, full_margin=self.full_margin * factor, partial_margin=self.partial_margin * factor,
                       stage1_margin=self.stage1_margin * factor).clipped()


DEFAULT_POLICY = PolicyParams()


@dataclass(frozen=True)
class Features:
    """What a policy decides from (all read from the observation)."""

    best: float | None
    parent: float | None
    partial_available: bool
    stage: int
    partial: float | None = None
    reference_partial: float | None = None
    sibling_failure_rate: float = 0.0


def _shortfall(value: float | None, reference: float | None) -> float:
    if value is None or reference is None:
        return 0.0 if reference is None else float("inf")
    return (reference - value) / max(abs(reference), 1e-9)


def decide(params: PolicyParams, f: Features) -> str:
    """The decision the rules give: ``discard``, ``partial`` or ``full``."""
    if f.stage == 1:
        return "full" if _shortfall(f.partial, f.reference_partial) <= params.stage1_margin else "discard"
    gap = _shortfall(f.parent, f.best)
    if f.sibling_failure_rate > params.max_sibling_failures and gap > params.full_margin:
        return "discard"
    if gap <= params.full_margin:
        return "partial" if f.partial_available and params.prefer_partial else "full"
    if gap <= params.partial_margin:
        return "partial" if f.partial_available else "full"
    return "discard"


def policy_text(params: PolicyParams, version: int = 1) -> str:
    p = params
    first = "a partial evaluation first" if p.prefer_partial else "a full evaluation"
    return "\n".join([
        f"Allocation policy v{version}:",
        f"1. After a partial evaluation, finish it (full) only if its partial score is within {p.stage1_margin:.1%} "
        "of the best partial-comparable score; otherwise discard.",
        f"2. If the parent's score is within {p.full_margin:.1%} of the best full score, give the candidate {first} "
        "(full where partial evaluation is not available).",
        f"3. Else, if the parent is within {p.partial_margin:.1%} of the best, give it a partial evaluation "
        "(full where partial evaluation is not available).",
        f"4. Discard candidates whose siblings failed more than {p.max_sibling_failures:.0%} of the time, unless rule 2 applies.",
        "5. Discard everything else.",
        "[params: " + " ".join(f"{k}={v:g}" for k, v in asdict(p).items()) + "]",
    ])


_PARAMS = re.compile(r"\[params: ([^\]]*)\]")


def parse_policy(text: str) -> PolicyParams | None:
    """The params line of a policy text (the last one), or None when it has none."""
    found = _PARAMS.findall(text or "")
    if not found:
        return None
    known = {f.name for f in fields(PolicyParams)}
    values: dict[str, Any] = {}
    for item in found[-1].split():
        key, _, value = item.partition("=")
        if key in known:
            try:
                values[key] = int(float(value)) if key == "prefer_partial" else float(value)
            except ValueError:
                return None
    return PolicyParams(**values).clipped()


_NUMBER = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|none)"
_BEST = re.compile(r"Best full score so far: " + _NUMBER)
_PARENT = re.compile(r"parent #\d+ with score " + _NUMBER)
_PARTIAL = re.compile(r"This candidate's partial score: " + _NUMBER + r" \(best partial-comparable score: " + _NUMBER)
_SIBLING_FAILURES = re.compile(r"Siblings \(other children of the same parent; (\d+) of (\d+) evaluated failed")


def _num(text: str | None) -> float | None:
    return None if text is None or text == "none" else float(text)


def parse_features(text: str) -> Features:
    """Features from an observation's text (what an LLM reads)."""
    best = _BEST.search(text)
    parent = _PARENT.search(text)
    partial = _PARTIAL.search(text)
    siblings = _SIBLING_FAILURES.search(text)
    failures, tried = (int(siblings.group(1)), int(siblings.group(2))) if siblings else (0, 0)
    return Features(best=_num(best.group(1)) if best else None, parent=_num(parent.group(1)) if parent else None,
                    partial_available="partial evaluation available" in text, stage=1 if partial else 0,
                    partial=_num(partial.group(1)) if partial else None,
                    reference_partial=_num(partial.group(2)) if partial else None,
                    sibling_failure_rate=failures / tried if tried else 0.0)
