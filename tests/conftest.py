"""Shared fixtures. Tests run against the installed package (``pip install -e .[test,ray]``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RSIGYM_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def write_scenario(path: Path, **overrides) -> Path:
    """A small Probe-v0 battery on the local sandbox; override any top-level key."""
    import yaml

    data = {
        "name": "probe-test",
        "env": {"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "local", "low": 0, "high": 100}},
        "tasks": {"split": "test", "limit": 3},
        "conditions": ["none", "reverse_hints"],
        "agents": [{"id": "bisect", "kind": "probe_bisect"}, {"id": "random", "kind": "random"}],
        "seeds": [0, 1],
        "max_steps": 20,
        "graders": ["probe_answer", "probe_efficiency"],
    }
    data.update(overrides)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def rsigym_cmd() -> list[str]:
    return [sys.executable, "-m", "rsigym.cli"]
