"""The judges analysis on hand-built grades: names, agreement, Cohen's kappa, invariance."""

import math

import pytest
from sklearn.metrics import cohen_kappa_score

from rsigym.graders.judges import (judge_agreement, judge_grade_name, parse_judge_grade_name,
                                   presentation_invariance)
from rsigym.records import AgentSpec, EnvRef, Grade, Trajectory, episode_key
from rsigym.report import write_report
from rsigym.scenario import NamedSpec

LENIENT = judge_grade_name("llm_judge", "outcome", "rsigym/judge_lenient")
STRICT = judge_grade_name("llm_judge", "process", "rsigym/judge_strict")


def graded(task, rep, grades):
    env = EnvRef("rsigym/ToolUse-v0", {"domain": "retail"}, task, None)
    spec = AgentSpec("a", "role_binding")
    return Trajectory(episode_key(env, spec, 0, rep), env, spec, 0, rep,
                      grades=[Grade(name, "1", score) for name, score in grades.items()])


def test_grade_names_carry_the_judge_and_parse_back():
    assert LENIENT == "llm_judge/outcome/rsigym/judge_lenient"
    renamed = judge_grade_name("llm_judge", "outcome", "vertex_ai/claude@2024", "renamed")
    assert renamed == "llm_judge/outcome@renamed/vertex_ai/claude@2024"
    found = parse_judge_grade_name(renamed)
    assert (found.judge, found.presentation) == ("llm_judge/outcome/vertex_ai/claude@2024", "renamed")
    assert parse_judge_grade_name("llm_judge") is None and parse_judge_grade_name("reward") is None
    with pytest.raises(ValueError, match="rubric"):
        judge_grade_name("llm_judge", "out@come", "m")
    with pytest.raises(ValueError, match="non-empty"):
        judge_grade_name("llm_judge", "outcome", "")


def test_kappa_and_disagreement_by_hand():
    # a = 1100101100, b = 1000111100: agree 8/10; each says pass 5/10 -> chance 0.5; kappa 0.6
    a, b = "1100101100", "1000111100"
    records = [graded(f"t{i}", 0, {LENIENT: float(x), STRICT: float(y)}) for i, (x, y) in enumerate(zip(a, b))]
    (pair,) = judge_agreement(records)
    assert (pair.records, pair.tasks) == (10, 10)
    assert pair.agreement == pytest.approx(0.8) and pair.disagreement == pytest.approx(0.2)
    assert pair.kappa == pytest.approx(0.6)
    assert pair.kappa == pytest.approx(cohen_kappa_score(list(a), list(b)))
    assert pair.kappa_ci[0] < 0.6 < pair.kappa_ci[1] and pair.disagreement_ci[0] <= 0.2 <= pair.disagreement_ci[1]
    # records only one judge graded, and failed grades (None), are left out
    records.append(graded("t10", 0, {LENIENT: 1.0}))
    records.append(graded("t11", 0, {LENIENT: 1.0, STRICT: None}))
    assert judge_agreement(records)[0].records == 10


def test_two_judges_on_one_record_and_invariance_in_the_report(tmp_path):
    renamed = judge_grade_name("llm_judge", "outcome", "rsigym/judge_lenient", "renamed")
    records = [graded(f"t{i}", rep, {LENIENT: 1.0, STRICT: float(i % 2), renamed: 1.0 if i else 0.0})
               for i in range(6) for rep in range(2)]
    (inv,) = presentation_invariance(records)
    assert (inv.presentation, inv.records, inv.changed, inv.flipped, inv.invariant) == ("renamed", 12, 2, 2, False)
    (pair,) = judge_agreement(records)
    assert (pair.records, pair.tasks) == (12, 6) and pair.disagreement == pytest.approx(0.5)
    assert math.isnan(pair.kappa) is False and pair.kappa == pytest.approx(0.0)
    text = write_report(tmp_path, records, [NamedSpec("judges", {})]).read_text()
    assert "| `llm_judge/outcome/rsigym/judge_lenient` | `llm_judge/process/rsigym/judge_strict` | 12 | 6 |" in text
    assert "| `llm_judge/outcome/rsigym/judge_lenient` | renamed | 12 | 2 | 2 | **no** |" in text


def test_offline_judge_study_end_to_end(tmp_path):
    from rsigym.records.jsonl import read_records
    from rsigym.runner import RECORDS_FILE, run_scenario
    from rsigym.scenario import parse_scenario

    judges = [{"name": "llm_judge", "params": {"model": f"rsigym/judge_{kind}", "rubric": rubric, "presentation": p}}
              for kind, rubric in (("lenient", "outcome"), ("strict", "process")) for p in ("", "renamed")]
    scenario = parse_scenario({
        "name": "judges-test", "env": {"id": "rsigym/ToolUse-v0", "kwargs": {"domain": "retail"}},
        "tasks": {"split": "controlled", "limit": 6}, "conditions": ["identity", "rename_tools"],
        "agents": [{"kind": "role_binding"}, {"kind": "name_bound"}], "seeds": [0], "reps": 1,
        "max_steps": 30, "graders": ["reward", *judges], "analyses": ["judges"]})
    run_scenario(scenario, tmp_path, workers=0, progress=False)
    records = read_records(tmp_path / RECORDS_FILE).records
    assert len(records) == 24
    names = {g.grader for g in records[0].grades}
    assert {LENIENT, STRICT, "llm_judge/outcome@renamed/rsigym/judge_lenient"} <= names  # coexisting judges
    assert all(g.score is not None for r in records for g in r.grades), [g.error for r in records for g in r.grades]
    (pair,) = judge_agreement(records)
    assert pair.records == 24 and pair.tasks == 6 and not math.isnan(pair.kappa_ci[0])
    # the strict process judge wants a confirmation before each change; the scripted agents never ask
    assert pair.disagreement > 0.3
    assert all(inv.invariant for inv in presentation_invariance(records))
    text = (tmp_path / "report.md").read_text()
    assert "## Judges" in text and "Cohen's kappa" in text


def test_judge_input_has_results_user_turns_and_end_state_but_no_gold():
    from rsigym.envs.tooluse.graders import LLMJudge
    from rsigym.envs.tooluse.judging import judge_transcript
    from rsigym.runner import run_episode
    from rsigym.scenario import EpisodeSpec

    env = EnvRef("rsigym/ToolUse-v0", {"domain": "retail"}, "retail-000", None)
    record = run_episode(EpisodeSpec("0" * 32, env, AgentSpec("a", "role_binding"), 0, 0, 30, ()))
    text = judge_transcript(record)
    assert "- Customer: " in text and "result: " in text and "## End state" in text
    assert "Changes that went through: 1" in text and record.final.state["gold_db_sha256"] not in text
    renamed = judge_transcript(record, "renamed")
    assert "cancel_pending_order" in text and "cancel_pending_order" not in renamed
    with pytest.raises(ValueError, match="presentation"):
        LLMJudge(presentation="sideways")
    with pytest.raises(ValueError, match="rubric"):
        LLMJudge(rubric="vibes")
    assert LLMJudge(model="rsigym/judge_strict", rubric="process").name == STRICT


def test_offline_judges_and_the_analysis_are_entry_points():
    from rsigym.envs.tooluse import judging
    from rsigym.graders import judges
    from rsigym.registry import ANALYSES, OFFLINE_POLICIES

    for kind in ("judge_lenient", "judge_strict", "judge_noisy"):
        ep = OFFLINE_POLICIES.entry_point(kind)
        assert ep is not None and ep.value == f"rsigym.envs.tooluse.judging:{kind}_policy"
        assert OFFLINE_POLICIES[kind] is getattr(judging, f"{kind}_policy")
    ep = ANALYSES.entry_point("judges")
    assert ep is not None and ANALYSES["judges"] is judges.judges_analysis
