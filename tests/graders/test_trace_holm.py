"""The parts that can attribute one TRACE verdict are judged as one family (Holm), so a verdict
with two routes to "behaviour change" does not err twice as often as one test."""

import sys
from pathlib import Path

import pytest

from rsigym.graders.trace import pair_records, rerun_behaviour
from rsigym.graders.trace_effects import holm, task_part
from rsigym.graders.trace_verdict import attribute

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from trace_families import HIDE, record  # noqa: E402

SIX = [-1.0] * 6 + [0.0] * 42  # sign-flip p = 2 / 2^6 = 0.031: established alone, not at alpha / 2
SEVEN = [-1.0] * 7 + [0.0] * 41  # p = 2 / 2^7 = 0.016: established at alpha / 2


def test_one_part_alone_keeps_the_plain_level():
    part = task_part("behaviour part", SIX)
    assert part.p_value == pytest.approx(0.03125) and part.established()
    assert holm({"behaviour part": part})["behaviour part"].established()


def test_two_parts_near_the_level_are_not_both_counted_as_5_percent():
    judged = holm({"a": task_part("a", SIX), "b": task_part("b", SIX)})
    assert not judged["a"].established() and not judged["b"].established()
    assert {round(1 - p.confidence, 4) for p in judged.values()} == {0.025}


def test_step_down_rejects_the_second_at_the_plain_level_after_the_first():
    judged = holm({"strong": task_part("strong", SEVEN), "weak": task_part("weak", SIX)})
    assert judged["strong"].established() and judged["weak"].established()
    assert 1 - judged["strong"].confidence == pytest.approx(0.025)
    assert 1 - judged["weak"].confidence == pytest.approx(0.05)
    # the CI is recomputed at the part's level: wider than the 95% one
    assert judged["strong"].ci_low <= task_part("strong", SEVEN).ci_low


def test_a_part_that_cannot_reject_is_not_counted():
    zero = task_part("grader part", [0.0] * 48)
    few = task_part("few", [-1.0] * 4 + [0.0] * 44)  # 4 signs: p >= 2/16 whatever they are
    assert not zero.can_reject(0.05) and not few.can_reject(0.05)
    judged = holm({"grader part": zero, "few": few, "behaviour part": task_part("behaviour part", SIX)})
    assert judged["behaviour part"].established() and judged["grader part"] == zero


def test_holm_is_order_free():
    parts = {"a": task_part("a", SEVEN), "b": task_part("b", SIX), "c": task_part("c", SIX[::-1])}
    assert holm(parts) == holm(dict(reversed(parts.items())))


def _fixed_ruler(drops: int):
    """48 tasks x 3 identical reruns of a deterministic agent; under the treatment ``drops`` tasks
    take another path and fail under both the grader and the fixed ruler (grader part exactly 0)."""
    records = []
    for i in range(48):
        for rep in range(3):
            fail = i < drops
            records.append(record(f"t{i:03d}", None, {"reward": 1.0, "reward_v2": 1.0}, rep=rep))
            records.append(record(f"t{i:03d}", HIDE, {"reward": 0.0 if fail else 1.0, "reward_v2": 0.0 if fail else 1.0},
                                  rep=rep, path=1 if fail else 0, db="db-x0" if fail else "db-gold"))
    pairs = pair_records(records, "identity", HIDE["name"])
    return attribute(pairs, "reward", agent="agent", regrade_grader="reward_v2",
                     noise=rerun_behaviour(records, "identity", "agent"),
                     treatment_noise=rerun_behaviour(records, HIDE["name"], "agent"))


def test_verdict_judges_the_behaviour_part_and_the_excess_as_one_family():
    # two routes to "behaviour change" (the fixed ruler, the behaviour-level excess), each at p = 0.031:
    # established by either alone at 5%, not at Holm's 2.5% for the smaller p
    six = _fixed_ruler(6)
    assert six.behaviour_part is not None and six.behaviour_part.p_value == pytest.approx(0.03125)
    assert six.verdict.label == "inconclusive"
    assert ("not established (sign-flip p=0.0312, Holm level 0.025; its 6 non-zero tasks cannot reach it)"
            in six.verdict.sentence)
    seven = _fixed_ruler(7)
    assert seven.verdict.label == "behaviour change"
    assert "Holm level" in seven.verdict.sentence
