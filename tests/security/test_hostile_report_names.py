"""Hostile names in every family's report tables (issue 27, items 5 and 8).

Agent ids, condition names, task ids, pool names, judge names and an allocator's own text come from
records and scenario files, so an attacker (or a careless agent author) chooses them. Each family's
analysis runs on records whose names carry a ``|``, a line break followed by a heading, ``<script>``,
an ``<img onerror>``, a stray backtick and Markdown links and images; report.md must keep every
table's column count, gain no heading, and render (as GitHub would, raw HTML allowed) with no script,
no link and no image from a name.
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from rsigym.records import FinalSnapshot, Grade, Trajectory
from rsigym.report import condition_label, write_report
from rsigym.scenario import NamedSpec

ATTACK = ("|x\n# Forged heading <script>alert(1)</script> `tick <img src=x onerror=alert(2)> "
          "[link](http://attacker.example/) ![pixel](http://attacker.example/p.png)")


def evil(name: str) -> str:
    return f"{name}{ATTACK}"


def _rename(records: list[Trajectory], *, agents: bool = True, conditions: tuple[str, ...] = (),
            tasks: bool = False) -> list[Trajectory]:
    """The same records with hostile agent ids, the named conditions and (optionally) task ids."""
    for record in records:
        if agents:
            record.agent = replace(record.agent, id=evil(record.agent.id))
        condition = record.env.condition
        if condition is not None and condition.get("name") in conditions:
            record.env = replace(record.env, condition={**condition, "name": evil(condition["name"])})
        if tasks and record.env.task_id:
            record.env = replace(record.env, task_id=evil(record.env.task_id))
    return records


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line.replace("\\\\", "")))


def _tables(lines: list[str]) -> list[list[str]]:
    """Each table: its header, delimiter and body lines (a table ends at the first non-``|`` line)."""
    found, i = [], 0
    while i < len(lines) - 1:
        if lines[i].startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip()):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            found.append(lines[i:j])
            i = j
        else:
            i += 1
    return found


def assert_report_holds(text: str) -> None:
    from markdown_it import MarkdownIt

    lines = text.splitlines()
    assert "Forged heading" in text, "the hostile name never reached the report: the attack tested nothing"
    assert not [line for line in lines if line.lstrip(" >").startswith("# Forged")]  # a line break kept
    tables = _tables(lines)
    assert any("Forged heading" in row for table in tables for row in table), "no hostile name in any table"
    for table in tables:
        columns = _unescaped_pipes(table[0])
        assert _unescaped_pipes(table[1]) == columns, table[:2]
        for row in table[2:]:
            assert _unescaped_pipes(row) == columns, (table[0], row)
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    assert "<script" not in html and "onerror" not in html.replace("onerror=alert(2)&gt;", "")
    assert "<a href" not in html and 'src="http' not in html and '<img src="x"' not in html


def _check(tmp_path: Path, records: list[Trajectory], analyses: list[Any]) -> str:
    errors: list[str] = []
    text = write_report(tmp_path, records, analyses, errors=errors).read_text()
    assert errors == [] and "(failed)" not in text, errors
    assert_report_holds(text)
    return text


# -- one builder per family: real analysis inputs (the families' own test fixtures), hostile names -----

def _probe() -> tuple[list[Trajectory], list[Any]]:
    from tests.core.test_records import make_record

    records = [make_record(seed, rep, task="probe-100") for seed in range(3) for rep in range(2)]
    for record in records[::2]:
        record.final = FinalSnapshot.of({"guesses": [50, 25], "solved": True})
    records = _rename(records, conditions=("reverse_hints",), tasks=True)
    return records, ["summary", "probe_guesses", NamedSpec("reruns", {"grader": "probe_answer"})]


def _trace() -> tuple[list[Trajectory], list[Any]]:
    from tests.graders.test_trace import behaviour_battery, rename_battery, rerun_records

    records = rename_battery()
    for record in records:
        record.grades.append(Grade("reward", "1", 1.0))
    records += [r for r in behaviour_battery() if r.env.condition["name"] == "hide_cancel"]
    for record in records[-12:]:
        record.grades.append(Grade("action_match", "1", 0.0))
    records += rerun_records({"retail_000": [1.0, 1.0], "retail_001": [1.0, 0.0]})
    records = _rename(records, conditions=("rename_tools", "hide_cancel"), tasks=True)
    return records, [NamedSpec("trace", {"grader": "action_match", "regrade_grader": "action_match_mapped",
                                         "treatments": [evil("rename_tools")],
                                         "positive_controls": [evil("hide_cancel")]}),
                     NamedSpec("reruns", {"grader": "reward"})]


def _coderepair() -> tuple[list[Trajectory], list[Any]]:
    from rsigym.envs.coderepair.features import FEATURE_NAMES
    from tests.envs.test_coderepair import _graded

    base = {f"he-{i:03d}": True for i in range(12)}
    outcomes = {"static_verifier": base, "adaptive": {k: i % 5 != 0 for i, k in enumerate(base)},
                "random": {k: i % 3 == 0 for i, k in enumerate(base)}}
    rng = np.random.default_rng(0)
    cells = {(seed, pid): (rng.normal(size=(4, len(FEATURE_NAMES))), [1.0, 0.0, 1.0, 0.0])
             for seed in (0, 1) for pid in base}
    records = []
    for seed in (0, 1):
        for index, (agent, passed) in enumerate(outcomes.items()):
            record = _graded(agent, seed, passed)
            state = dict(record.final.state)
            state["problems"] = [{**row, "index": 20 + n, "drifted": n % 2 == 1,
                                  "rounds": [{"features": cells[(seed, row["problem_id"])][0].tolist(),
                                              "labels": cells[(seed, row["problem_id"])][1], "chosen": index}]}
                                 for n, row in enumerate(state["problems"])]
            state["wm_decisions"] = [{"event": evil("refit")}]
            record.final = FinalSnapshot.of(state)
            records.append(record)
    records = _rename(records)
    return records, [NamedSpec("coderepair_compare", {"baseline": evil("static_verifier"), "control": evil("random"),
                                                      "warmup": 0}),
                     NamedSpec("coderepair_regrade", {}),
                     NamedSpec("coderepair_headroom", {"baseline": evil("static_verifier"), "control": evil("random")})]


def _evolution() -> tuple[list[Trajectory], list[Any]]:
    from tests.envs.test_evolution_noise_and_history import _record

    def curve(points: list[tuple[int, float]]) -> list[dict[str, Any]]:
        return [{"full_evaluations": f, "full_equivalents": f, "exploration_cost": 0.0, "tokens": 0, "best_score": b}
                for f, b in points]

    counts = {"full": 2, "partial": 0, "rest": 0, "discard": 4, "failed": 0}
    exploration = {"evaluations": 0, "cost": 0.0, "missed_new_bests": 0}
    records = [_record("always_full", curve([(1, -5.0), (2, -4.0)]), counts, exploration),
               _record("evoalloc", curve([(1, -5.0), (2, -3.0)]), counts, exploration,
                       ["policy v1", "policy v1\n[policy] challenger " + evil("v2").replace("\n", " ")
                        + " proposed at candidate 3"])]
    for record in records:
        record.final = FinalSnapshot.of({**record.final.state, "task_id": evil("bin/../../packing")})
    records = _rename(records)
    return records, [NamedSpec("evolution", {"baseline": evil("always_full")})]


def _forecast() -> tuple[list[Trajectory], list[Any]]:
    from tests.envs.test_forecast_analysis import AGENTS, TASKS, _record

    records = [_record(agent, condition, seed, AGENTS[agent], task) for agent in ("zero", "oracle")
               for condition in ("in_env", "shuffled_gains", "no_experience") for seed in range(2) for task in TASKS[:3]]
    records = _rename(records, conditions=("in_env", "shuffled_gains"))
    return records, [NamedSpec("forecast", {"reference": evil("zero"), "min_pairs": 2})]


def _dataselect() -> tuple[list[Trajectory], list[Any]]:
    from tests.core.test_records import make_record

    records = []
    for seed in range(2):
        record = make_record(seed)
        metrics = {"gain": 0.01, "gain_ci": [-0.01, 0.03], "gain_verdict": "indistinguishable", "top_is_best": True,
                   "top_tie": False, "spearman": 0.5, "spearman_ceiling": 0.9, "group_scores": [0.2, 0.3, 0.4, 0.5, 0.6],
                   "order": [4, 3, 2, 1, 0], "random_draw_means": [0.3, 0.4], "floor_categories": [evil("cat")]}
        record.final = FinalSnapshot.of({"submission": [1, 2], "metrics": metrics, "pool": {"name": evil("pool")}})
        record.sandbox = {"opened": True, "provider": evil("docker")}
        records.append(record)
    return _rename(records), ["dataselect_groups"]


def _hpo() -> tuple[list[Trajectory], list[Any]]:
    from tests.envs.test_hpo_replay import _compare_record

    records = [_compare_record(agent, evil("adv0.4->adv1.0"), seed, test)
               for seed in range(3) for agent, test in (("random-search", 0.1), ("tpe", 0.09), ("llm", 0.08))]
    return _rename(records), [NamedSpec("hpo_compare", {"random_agent": evil("random-search"), "tpe_agent": evil("tpe")})]


def _workflow() -> tuple[list[Trajectory], list[Any]]:
    from tests.envs.test_workflow_mass import EVOLVED, _pairs, _record

    records = _pairs("scripted") + [_record("blind", None, "changepoint-000", {}, 0.0, 0)]
    records = _rename(records, conditions=(EVOLVED["name"],))
    evolved = condition_label({**EVOLVED, "name": evil(EVOLVED["name"])})
    return records, [NamedSpec("workflow_scores", {"baseline": "none", "control": evil("blind")}),
                     NamedSpec("workflow_pairwise", {"baseline": "none"}),
                     NamedSpec("workflow_sft", {"condition": evolved, "baseline": "none"})]


def _judges() -> tuple[list[Trajectory], list[Any]]:
    from tests.graders.test_judges import graded

    lenient = "llm_judge/outcome/" + evil("rsigym/judge_lenient")
    strict = "llm_judge/process/" + evil("rsigym/judge_strict")
    renamed = "llm_judge/outcome@" + evil("renamed").replace("/", "") + "/" + evil("rsigym/judge_lenient")
    records = [graded(f"t{i}", rep, {lenient: 1.0, strict: float(i % 2), renamed: float(i > 0)})
               for i in range(6) for rep in range(2)]
    return _rename(records, tasks=True), ["judges"]


FAMILIES: dict[str, Callable[[], tuple[list[Trajectory], list[Any]]]] = {
    "probe+summary+reruns": _probe, "trace+reruns": _trace, "coderepair": _coderepair, "evolution": _evolution,
    "forecast": _forecast, "dataselect": _dataselect, "hpo": _hpo, "workflow": _workflow, "judges": _judges}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_hostile_names_keep_every_report_table_and_render_no_html(tmp_path, monkeypatch, family):
    from rsigym.envs.coderepair import headroom

    # the headroom's in-sample oracles (torch, boosted trees) take a minute and print no name: one is enough
    monkeypatch.setattr(headroom, "headroom_rows", functools.partial(headroom.headroom_rows, oracles=("logistic",)))
    records, analyses = FAMILIES[family]()
    text = _check(tmp_path, records, analyses)
    for path in tmp_path.rglob("*"):  # a task id with "/" or ".." names no folder and no file outside
        assert path.parent == tmp_path and re.fullmatch(r"[A-Za-z0-9._-]+", path.name), path


def test_the_check_catches_a_name_written_raw(tmp_path):
    """The control: the same checks on a report with one name left unescaped fail."""
    from tests.core.test_records import make_record

    record = _rename([make_record(0)])[0]
    text = write_report(tmp_path, [record], ["summary"]).read_text()
    assert_report_holds(text)
    raw = text + f"\n| agent | n |\n|---|---:|\n| {record.agent.id} | 1 |\n"
    with pytest.raises(AssertionError):
        assert_report_holds(raw)
    one_line = text + f"\n| agent | n |\n|---|---:|\n| {' '.join(record.agent.id.splitlines())} | 1 |\n"
    with pytest.raises(AssertionError):
        assert_report_holds(one_line)
