"""Evaluators of ProgramEvolution-v0: the circle-packing check by hand, bin packing end to end."""

import math

import numpy as np
import pytest

from rsigym.envs.evolution import check_packing, make_task, task_names
from rsigym.envs.evolution.bin_packing import generate_instances, verify_assignment
from rsigym.envs.evolution.circle_packing import TOLERANCE, valid_reference_packing
from rsigym.envs.evolution.evaluator import SandboxEvaluator
from rsigym.sandbox import LocalSandbox


def test_a_known_valid_packing_is_accepted_with_its_exact_sum():
    centres, radii = valid_reference_packing()
    score, reason = check_packing(centres, radii)
    assert reason == "" and score == pytest.approx(2.4 + 0.1 * math.sqrt(2), abs=1e-15)
    # circles that touch exactly, or overlap by less than the tolerance, still pass
    assert check_packing([[0.25, 0.5], [0.75, 0.5]], [0.25, 0.25], n=2)[0] == 0.5
    assert check_packing([[0.25, 0.5], [0.75, 0.5]], [0.25, 0.25 + TOLERANCE / 2], n=2)[0] is not None


@pytest.mark.parametrize("mutate, message", [
    (lambda c, r: (c, r[:-1] + [float("nan")]), "non-finite"),
    (lambda c, r: ([[float("inf"), 0.5]] + c[1:], r), "non-finite"),
    (lambda c, r: (c[:-1], r[:-1]), "expected 26 circles, got 25"),
    (lambda c, r: (c + [[0.5, 0.5]], r + [0.0]), "expected 26 circles, got 27"),
    (lambda c, r: (c, [0.1 + 1e-6] + r[1:]), "leaves the unit square"),           # circle 0 pokes out
    (lambda c, r: ([[0.95, 0.5]] + c[1:], r), "leaves the unit square"),
    (lambda c, r: (c[:-1] + [[0.2, 0.2]], r[:-1] + [0.0415]), "overlap"),       # the gap circle, too big
    (lambda c, r: (c[:-1] + [[0.1, 0.1]], r[:-1] + [0.01]), "overlap"),          # on top of circle 0
    (lambda c, r: (c, r[:-1] + [-0.01]), "negative radius"),
    (lambda c, r: ("not numbers", r), "must be numbers"),
    (lambda c, r: ([1, 2, 3], r), "expected centres of shape"),
])
def test_invalid_packings_are_rejected_with_a_reason(mutate, message):
    centres, radii = valid_reference_packing()
    score, reason = check_packing(*mutate([list(c) for c in centres], list(radii)))
    assert score is None and message in reason


def test_nan_is_rejected_before_anything_else():
    score, reason = check_packing([[float("nan"), 0.5]] * 3, [0.5] * 3)  # also the wrong count
    assert score is None and "non-finite" in reason


def test_bin_packing_instances_and_assignment_check():
    items = generate_instances(2, 500, 100, seed=1)
    assert [len(x) for x in items] == [500, 500] and items[0].min() >= 1 and items[0].max() <= 100
    assert np.array_equal(items[0], generate_instances(1, 500, 100, seed=1)[0])
    assert 35 < items[0].mean() < 45  # Weibull(3, 45) has mean 45 * Gamma(4/3) = 40.2
    sizes = np.array([60.0, 50.0, 40.0, 50.0])
    assert verify_assignment(sizes, np.array([0, 1, 0, 1], dtype=np.int32), 100.0) == (2, "")
    bins, reason = verify_assignment(sizes, np.array([0, 0, 1, 1], dtype=np.int32), 100.0)
    assert bins is None and "capacity" in reason


def test_bin_packing_scores_the_library_in_the_expected_order_and_merges_partial_with_rest():
    task = make_task("bin_packing_online", instances=5, partial_instances=2, items=200)
    assert task.partial_cost == pytest.approx(0.4) and task_names() == ["bin_packing_noisy", "bin_packing_online", "circle_packing_26"]
    with LocalSandbox() as sandbox:
        evaluator = SandboxEvaluator(task, sandbox)
        scores = {name: evaluator.evaluate(code, "full").score for name, code in task.library.items()}
        partial = evaluator.evaluate(task.library["best_fit"], "partial")
        rest = evaluator.evaluate(task.library["best_fit"], "rest")
    assert scores["best_fit"] > scores["first_fit"] > scores["worst_fit"]  # type: ignore[operator]
    assert all(s is not None and s <= 0 for s in scores.values())  # never below the L1 bound
    merged = task.merge(partial, rest)
    assert merged.score == pytest.approx(scores["best_fit"]) and merged.cost == pytest.approx(1.0)
    assert partial.cost == pytest.approx(0.4) and len(partial.details["excess_pct"]) == 2


def test_unknown_tasks_and_bad_params_are_clear_errors():
    with pytest.raises(ValueError, match="unknown program-evolution task 'tsp'"):
        make_task("tsp")
    with pytest.raises(ValueError, match="partial_instances"):
        make_task("bin_packing_online", instances=5, partial_instances=5)
    with pytest.raises(ValueError, match="rejects params"):
        make_task("circle_packing_26", items=3)


def test_exactly_one_result_line_is_accepted():
    from rsigym.envs.evolution.harness import RESULT_MARK, parse_result

    assert parse_result("noise\n" + RESULT_MARK + '{"a": 1}\nmore') == {"a": 1}
    assert parse_result("no result here") is None
    two = parse_result(RESULT_MARK + '{"a": 1}\n' + RESULT_MARK + '{"a": 2}\n')
    assert two is not None and "2 result lines" in two["error"]
    assert parse_result(RESULT_MARK + "[1, 2]")["error"] == "the result line is not a JSON object"  # type: ignore[index]
    assert "not valid JSON" in parse_result(RESULT_MARK + "{")["error"]  # type: ignore[index]
