"""TRACE on the controlled retail split, end to end: the issue's reproduction as tests."""

import numpy as np
import pytest
from scipy.stats import binomtest

from rsigym.report.stats import paired_bootstrap_ci

from rsigym.envs.tooluse import get_domain, get_tasks
from rsigym.graders.reruns import rerun_noise
from rsigym.graders.trace import behaviour_diff, pair_records, rerun_behaviour
from rsigym.graders.trace_effects import paired_effect, regrade_effect
from rsigym.graders.trace_verdict import attribute
from rsigym.records.jsonl import read_records
from rsigym.runner import RECORDS_FILE, run_scenario
from rsigym.scenario import parse_scenario

GRADERS = ["db_state", "outputs", "action_match", "action_match_mapped", "reward"]


def battery(tmp_path, agents, conditions, reps=1):
    scenario = parse_scenario({
        "name": "trace-test", "env": {"id": "rsigym/ToolUse-v0", "kwargs": {"domain": "retail"}},
        "tasks": {"split": "controlled"}, "conditions": conditions, "agents": agents,
        "seeds": [0], "reps": reps, "max_steps": 30, "graders": GRADERS})
    run_scenario(scenario, tmp_path, workers=0, progress=False, report=False)
    return read_records(tmp_path / RECORDS_FILE).records


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    agents = [{"kind": k} for k in ("role_binding", "name_bound", "description_reader")]
    return battery(tmp_path_factory.mktemp("trace"), agents, ["identity", "rename_tools", "misleading_names"], reps=2)


def rename_share() -> float:
    renamed = set(get_domain("retail").default_renames)
    tasks = get_tasks("retail", "controlled")
    return sum(any(a["tool"] in renamed for a in t.gold_actions) for t in tasks) / len(tasks)


def agent_pairs(records, agent, treatment):
    return [p for p in pair_records(records, "identity", treatment) if p.agent_id == agent]


def test_role_binding_under_rename_is_a_measurement_artifact(records, capsys):
    pairs = agent_pairs(records, "role_binding", "rename_tools")
    assert len(pairs) == 50  # 25 tasks x 2 reps
    share = rename_share()
    with capsys.disabled():
        print(f"\nshare of controlled tasks whose gold actions use a renamed tool: {share:.3f}")
    effect = paired_effect(pairs, "action_match")
    assert effect.delta == pytest.approx(-share, abs=1e-12)  # exactly the affected share
    assert paired_effect(pairs, "db_state").delta == 0.0
    diffs = [behaviour_diff(p) for p in pairs]
    assert not any(d.changed for d in diffs)
    regraded = regrade_effect(pairs, "action_match", "action_match_mapped")
    assert round(regraded.delta, 3) == 0.000 and regraded.original.delta == effect.delta
    assert (effect.n, effect.n_pairs) == (25, 50)  # the task is the unit
    result = attribute(pair_records(records, "identity", "rename_tools"), "action_match", agent="role_binding",
                       regrade_grader="action_match_mapped", noise=rerun_behaviour(records, "identity", "role_binding"))
    assert result.verdict.label == "measurement artifact"


def test_description_reader_under_rename_has_a_grader_part_and_an_unproven_behaviour_part(records):
    result = attribute(pair_records(records, "identity", "rename_tools"), "action_match",
                       agent="description_reader", regrade_grader="action_match_mapped",
                       noise=rerun_behaviour(records, "identity", "description_reader"))
    assert result.effect.delta == pytest.approx(-0.48)
    assert result.grader_part.estimate == pytest.approx(-0.32) and result.grader_part.established()
    # the behaviour part is 4 of 25 tasks, all down: the bootstrap CI excludes 0, but four signs
    # give the exact sign-flip test p = 2/16, so it is not established on 25 tasks
    part = result.behaviour_part
    assert part.estimate == pytest.approx(-0.16) and part.ci_high < 0 and part.p_value == pytest.approx(0.125)
    assert not part.established()
    # one rule for both parts: the grader part is established, the behaviour part is not, so the
    # label is the artifact, with the behaviour part's CI and the words that say what it means
    assert result.verdict.label == "measurement artifact"
    assert ("the behaviour part -0.160 [-0.320, -0.040] (95% CI) is not (sign-flip p=0.125, Holm level 0.05; its 4 "
            "non-zero tasks cannot reach it") in result.verdict.sentence
    assert "behaviour not shown to change" in result.verdict.sentence


def test_name_bound_under_rename_is_a_behaviour_change(records):
    pairs = agent_pairs(records, "name_bound", "rename_tools")
    db = paired_effect(pairs, "db_state")
    assert db.delta < -0.1
    diffs = [behaviour_diff(p) for p in pairs]
    assert sum(d.changed for d in diffs) == round(rename_share() * len(pairs))
    result = attribute(pair_records(records, "identity", "rename_tools"), "db_state", agent="name_bound",
                       noise=rerun_behaviour(records, "identity", "name_bound"))
    assert result.verdict.label == "behaviour change" and result.behaviour.noise == 0.0


def test_misleading_names_positive_control_is_detected(records):
    pairs = agent_pairs(records, "description_reader", "misleading_names")
    effect = paired_effect(pairs, "reward")
    assert effect.delta <= -0.2
    result = attribute(pair_records(records, "identity", "misleading_names"), "reward",
                       agent="description_reader", positive_control=True)
    assert result.verdict.label == "detected"


def test_identical_reruns_of_scripted_agents_never_flip(records):
    noise = rerun_noise(records, "reward")
    assert noise.configurations == 3 * 3 * 25 and noise.flip_rate == 0.0


@pytest.mark.slow
def test_seeded_error_rate_gives_the_implied_flip_rate(tmp_path):
    p = 0.3
    recs = battery(tmp_path / "noisy", [{"kind": "role_binding", "params": {"error_rate": p}}], ["identity"], reps=8)
    calm = battery(tmp_path / "calm", [{"kind": "role_binding"}], ["identity"], reps=3)
    assert rerun_noise(calm, "reward").flip_rate == 0.0
    noise = rerun_noise(recs, "reward")
    # episodes slip independently: the share of failed episodes estimates p (Wilson, 200 episodes)
    failed = sum(r.grades[-1].score == 0.0 for r in recs)
    low, high = binomtest(failed, len(recs)).proportion_ci(0.99, method="wilson")
    assert low <= p <= high, (failed, low, high)
    # two reruns disagree when exactly one of them slips: 2p(1 - p). Rerun pairs of one task share
    # reruns, so the interval is over tasks (the pooled Wilson interval is too narrow for this)
    implied = 2 * p * (1 - p)
    low, high = paired_bootstrap_ci([rate for rate, _, _ in noise.per_task.values()], confidence=0.99)
    assert low <= implied <= high, (noise.flip_rate, low, high)
    assert noise.task_flip_share > 0.5  # 1 - (1-p)^8 - p^8 = 0.94 of tasks flip


def test_error_rate_gives_paired_deltas_of_the_expected_variance(tmp_path):
    # both arms of a pair slip independently with p: a delta is +-1 with probability 2p(1 - p)
    p = 0.3
    recs = battery(tmp_path, [{"kind": "role_binding", "params": {"error_rate": p}}],
                   ["identity", "paraphrase_descriptions"], reps=4)
    pairs = pair_records(recs, "identity", "paraphrase_descriptions")
    deltas = [pair.treatment.grades[-1].score - pair.baseline.grades[-1].score for pair in pairs]
    assert len(deltas) == 100 and set(deltas) <= {-1.0, 0.0, 1.0}
    expected = 2 * p * (1 - p)  # 0.42; the old seeding (no condition in the key) gave 0
    discordant = sum(d != 0 for d in deltas)
    low, high = binomtest(discordant, len(deltas)).proportion_ci(0.99, method="wilson")
    assert low <= expected <= high, (discordant, low, high)
    variance = float(np.var(deltas, ddof=1))
    assert abs(variance - expected) < 0.15, variance  # ~3.5 SE of a sample variance of 100 such deltas
    # and the TRACE verdict sees noise, not an effect: within the margin or indistinguishable
    result = attribute(pairs, "reward", agent="role_binding", noise=rerun_behaviour(recs, "identity", "role_binding"))
    assert result.verdict.label in {"no effect", "indistinguishable from noise"}, result.verdict.sentence


def test_replication_split_is_fresh_and_replicates_the_artifact(tmp_path):
    controlled, fresh = get_tasks("retail", "controlled"), get_tasks("retail", "replication")
    assert len(fresh) == 48 and not {t.task_id for t in fresh} & {t.task_id for t in controlled}
    assert {t.template for t in fresh} <= {t.template for t in controlled}
    assert all(t.split == "test" for t in fresh)
    with pytest.raises(ValueError, match="replication"):
        get_tasks("retail", "nope")
    scenario = parse_scenario({
        "name": "replication-test", "env": {"id": "rsigym/ToolUse-v0", "kwargs": {"domain": "retail"}},
        "tasks": {"split": "replication"}, "conditions": ["identity", "rename_tools"],
        "agents": [{"kind": "role_binding"}], "seeds": [0], "reps": 1, "max_steps": 30, "graders": GRADERS})
    run_scenario(scenario, tmp_path, workers=0, progress=False, report=False)
    recs = read_records(tmp_path / RECORDS_FILE).records
    result = attribute(pair_records(recs, "identity", "rename_tools"), "action_match", agent="role_binding",
                       regrade_grader="action_match_mapped")
    assert result.effect.n == 48 and result.effect.delta < -0.1
    assert result.verdict.label == "measurement artifact", result.verdict.sentence
