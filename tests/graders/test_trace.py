"""TRACE on hand-built ToolUse-like records: pairing, behaviour diff, effects, verdicts, report."""

import math
from dataclasses import dataclass, replace
from typing import ClassVar

import pytest

from rsigym.graders import regrade
from rsigym.graders.reruns import rerun_noise
from rsigym.graders.trace import BehaviourDiff, behaviour_diff, pair_records, rerun_behaviour
from rsigym.graders.trace_effects import paired_effect, regrade_effect
from rsigym.graders.trace_verdict import attribute
from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Grade, Step, Trajectory, episode_key
from rsigym.report import write_report
from rsigym.scenario import NamedSpec

MAPPING = {"get_order": "fetch_order", "cancel_order": "void_order"}
RENAME = {"name": "rename_tools", "params": {"mapping": MAPPING}}
GOLD = [{"tool": "get_order", "arguments": {"order_id": "#1"}},
        {"tool": "cancel_order", "arguments": {"order_id": "#1", "reason": "no longer needed"}}]


def make_record(task="retail_001", condition=None, *, actions=GOLD, db="db-gold", grades=None, seed=0,
                rep=0, agent="scripted", termination="agent_stop", mapping=None) -> Trajectory:
    """A ToolUse-like record; ``mapping`` renames the tools the agent calls and the env quotes."""
    env = EnvRef("rsigym/ToolUse-v0", {"domain": "retail"}, task, condition)
    spec = AgentSpec(agent, "scripted-tooluse")
    shown = [{**a, "tool": (mapping or {}).get(a["tool"], a["tool"])} for a in actions]
    steps = [Step(t, {"text": f"Tool {a['tool']} result: ok" if t else "Task. Tools: " +
                      ", ".join((mapping or {}).get(n, n) for n in ("get_order", "cancel_order"))},
                  a, 0.0, t == len(shown) - 1, False) for t, a in enumerate(shown)]
    # the snapshot carries the displayed tool calls, so only db_sha256 is comparable across renames
    final = FinalSnapshot.of({"db_sha256": db, "tool_calls": shown})
    return Trajectory(episode_key(env, spec, seed, rep), env, spec, seed, rep, steps, final, termination,
                      grades=[Grade(name, "1", score) for name, score in (grades or {}).items()])


def rename_battery(n=12):
    """Same behaviour under a rename; the name-bound grader drops, the mapped one does not."""
    records = []
    for i in range(n):
        task = f"retail_{i:03d}"
        records.append(make_record(task, None, grades={"action_match": 1.0, "action_match_mapped": 1.0}))
        records.append(make_record(task, RENAME, mapping=MAPPING,
                                   grades={"action_match": 0.0, "action_match_mapped": 1.0}))
    return records


def behaviour_battery(n=12):
    """Under ``hide_cancel`` the agent stops after looking the order up: other actions, other db."""
    records = []
    for i in range(n):
        task = f"retail_{i:03d}"
        records.append(make_record(task, {"name": "identity"}, grades={"reward": 1.0}))
        records.append(make_record(task, {"name": "hide_cancel", "params": {}}, actions=GOLD[:1],
                                   db="db-start", grades={"reward": 0.0}))
    return records


def test_pairing_joins_conditions_and_counts_what_it_leaves_out():
    records = rename_battery(3)
    records.append(make_record("retail_009", None, termination="infra_error"))
    records.append(make_record("retail_009", RENAME, mapping=MAPPING))  # its partner broke
    records.append(make_record("retail_010", RENAME, mapping=MAPPING, seed=1))  # no baseline
    pairs = pair_records(records, "identity", "rename_tools")
    assert len(pairs) == 3 and pairs.infra_excluded == 1 and pairs.unpaired == 2
    assert all(p.baseline.env.condition is None and p.treatment.env.condition == RENAME for p in pairs)
    assert [p.task_id for p in pairs] == ["retail_000", "retail_001", "retail_002"]
    # "none" and {"name": "identity"} are the same baseline; the full label also selects
    explicit = [make_record("t", {"name": "identity", "params": {}}), make_record("t", RENAME)]
    assert len(pair_records(explicit, "none", "rename_tools")) == 1
    label = "rename_tools(mapping={'get_order': 'fetch_order', 'cancel_order': 'void_order'})"
    assert len(pair_records(explicit, "identity", label)) == 1
    # different agents, seeds and reps never pair
    assert len(pair_records([make_record("t"), make_record("t", RENAME, agent="other")],
                            "identity", "rename_tools")) == 0


def test_ambiguous_condition_name_is_an_error():
    records = [make_record("t"), make_record("t", RENAME),
               make_record("t", {"name": "rename_tools", "params": {"mapping": {"get_order": "x"}}})]
    with pytest.raises(ValueError, match="full label"):
        pair_records(records, "identity", "rename_tools")


def test_behaviour_diff_maps_renamed_tools_back():
    pair = pair_records(rename_battery(1), "identity", "rename_tools")[0]
    diff = behaviour_diff(pair)
    assert diff == BehaviourDiff(False, False, False, False, "identical")
    # without the mapping the renamed calls look like other actions (and other observations)
    raw = behaviour_diff(pair, name_mapping={})
    assert raw.actions_changed and raw.observations_changed and raw.changed
    assert not raw.final_state_changed  # db_sha256 is compared, not the whole snapshot
    assert "actions differ from step 0" in raw.detail


def test_behaviour_diff_detects_other_actions_and_state():
    pair = pair_records(behaviour_battery(1), "identity", "hide_cancel")[0]
    diff = behaviour_diff(pair)
    assert diff.actions_changed and diff.final_state_changed and diff.changed
    assert "actions differ from step 1 (2 vs 1 steps)" in diff.detail and "db_sha256" in diff.detail


def test_behaviour_diff_swap_mapping_and_prefix_names():
    # a swap (a<->b) and a name that prefixes another must both map back exactly
    swap = {"get_order": "cancel_order", "cancel_order": "get_order"}
    base = make_record("t", None)
    treat = make_record("t", {"name": "rename_tools", "params": {"mapping": swap}}, mapping=swap)
    assert not behaviour_diff(pair_records([base, treat], "identity", "rename_tools")[0]).changed
    prefix = {"get_order": "lookup", "cancel_order": "lookup_cancel"}
    treat = make_record("t", {"name": "rename_tools", "params": {"mapping": prefix}}, mapping=prefix)
    diff = behaviour_diff(pair_records([base, treat], "identity", "rename_tools")[0])
    assert not diff.actions_changed and not diff.observations_changed
    suffix = {"get_order": "order"}  # "order" ends "cancel_order", which must stay as it is
    treat = make_record("t", {"name": "rename_tools", "params": {"mapping": suffix}}, mapping=suffix)
    diff = behaviour_diff(pair_records([base, treat], "identity", "rename_tools")[0])
    assert not diff.actions_changed and not diff.observations_changed


def test_mapping_falls_back_to_the_snapshot_tool_names():
    base = make_record("t", None)
    treat = make_record("t", {"name": "rename_tools", "params": {}}, mapping=MAPPING)
    treat.final = FinalSnapshot.of({"db_sha256": "db-gold", "tool_names": {
        "get_order": "fetch_order", "cancel_order": "void_order", "list_orders": "list_orders"}})
    assert not behaviour_diff(pair_records([base, treat], "identity", "rename_tools")[0]).changed


def test_rename_is_a_measurement_artifact():
    pairs = pair_records(rename_battery(), "identity", "rename_tools")
    effect = paired_effect(pairs, "action_match")
    assert (effect.n, effect.n_pairs, effect.unit) == (12, 12, "task")
    assert (effect.mean_baseline, effect.mean_treatment, effect.delta) == (1.0, 0.0, -1.0)
    assert (effect.ci_low, effect.ci_high) == (-1.0, -1.0)
    # 12 tasks pass -> fail, none the other way: p = 2 / 2^12, for McNemar and the sign-flip test
    assert (effect.b, effect.c) == (12, 0) and effect.mcnemar_p == pytest.approx(2 / 4096)
    assert effect.p_value == pytest.approx(2 / 4096) and effect.moved
    assert not effect.tost.equivalent
    assert [t.delta for t in effect.per_task] == [-1.0] * 12
    assert attribute(pairs, "action_match").verdict.label == "measurement artifact"

    regrade = regrade_effect(pairs, "action_match", "action_match_mapped")
    assert regrade.delta == 0.0 and regrade.original.delta == -1.0
    assert regrade.grader_part.estimate == -1.0 and regrade.grader_part.established()
    assert regrade.flips["baseline"]["pass->pass"] == 12 and regrade.flips["treatment"]["fail->pass"] == 12
    result = attribute(pairs, "action_match", regrade_grader="action_match_mapped")
    assert result.verdict.label == "measurement artifact"
    assert "delta -1.000 (95% CI -1.000 to -1.000, n=12 tasks (12 pairs)" in result.verdict.sentence
    assert "behaviour changed in 0% of pairs" in result.verdict.sentence
    assert "grader part -1.000 [-1.000, -1.000]" in result.verdict.sentence


def test_same_name_regrade_reads_live_then_regrade_grades():
    @dataclass(frozen=True)
    class MappedActions:  # a corrected ruler under the same grader name
        name: ClassVar[str] = "action_match"
        version: ClassVar[str] = "2"
        needs: ClassVar[frozenset[str]] = frozenset({"trajectory"})

        def grade(self, record):
            params = (record.env.condition or {}).get("params") or {}
            back = {v: k for k, v in params.get("mapping", {}).items()}
            calls = [{**s.action, "tool": back.get(s.action["tool"], s.action["tool"])} for s in record.steps]
            return Grade("action_match", "2", float(calls == GOLD))

    records = regrade(rename_battery(4), MappedActions())
    pairs = pair_records(records, "identity", "rename_tools")
    result = regrade_effect(pairs, "action_match", "action_match")
    assert result.original.delta == -1.0 and result.delta == 0.0


def test_behaviour_change():
    records = behaviour_battery()
    records[3].grades[0].score = 1.0  # one treatment pair still scores: delta -11/12
    pairs = pair_records(records, "identity", "hide_cancel")
    effect = paired_effect(pairs, "reward")
    assert effect.delta == pytest.approx(-11 / 12) and (effect.b, effect.c) == (11, 0)
    assert effect.ci_high < 0
    # no reruns and no regrade: the changes cannot be told from run-to-run variation (no zero floor)
    result = attribute(pairs, "reward")
    assert result.verdict.label == "inconclusive" and not result.behaviour.reference
    assert "behaviour changed in 100% of pairs (mean over 12 tasks); no reruns; no task has identical baseline reruns" in result.verdict.sentence
    # an identical rerun of every record in both arms: behaviour changes beyond rerun variation
    reruns = [replace(r, rep=1, episode_key=r.episode_key + "-1") for r in records]
    result = attribute(pair_records(records + reruns, "identity", "hide_cancel"), "reward")
    assert result.behaviour.referenced == 12 and result.behaviour.noise == 0.0
    assert result.verdict.label == "behaviour change"


def test_identical_behaviour_within_margin_is_no_effect():
    records = []
    for i in range(12):  # deltas +-0.02: mean 0, sd 0.0209 -> TOST p ~ 1e-9 at margin 0.10
        records.append(make_record(f"t{i}", None, grades={"reward": 0.8}))
        records.append(make_record(f"t{i}", {"name": "paraphrase_descriptions"},
                                   grades={"reward": 0.8 + (0.02 if i % 2 else -0.02)}))
    pairs = pair_records(records, "identity", "paraphrase_descriptions")
    effect = paired_effect(pairs, "reward")
    assert effect.delta == pytest.approx(0.0, abs=1e-12) and effect.tost.equivalent
    assert effect.tost.p_value < 1e-6
    assert attribute(pairs, "reward").verdict.label == "no effect"


def test_small_samples_get_no_confident_label():
    records = []
    for i, (x, y) in enumerate([(0.0, 1.0), (1.0, 0.0), (1.0, 1.0), (1.0, 0.0)]):
        records.append(make_record(f"t{i}", None, grades={"reward": x}))
        records.append(make_record(f"t{i}", {"name": "reorder_outputs"}, grades={"reward": y},
                                   actions=GOLD if x == y else GOLD[:1], db="db-gold" if x == y else "db-x"))
    pairs = pair_records(records, "identity", "reorder_outputs")
    effect = paired_effect(pairs, "reward")
    assert effect.delta == -0.25 and effect.ci_low < 0 < effect.ci_high and not effect.tost.equivalent
    assert (effect.b, effect.c) == (2, 1) and effect.mcnemar_p == 1.0  # 2 * P(X <= 1 | 3) = 1
    result = attribute(pairs, "reward")
    assert result.verdict.label == "insufficient data" and "fewer than 10 tasks" in result.verdict.sentence
    assert attribute(pairs, "reward", min_tasks=4).verdict.label == "indistinguishable from noise"
    # one pair that drops, three identical pairs: neither is evidence of anything
    one = pair_records(rename_battery(1), "identity", "rename_tools")
    assert attribute(one, "action_match", positive_control=True).verdict.label == "insufficient data"


def test_reruns_are_not_independent_pairs():
    # 12 tasks x 3 reruns; 3 tasks drop in every rerun: 9 discordant pairs (p = 0.004 if pooled)
    records = []
    for i in range(12):
        for rep in range(3):
            records.append(make_record(f"t{i:02d}", None, grades={"reward": 1.0}, rep=rep))
            records.append(make_record(f"t{i:02d}", RENAME, mapping=MAPPING, rep=rep, db="db-x" if i < 3 else "db-gold",
                                       actions=GOLD[:1] if i < 3 else GOLD, grades={"reward": 0.0 if i < 3 else 1.0}))
    pairs = pair_records(records, "identity", "rename_tools")
    effect = paired_effect(pairs, "reward")
    assert (effect.n, effect.n_pairs, effect.b, effect.c) == (12, 36, 3, 0)
    assert effect.p_value == pytest.approx(0.25) and effect.mcnemar_p == pytest.approx(0.25)
    assert not effect.moved
    assert attribute(pairs, "reward").verdict.label == "indistinguishable from noise"


def test_missing_grades_and_infra_errors_are_counted_and_withhold():
    records = []
    for i in range(50):  # 8 tasks really fail, and the grader errors on exactly those records
        records.append(make_record(f"t{i:02d}", None, grades={"reward": 1.0}))
        records.append(make_record(f"t{i:02d}", {"name": "hide_cancel", "params": {}}, db="db-x" if i < 8 else "db-gold",
                                   actions=GOLD[:1] if i < 8 else GOLD, grades={"reward": None if i < 8 else 1.0}))
    pairs = pair_records(records, "identity", "hide_cancel")
    result = attribute(pairs, "reward")
    assert result.effect.n == 42 and result.missing.ungraded_pairs == 8
    assert result.verdict.label == "withheld" and "8 ungraded pairs" in result.verdict.sentence
    assert "original grader worst case, unknown behaviour changed give delta -0.160" in result.verdict.sentence
    # the same drop graded: nothing missing, nothing withheld; without reruns or a regrade the 42
    # identical-behaviour pairs are the regrade (the grader scores them alike: grader part exactly 0)
    # and the 8 changed tasks are the behaviour part
    for record in records:
        if record.grades[0].score is None:
            record.grades[0].score = 0.0
    graded = attribute(pair_records(records, "identity", "hide_cancel"), "reward")
    assert graded.verdict.label == "behaviour change" and graded.grader_part.zero
    assert "the 42 tasks with identical-behaviour pairs are the regrade" in graded.verdict.sentence
    # infra errors on 20 of 50 treatment records of an otherwise equivalent battery
    for i, record in enumerate(records[1::2]):
        record.grades[0].score = 1.0
        record.steps, record.final = records[2 * i].steps, records[2 * i].final
        if i >= 30:
            record.termination = "infra_error"
    pairs = pair_records(records, "identity", "hide_cancel")
    result = attribute(pairs, "reward")
    assert (result.missing.infra_records, result.missing.unpaired_records) == (20, 20)
    assert result.verdict.label == "withheld" and "20 infra-error records" in result.verdict.sentence


def test_duplicated_episodes_are_counted_not_fatal():
    records = rename_battery(12)
    pairs = pair_records(records + records[:3], "identity", "rename_tools")
    assert len(pairs) == 12 and pairs.duplicates == 3
    assert attribute(pairs, "action_match").missing.duplicates == 3


def test_behaviour_change_needs_to_exceed_rerun_noise():
    # an agent that takes one of two paths at random in every run, same outcome
    records = []
    for i in range(30):
        for rep in range(2):
            records.append(make_record(f"t{i:02d}", None, grades={"reward": 1.0}, rep=rep,
                                       actions=GOLD if (i + rep) % 2 else GOLD[::-1]))
            records.append(make_record(f"t{i:02d}", RENAME, mapping=MAPPING, rep=rep,
                                       actions=GOLD if (i + rep + 1) % 2 else GOLD[::-1],
                                       grades={"reward": 0.0 if i < 20 else 1.0}))
    noise = rerun_behaviour(records, "identity", "scripted")
    assert noise == {f"t{i:02d}": (1, 1) for i in range(30)}
    pairs = pair_records(records, "identity", "rename_tools")
    result = attribute(pairs, "reward", noise=noise)
    assert result.effect.moved and result.behaviour.rate == 1.0 and result.behaviour.noise == 1.0
    assert not result.behaviour.excess.established(+1)
    assert result.verdict.label == "inconclusive"
    # the same from the pairs' own reruns (both arms); without any reference: no conclusion either
    assert attribute(pairs, "reward").verdict.label == "inconclusive"
    none = attribute(pairs, "reward", noise={}, treatment_noise={})
    assert none.verdict.label == "inconclusive" and "no task has identical baseline reruns" in none.verdict.sentence


def test_mixed_splits_the_drop_with_two_cis():
    records = []
    for i in range(25):  # 8 tasks fail only under the name-bound ruler, 8 more really fail
        fake, real = i < 8, 8 <= i < 16
        records.append(make_record(f"t{i:02d}", None, grades={"action_match": 1.0, "action_match_mapped": 1.0}))
        records.append(make_record(f"t{i:02d}", RENAME, mapping=MAPPING, actions=GOLD[:1] if real else GOLD,
                                   db="db-x" if real else "db-gold",
                                   grades={"action_match": 0.0 if fake or real else 1.0,
                                           "action_match_mapped": 0.0 if real else 1.0}))
    pairs = pair_records(records, "identity", "rename_tools")
    result = attribute(pairs, "action_match", regrade_grader="action_match_mapped")
    assert result.verdict.label == "mixed"
    assert result.effect.delta == pytest.approx(-0.64)
    assert result.grader_part.estimate == pytest.approx(-0.32) and result.grader_part.ci_high < 0
    assert result.behaviour_part.estimate == pytest.approx(-0.32) and result.behaviour_part.ci_high < 0
    assert "grader part -0.320 [" in result.verdict.sentence and "behaviour part (regrade" in result.verdict.sentence


def test_positive_control_rule():
    pairs = pair_records(behaviour_battery(), "identity", "hide_cancel")
    assert attribute(pairs, "reward", positive_control=True).verdict.label == "detected"  # CI (-1, -1)
    records = behaviour_battery()
    for record in records[1:6:2] + records[7::2]:
        record.grades[0].score = 1.0  # 3 of 12 tasks drop: not established
    pairs = pair_records(records, "identity", "hide_cancel")
    assert attribute(pairs, "reward", positive_control=True).verdict.label == "not detected"


def test_regrade_that_still_sees_the_delta_means_behaviour():
    pairs = pair_records(behaviour_battery(), "identity", "hide_cancel")
    for pair in pairs:
        pair.baseline.grades.append(Grade("reward_v2", "1", 1.0))
        pair.treatment.grades.append(Grade("reward_v2", "1", 0.0))
    result = attribute(pairs, "reward", regrade_grader="reward_v2")
    assert result.grader_part.estimate == 0.0 and not result.grader_part.established()
    assert result.verdict.label == "behaviour change"
    # a regrade grader no record carries is ignored
    assert "no regrade grades found" in attribute(pairs, "reward", regrade_grader="nope").verdict.sentence


def rerun_records(table, condition=None, agent="scripted"):
    return [make_record(task, condition, grades={"reward": score}, rep=rep, agent=agent)
            for task, scores in table.items() for rep, score in enumerate(scores)]


def test_rerun_noise_identical_and_constructed():
    same = rerun_noise(rerun_records({"a": [1.0, 1.0, 1.0], "b": [0.0, 0.0], "c": [1.0, 1.0]}), "reward")
    assert same.configurations == 3 and same.flip_rate == 0.0 and same.flip_ci_low == 0.0
    assert same.flip_ci_high > 0 and same.icc == 1.0 and same.sd_single_run_difference == 0.0
    assert same.mdd == 0.0
    # the table of test_stats: 6 of 10 rerun pairs flip, ICC -9/56, sd sqrt(2 * 5/18),
    # MDD = 2.801585 * sqrt(5/9) / sqrt(3) = 1.205609
    noisy = rerun_noise(rerun_records({"a": [1.0, 1.0, 0.0], "b": [1.0, 1.0], "c": [0.0, 1.0, 1.0, 0.0]}),
                        "reward")
    assert noisy.flip_rate == pytest.approx(0.6) and noisy.icc == pytest.approx(-9 / 56)
    assert noisy.sd_single_run_difference == pytest.approx(math.sqrt(5 / 9))
    assert noisy.mdd == pytest.approx(1.205609, abs=1e-5)
    assert noisy.per_task["a"][0] == pytest.approx(2 / 3) and noisy.per_task["b"][0] == 0.0
    # per task: a and c flip, b does not; pass^k over the tasks with >= k reruns
    assert noisy.task_flip_share == pytest.approx(2 / 3)
    assert noisy.pass_hat_k[1] == pytest.approx((2 / 3 + 1 + 0.5) / 3)
    assert noisy.pass_hat_k[2] == pytest.approx(0.5) and set(noisy.pass_hat_k) == {1, 2, 3, 4}
    # a condition filter and infra errors leave records out
    mixed = rerun_records({"a": [1.0, 0.0]}) + rerun_records({"a": [1.0, 1.0]}, RENAME)
    assert rerun_noise(mixed, "reward", condition="none").flip_rate == 1.0
    assert rerun_noise(mixed, "reward", condition="rename_tools").flip_rate == 0.0
    assert rerun_noise(mixed, "reward").configurations == 2
    mixed[1].termination = "infra_error"
    assert rerun_noise(mixed, "reward", condition="none").configurations == 0


def test_registered_analyses_write_markdown_and_plots(tmp_path):
    # baseline (condition None) shared by two treatments: a rename and a positive control
    records = rename_battery()
    for record in records:
        record.grades.append(Grade("reward", "1", 1.0))  # the rename leaves the task outcome alone
    for record in behaviour_battery():
        if record.env.condition["name"] == "hide_cancel":
            record.grades.append(Grade("action_match", "1", 0.0))
            records.append(record)
    records += rerun_records({"retail_000": [1.0, 1.0], "retail_001": [1.0, 0.0]}, agent="llm")
    path = write_report(tmp_path, records, [
        NamedSpec("trace", {"grader": "action_match", "regrade_grader": "action_match_mapped",
                            "treatments": ["rename_tools"], "positive_controls": ["hide_cancel"]}),
        NamedSpec("trace", {"grader": "reward"}),
        NamedSpec("reruns", {"grader": "reward"})])
    text = path.read_text()
    assert ("| scripted | rename_tools | 12 (12) | 1.000 | 0.000 | -1.000 | [-1.000, -1.000] | 0.000488 |"
            in text)
    assert ("| 12/12 tasks (12 down, 0 up) | -1.000 [-1.000, -1.000] | +0.000 [+0.000, +0.000] | 0/0/0 "
            "| **measurement artifact**: behaviour is identical in every pair and every rerun of both arms") in text
    # each row names the rule that decided it; the two trace sections have titles of their own
    assert "| **indistinguishable from noise**: every task has the same delta, and 12 equal tasks" in text
    assert "| **detected**: positive control: the CI lies beyond the margin" in text
    titles = [line for line in text.splitlines() if line.startswith("## ")]
    assert len(titles) == len(set(titles)), titles
    assert any(t.startswith("## TRACE (grader=action_match, positive_controls=hide_cancel, regrade_grader="
                            "action_match_mapped, treatments=rename_tools)") for t in titles), titles
    assert "## TRACE (grader=reward, positive_controls=(default), regrade_grader=(default), " \
        "treatments=(default))" in titles
    assert "| llm | rename_tools" not in text  # it never ran the treatment: no row, counted unpaired
    assert "- rename_tools: 12 pairs, 0 infra-error records left out, 4 records without a partner" in text
    assert "hide_cancel (positive control)" in text and "**detected**" in text
    assert "Regrade flips" in text and "| scripted | rename_tools | treatment | 0 | 0 | 12 | 0 |" in text
    # default treatments: every condition but the baseline; reward is the same under the rename,
    # in 12 tasks, which is not enough to bound a possible effect within 0.10 without assumptions
    assert "**scripted / rename_tools: indistinguishable from noise.**" in text
    assert "**scripted / hide_cancel: inconclusive.**" in text  # no reruns, no regrade: no zero floor
    # reruns, per agent and condition: 1 of 2 rerun pairs flips, 1 of 2 tasks; pass^1 3/4, pass^2 1/2
    assert "| llm | none | 2 | 0.500 |" in text and "| 0.500 | [" in text
    assert "| scripted | rename_tools" not in text.split("## Rerun noise")[1]  # no reruns there
    # the default trace section gets the plain plot name, the other one a suffix: no overwrite
    plots = sorted(p.name for p in tmp_path.glob("trace_*.png"))
    assert len(plots) == 3 and "trace_effects.png" in plots and "trace_flip_rates.png" in plots
    assert all((tmp_path / p).stat().st_size > 0 and f"![{p}]({p})" in text for p in plots)


def test_a_certain_artifact_in_both_directions_is_an_artifact_whatever_the_mean():
    # the agent does exactly the same everywhere (2 reruns); the grader fails 4 passing tasks and
    # passes 4 failing ones under the treatment: net delta 0, yet every flip is the grader's
    records = []
    for i in range(20):
        base = 1.0 if i < 10 else 0.0
        treat = 1.0 - base if i < 4 or 10 <= i < 14 else base
        for rep in range(2):
            records.append(make_record(f"t{i:02d}", None, grades={"judge": base}, rep=rep))
            records.append(make_record(f"t{i:02d}", {"name": "paraphrase_descriptions"}, grades={"judge": treat}, rep=rep))
    result = attribute(pair_records(records, "identity", "paraphrase_descriptions"), "judge")
    assert result.effect.delta == 0.0 and result.verdict.label == "measurement artifact"
    assert (result.flips.flipped, result.flips.down, result.flips.up, result.flips.tasks) == (8, 4, 4, 20)
    assert "in 8 of 20 tasks (4 down, 4 up; share 0.40" in result.verdict.sentence
    assert "whatever the mean delta" in result.verdict.sentence
    # a grader that scores identical reruns differently is noisy by itself: no certain artifact
    records[2].grades[0].score = 0.0  # t00 baseline rep 1 (identical behaviour, other score)
    noisy = attribute(pair_records(records, "identity", "paraphrase_descriptions"), "judge")
    assert noisy.verdict.label != "measurement artifact" and "scores identical reruns differently" in noisy.verdict.sentence


def test_behaviour_rate_floor_is_the_baseline_arms_reruns_and_leaves_out_tasks_without_them():
    from rsigym.graders.trace_behaviour import Unit, behaviour_rate

    units = [Unit("a", 1, 1, changed=True), Unit("a", 1, 1, changed=False), Unit("b", 1, 1, changed=True),
             Unit("c", 1, 1, changed=False)]
    # a: paired 1/2, baseline reruns 0/1 -> floor 0, excess 1/2 (the treatment's 1/1 is not pooled in);
    # b: paired 1, baseline reruns 0/3 -> excess 1; c: no baseline reruns -> left out (no zero floor)
    rate = behaviour_rate(units, {"a": (0, 1), "b": (0, 3)}, {"a": (1, 1)})
    assert (rate.tasks, rate.referenced, rate.reference) == (3, 2, True)
    assert rate.rate == pytest.approx((0.5 + 1 + 0) / 3) and rate.noise == pytest.approx(0.0)
    assert rate.excess.estimate == pytest.approx(0.75) and rate.excess.n == 2
    assert rate.rerun_pairs == (0, 4, 1, 1) and not rate.shared_seed
    assert "(2 tasks with baseline reruns, 1 without left out)" in rate.text()
    assert "reruns differ in 0 of 4 baseline and 1 of 1 treatment rerun pairs" in rate.text()
    assert not behaviour_rate(units, {}, {"a": (1, 1)}).reference  # the treatment's reruns are no floor


def test_reruns_that_never_differ_while_pairs_differ_both_ways_are_flagged():
    from rsigym.graders.trace_behaviour import Unit, behaviour_rate

    # every rerun identical, yet changed pairs score higher in one task and lower in another: a
    # noisy agent whose reruns repeat one draw; a deterministic agent's change in one direction is not flagged
    both = [Unit("a", 1, 0, changed=True), Unit("b", 0, 1, changed=True), Unit("c", 1, 1)]
    flagged = behaviour_rate(both, {"a": (0, 3), "b": (0, 3), "c": (0, 3)}, {"a": (0, 3)})
    assert flagged.shared_seed and "reruns may share a seed: noise floor not measured" in flagged.text()
    one_way = [Unit("a", 1, 0, changed=True), Unit("b", 1, 0, changed=True), Unit("c", 1, 1)]
    assert not behaviour_rate(one_way, {"a": (0, 3), "b": (0, 3)}, {}).shared_seed
    assert not behaviour_rate(both, {"a": (1, 3), "b": (0, 3)}, {}).shared_seed  # reruns that differ: measured
    assert not behaviour_rate(both, {}, {}).shared_seed  # no reruns: nothing to flag


def test_missing_regrade_grades_that_hide_the_behaviour_part_withhold():
    records = []
    for i in range(30):  # 10 tasks use a renamed tool (name-bound ruler fails them), 8 really fail
        fake, real = i < 10, 10 <= i < 18
        records.append(make_record(f"t{i:02d}", None, grades={"action_match": 1.0, "action_match_mapped": 1.0}))
        records.append(make_record(f"t{i:02d}", RENAME, mapping=MAPPING, actions=GOLD[:1] if real else GOLD,
                                   db="db-x" if real else "db-gold",
                                   grades={"action_match": 0.0 if fake or real else 1.0,
                                           "action_match_mapped": None if real else 1.0}))
    pairs = pair_records(records, "identity", "rename_tools")
    result = attribute(pairs, "action_match", regrade_grader="action_match_mapped")
    assert result.missing.ungraded_regrade == 8 and result.missing.ungraded_pairs == 0
    assert result.verdict.label == "withheld" and "regrade worst" in result.verdict.sentence
    assert "8 pairs without a regrade grade" in result.verdict.sentence


def test_equivalent_sentence_says_what_holds():
    records = []
    for i in range(40):  # every pair identical in behaviour and score: the distribution-free TOST bounds it
        records.append(make_record(f"t{i:02d}", None, grades={"reward": 1.0}))
        records.append(make_record(f"t{i:02d}", {"name": "paraphrase_descriptions"}, grades={"reward": 1.0}))
    result = attribute(pair_records(records, "identity", "paraphrase_descriptions"), "reward")
    assert result.verdict.label == "no effect"
    assert "the score is equivalent within +-0.10 (90% CI" in result.verdict.sentence


def test_identical_pairs_are_the_regrade_when_there_is_none():
    # 20 tasks x 2 reruns, no regrade grader: tasks 0-7 are scored 0 under the treatment although
    # the agent does exactly the same (the ruler's change), tasks 16-19 take another path at the
    # same score; the 16 tasks with identical pairs show the ruler's part
    records = []
    for i in range(20):
        for rep in range(2):
            records.append(make_record(f"t{i:02d}", None, grades={"judge": 1.0}, rep=rep))
            records.append(make_record(f"t{i:02d}", {"name": "paraphrase_descriptions"}, rep=rep,
                                       actions=GOLD[::-1] if i >= 16 else GOLD, grades={"judge": 0.0 if i < 8 else 1.0}))
    result = attribute(pair_records(records, "identity", "paraphrase_descriptions"), "judge")
    assert result.verdict.label == "measurement artifact"
    assert result.grader_part.estimate == pytest.approx(-0.5) and result.grader_part.n == 16
    assert "no regrade: the 16 tasks with identical-behaviour pairs are the regrade" in result.verdict.sentence
    # the identical pairs hold concordant outcomes only, so their behaviour part is not evidence here
    assert "is not used: the ruler moved on the identical pairs" in result.verdict.sentence
    assert "behaviour not shown to change" in result.verdict.sentence
    # with fewer than 10 tasks holding an identical pair there is no implicit regrade
    few = [r for r in records if int(str(r.env.task_id)[1:]) < 4 or int(str(r.env.task_id)[1:]) >= 10]
    for r in few:
        if r.env.condition and int(str(r.env.task_id)[1:]) >= 10:
            r.steps = list(reversed(r.steps))
            r.final = FinalSnapshot.of({"db_sha256": "db-other", "tool_calls": []})
    sparse = attribute(pair_records(few, "identity", "paraphrase_descriptions"), "judge")
    assert sparse.regrade is None
    assert "only 4 tasks have identical-behaviour pairs (fewer than 10): no implicit regrade" in sparse.verdict.sentence
