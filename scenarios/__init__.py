"""Scenario files shipped with rsigym, and the JSON Schema every scenario is checked against."""

from __future__ import annotations

from pathlib import Path

__all__ = ["SCENARIO_DIR", "SCHEMA_PATH", "bundled_scenarios"]

SCENARIO_DIR = Path(__file__).resolve().parent
SCHEMA_PATH = SCENARIO_DIR / "schema.json"


def bundled_scenarios() -> dict[str, Path]:
    """Scenario files that ship with the package, by file stem."""
    return {p.stem: p for p in sorted(SCENARIO_DIR.glob("*.yaml"))}
