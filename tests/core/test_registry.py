"""The one Registry type: in-process registration, entry points read lazily, aliases, errors."""

from __future__ import annotations

import textwrap

import pytest

from rsigym.agent import make_agent
from rsigym.errors import UserError
from rsigym.registry import AGENTS, CONDITIONS, ENVS, GRADERS, OFFLINE_POLICIES, Registry


def _plugin(tmp_path, monkeypatch, module: str, source: str, entry_points: str) -> None:
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    dist = tmp_path / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    monkeypatch.syspath_prepend(str(tmp_path))


def test_entry_points_are_listed_without_import_and_imported_on_lookup(tmp_path, monkeypatch):
    _plugin(tmp_path, monkeypatch, "reg_lazy_plugin", """
        IMPORTED = True
        def thing():
            '''A thing from a plug-in.'''
    """, "[test.rsigym.things]\nthing = reg_lazy_plugin:thing\n")
    import sys

    registry: Registry[object] = Registry("thing", "test.rsigym.things")
    assert list(registry) == ["thing"] and "reg_lazy_plugin" not in sys.modules
    assert registry.describe("thing") == "A thing from a plug-in."
    assert "reg_lazy_plugin" in sys.modules
    sys.modules.pop("reg_lazy_plugin", None)


def test_unknown_names_and_broken_plugins_are_one_line_user_errors(tmp_path, monkeypatch):
    _plugin(tmp_path, monkeypatch, "reg_broken_plugin", "raise RuntimeError('no GPU here')\n",
            "[test.rsigym.broken]\nbad = reg_broken_plugin:thing\n")
    registry: Registry[object] = Registry("widget", "test.rsigym.broken")
    registry.register("good", object())
    with pytest.raises(UserError, match=r"unknown widget 'nope'; known: bad, good"):
        registry.lookup("nope")
    with pytest.raises(UserError, match=r"widget 'bad': cannot load entry point .*RuntimeError: no GPU here"):
        registry.lookup("bad")
    assert list(registry.loaded()) == ["good"]  # the broken one is left out (and logged), the rest load


def test_a_name_cannot_be_taken_twice_by_different_objects():
    registry: Registry[object] = Registry("widget", "test.rsigym.none")
    first = object()
    registry.register("w", first)
    registry.register("w", first)  # the same object again: harmless (a module imported twice)
    with pytest.raises(ValueError, match="already registered"):
        registry.register("w", object())


def test_old_agent_kind_spellings_still_build_the_same_agents():
    for old, new in [("probe-bisect", "probe_bisect"), ("random-search", "random_search"),
                     ("dataselect-selector", "dataselect_selector")]:
        assert old in AGENTS and AGENTS[old] is AGENTS[new]
    agent = make_agent({"id": "b", "kind": "probe-bisect"})
    assert type(agent).__name__ == "ProbeBisectAgent"


def test_builtin_names_come_from_the_package_entry_points():
    # the built-in families are declared exactly as a plug-in would declare them
    for registry, name in [(ENVS, "rsigym/Probe-v0"), (AGENTS, "probe_bisect"), (GRADERS, "probe_answer"),
                           (CONDITIONS, "probe.reverse_hints"), (OFFLINE_POLICIES, "hpo_heuristic")]:
        ep = registry.entry_point(name)
        assert ep is not None and ep.value.startswith(("rsigym.envs.", "rsigym.agents.")), (registry.kind, name)
