"""benchmarks/coderepair_paper_table.py: the results file and table of a coderepair_paper run,
from constructed records whose numbers are known."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Grade, Trajectory

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import coderepair_paper_table  # noqa: E402

PROBLEMS = [f"he-{i:03d}" for i in range(40)]
KINDS = {"static_verifier": "static_verifier", "fixed": "fixed_world_model", "random": "coderepair_random"}


def _record(agent: str, seed: int, passed: dict[str, bool], *, graded: bool = True, infra: bool = False) -> Trajectory:
    params = {"warmup": 10} if agent == "fixed" else {}
    spec = AgentSpec(id=agent, kind=KINDS[agent], params=params)
    env = EnvRef("rsigym/CodeRepair-v0", task_id="humaneval")
    times = {"started_at": f"2025-01-01T00:0{seed}:00+00:00", "finished_at": f"2025-01-01T01:0{seed}:00+00:00"}
    if infra:
        return Trajectory(episode_key=f"{agent}-{seed}", env=env, agent=spec, seed=seed, rep=0, termination="infra_error",
                          **times)
    state = {"family": "code-repair", "online_test_calls": 2 * len(PROBLEMS), "wm_decisions": [],
             "problems": [{"problem_id": pid, "index": i, "hidden_pass": ok} for i, (pid, ok) in enumerate(passed.items())]}
    grades = [Grade("hidden_tests", "1", float(np.mean(list(passed.values()))), {"passed": passed})] if graded else []
    return Trajectory(episode_key=f"{agent}-{seed}", env=env, agent=spec, seed=seed, rep=0,
                      final=FinalSnapshot.of(state), grades=grades, **times)


def _records() -> list[Trajectory]:
    rng = np.random.default_rng(7)
    records = []
    for seed in range(4):
        static = {p: bool(rng.random() < 0.3) for p in PROBLEMS}
        fixed = {p: ok or (i % 10 == 0) for i, (p, ok) in enumerate(static.items())}  # gains on every 10th problem
        random = {p: False for p in PROBLEMS}
        records += [_record("static_verifier", seed, static), _record("fixed", seed, fixed),
                    _record("random", seed, random)]
    return records + [_record("fixed", 9, {}, infra=True), _record("random", 8, {p: True for p in PROBLEMS}, graded=False)]


def test_the_results_file_holds_each_agents_pass_and_paired_difference_on_cells_after_the_warmup(tmp_path):
    records = _records()
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records))
    out = tmp_path / "paper.json"
    assert coderepair_paper_table.main([str(run), "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    after = [p for p in PROBLEMS[10:]]  # the warm-up (10 problems) is excluded
    static_cells = [r.grades[0].details["passed"][p] for r in records[:12:3] for p in after]
    fixed_cells = [r.grades[0].details["passed"][p] for r in records[1:12:3] for p in after]
    assert res["seeds"] == 4 and res["problems"] == 40 and res["cells_excluded_as_warmup"] == 5 * 10  # seed 8 too (its ungraded record)
    assert res["agents"]["static_verifier"]["hidden_pass"] == round(float(np.mean(static_cells)), 6)
    vs = res["agents"]["fixed"]["vs_static_verifier"]
    assert vs["delta"] == round(float(np.mean(fixed_cells)) - float(np.mean(static_cells)), 6) > 0
    assert vs["cells"] == 4 * 30 and vs["ci"][0] <= vs["delta"] <= vs["ci"][1] and vs["mdd"] > 0
    assert res["agents"]["fixed"]["infra_errors"] == 1 and res["agents"]["random"]["missing_grades"] == 1
    assert res["agents"]["fixed"]["online_test_calls_per_problem"] == 2.0
    assert res["wall_s"] == 3600 + 9 * 60 and "seed stream x problem" in res["unit"]
    text = coderepair_paper_table.table(res)
    assert "26.3%" in text and "+2.83 pp [0.17, 5.50]" in text


def test_a_folder_without_records_is_one_line_not_a_traceback(tmp_path, capsys):
    assert coderepair_paper_table.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
