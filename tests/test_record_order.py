"""Shuffling the order of ``records.jsonl`` changes no number in any report of a bundled quick scenario.

Each bundled quick scenario runs in a tiny version (one or two tasks, two seeds where one would
leave every cell a single episode, smaller budgets); its report is then written from the same
records in file order, reversed and shuffled, and the three texts must be equal. Two seeds matter:
a cell of one episode has no resampling to disturb, so the test could not fail.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rsigym.cli.run_command import apply_set
from rsigym.records.jsonl import read_records
from rsigym.report import write_report
from rsigym.runner import run_scenario
from rsigym.scenario import load_scenario, parse_scenario

from .conftest import REPO

# scenario -> (--set overrides, tasks kept, needs Docker)
TINY: dict[str, tuple[list[str], int, bool]] = {
    "forecast_quick": (["seeds=[0, 1, 2, 3]", "env.kwargs.rounds=3", "agents=[{id: zero, kind: forecast_zero}, {id: random, kind: forecast_random},"
                        " {id: knn, kind: forecast_knn}, {id: oracle, kind: forecast_oracle}]"], 2, False),
    "probe_smoke": (["seeds=[0, 1]", "env.kwargs.sandbox=local", "tasks={split: test, limit: 3}"], 3, False),
    "trace_quickstart": (["reps=2"], 3, False),
    "hpo_quick": (["seeds=[0, 1]", "env.kwargs.budget=3", "analyses[2].params.max_points=1"], 1, False),
    "evolution_quick": (["seeds=[0, 1]", "env.kwargs.budget=3", "env.kwargs.sandbox=local",
                         "agents=[{id: always_full, kind: always_full}, {id: cascade, kind: cascade, params: {margin: 0.05}}]"],
                        1, False),
    "workflow_quick": (["env.kwargs.sandbox=local", "seeds=[0, 1]"], 1, False),
    "coderepair_quick": (["seeds=[0, 1]", "env.kwargs.problems=4", "env.kwargs.rounds=2", "env.kwargs.sandbox=local",
                          "agents=[{id: static_verifier, kind: static_verifier}, {id: random, kind: coderepair_random},"
                          " {id: adaptive, kind: adaptive_world_model, params: {warmup: 2, check_every: 1, min_samples: 2,"
                          " min_fit_rows: 2}}]"], 1, False),
    "dataselect_quick": (["env.kwargs.pool_size=400", "env.kwargs.group_size=40", "env.kwargs.eval_per_category=10",
                          "env.kwargs.student_seeds=1", "env.kwargs.n_random=3"], 1, True),
}


def test_every_bundled_quick_scenario_is_shuffled():
    bundled = {p.stem for p in (REPO / "scenarios").glob("*.yaml") if "quick" in p.stem or p.stem == "probe_smoke"}
    assert bundled == set(TINY)


def _reports(run_dir: Path, scenario_raw: dict) -> list[str]:
    records = read_records(run_dir / "records.jsonl").records
    assert len(records) >= 2
    orders = [list(records), list(reversed(records)), random.Random(29).sample(records, len(records))]
    texts = []
    for i, order in enumerate(orders):
        out = run_dir / f"order{i}"
        out.mkdir()
        texts.append(write_report(out, order, load_analyses(scenario_raw)).read_text())
    return texts


def load_analyses(raw: dict) -> list:
    from rsigym.scenario import NamedSpec

    return [NamedSpec.parse(a) for a in raw.get("analyses") or ["summary"]]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TINY))
def test_shuffled_records_give_the_same_report(tmp_path, request, name):
    overrides, tasks, docker = TINY[name]
    if docker:
        request.getfixturevalue("sandbox_image")
    scenario = load_scenario(name)
    scenario = parse_scenario(apply_set(scenario.raw, overrides), scenario.source)
    summary = run_scenario(scenario, tmp_path, workers=0, progress=False, report=False, limit=tasks)
    assert summary.infra_errors == 0
    first, reversed_, shuffled = _reports(tmp_path, scenario.raw)
    assert "(failed)" not in first
    assert reversed_ == first
    assert shuffled == first
