"""Conditions of the tool-use env: how the agent sees the tools, never what they do.

A condition builds a ``ToolView`` for a domain: the name and description the agent sees for
each canonical tool, and an optional transformation of tool outputs. Register your own with
``@TOOLUSE_CONDITIONS.register("name")``: a factory ``(**params) -> (domain -> ToolView)``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from rsigym.conditions import ConditionRegistry
from .domain import Domain

__all__ = ["ToolView", "TOOLUSE_CONDITIONS", "identity_view"]


@dataclass(frozen=True)
class ToolView:
    """Displayed names and descriptions per canonical tool name, and an output transformation."""

    names: dict[str, str]
    descriptions: dict[str, str]
    transform_output: Callable[[Any], Any] | None = field(default=None, compare=False)
    order: tuple[str, ...] | None = None  # canonical names in the order tools are listed

    def __post_init__(self) -> None:
        shown = list(self.names.values())
        if len(set(shown)) != len(shown):
            raise ValueError(f"two tools would share a displayed name: {sorted(shown)}")
        object.__setattr__(self, "_canonical", {v: k for k, v in self.names.items()})

    def canonical(self, displayed: str) -> str | None:
        """The canonical tool behind a displayed name, or None for an unknown name."""
        canonical: dict[str, str] = self._canonical  # type: ignore[attr-defined]
        return canonical.get(displayed)

    @property
    def renamed(self) -> dict[str, str]:
        """{canonical: displayed} for the tools whose name differs."""
        return {k: v for k, v in self.names.items() if k != v}


def identity_view(domain: Domain) -> ToolView:
    return ToolView({t.name: t.name for t in domain.tools}, {t.name: t.description for t in domain.tools})


TOOLUSE_CONDITIONS: ConditionRegistry[Callable[[Domain], ToolView]] = ConditionRegistry("tooluse")


@TOOLUSE_CONDITIONS.register("identity")
def _identity() -> Callable[[Domain], ToolView]:
    """The unmodified env."""
    return identity_view


@TOOLUSE_CONDITIONS.register("rename_tools")
def _rename_tools(mapping: dict[str, str] | None = None) -> Callable[[Domain], ToolView]:
    """Rename tools ({canonical: new name}; default: the domain's ``default_renames``)."""

    def view(domain: Domain) -> ToolView:
        base = identity_view(domain)
        renames = dict(domain.default_renames if mapping is None else mapping)
        unknown = set(renames) - set(base.names)
        if unknown:
            raise ValueError(f"rename_tools: no such {domain.name} tools: {sorted(unknown)}")
        return ToolView({k: renames.get(k, k) for k in base.names}, base.descriptions)

    return view


@TOOLUSE_CONDITIONS.register("prefix_names")
def _prefix_names(prefix: str = "svc_") -> Callable[[Domain], ToolView]:
    """Rename every tool by prefixing its name: a rename that touches every task."""

    def view(domain: Domain) -> ToolView:
        base = identity_view(domain)
        return ToolView({k: f"{prefix}{k}" for k in base.names}, base.descriptions)

    return view


@TOOLUSE_CONDITIONS.register("shuffle_tool_order")
def _shuffle_tool_order(seed: int = 0) -> Callable[[Domain], ToolView]:
    """The same tools listed in another (deterministic) order."""

    def view(domain: Domain) -> ToolView:
        base = identity_view(domain)
        order = tuple(sorted(base.names, key=lambda k: hashlib.sha256(f"order/{seed}/{k}".encode()).hexdigest()))
        return ToolView(base.names, base.descriptions, order=order)

    return view


@TOOLUSE_CONDITIONS.register("misleading_names")
def _misleading_names(mapping: dict[str, str] | None = None) -> Callable[[Domain], ToolView]:
    """Positive control: each tool shows another tool's name (same kind); descriptions unchanged.

    By default the names rotate by one within the READ tools and within the WRITE tools, in
    name order, so every name still exists but points to the wrong tool.
    """

    def view(domain: Domain) -> ToolView:
        base = identity_view(domain)
        names = dict(mapping or {})
        if not names:
            for kind in ("read", "write"):
                group = sorted(t.name for t in domain.tools if t.kind == kind)
                names.update({a: b for a, b in zip(group, group[1:] + group[:1])})
        return ToolView({k: names.get(k, k) for k in base.names}, base.descriptions)

    return view


@TOOLUSE_CONDITIONS.register("paraphrase_descriptions")
def _paraphrase_descriptions() -> Callable[[Domain], ToolView]:
    """The same tools described in other words (the domain's ``paraphrases``)."""

    def view(domain: Domain) -> ToolView:
        base = identity_view(domain)
        return ToolView(base.names, {k: domain.paraphrases.get(k, v) for k, v in base.descriptions.items()})

    return view


def _permute(value: Any, salt: str) -> Any:
    """Deterministically shuffle dict key order and list order, recursively."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: hashlib.sha256(f"{salt}/{k}".encode()).hexdigest())
        return {k: _permute(value[k], salt) for k in keys}
    if isinstance(value, list):
        items = [_permute(v, salt) for v in value]
        order = sorted(range(len(items)), key=lambda i: hashlib.sha256(
            f"{salt}/{json.dumps(items[i], sort_keys=True, default=str)}".encode()).hexdigest())
        return [items[i] for i in order]
    return value


@TOOLUSE_CONDITIONS.register("reorder_outputs")
def _reorder_outputs(seed: int = 0) -> Callable[[Domain], ToolView]:
    """Tool outputs with their keys and lists permuted deterministically; same content."""

    def view(domain: Domain) -> ToolView:
        base = identity_view(domain)
        return ToolView(base.names, base.descriptions, lambda output: _permute(output, f"reorder/{seed}"))

    return view
