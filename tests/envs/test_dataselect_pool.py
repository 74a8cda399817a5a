"""DataSelection function-calling pool, hidden evaluation, student, selectors and metrics."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from rsigym.envs.dataselect.agents import next_selection_action
from rsigym.envs.dataselect.subset_selectors import SELECTORS, select, stratum, suspicion, value_missing
from rsigym.envs.dataselect.evaluation import gain_ci, parse_csv, score_submission, validate_submission
from rsigym.envs.dataselect.fc_pool import (EVAL_CATEGORIES, FACTOR_SHARES, combination_key, generate_eval,
                                            generate_pool)
from rsigym.envs.dataselect.fc_student import FcRecipe, encode_items, item_correct, predict, train_student
from rsigym.envs.dataselect.fc_tools import fc_tools, tool_spec


@pytest.fixture(scope="module")
def pool():
    return generate_pool(2000, 3)


def test_pool_shares_and_hidden_factors(pool):
    items, factors = pool
    assert len(items) == 2000
    for factor, share in FACTOR_SHARES.items():
        assert abs(factors.count(factor) / 2000 - share) < 0.002, factor
    for item in items:
        assert "factor" not in item and "category" not in item
        text = json.dumps(item).lower()
        for name in ("missing_function", "missing function", "missing_parameter", "missing parameter",
                     "long_context", "long context", "truncat", "near_duplicate", "wrong_", "guess", "clean"):
            assert name not in text, (name, text)
        assert 4 <= len(item["tools"]) <= 5
        assert item["domain"] in ("retail", "airline")


def test_tools_use_the_tooluse_schemas():
    for tool in fc_tools():
        spec = tool_spec(tool.domain, tool.name)
        assert set(spec["function"]["parameters"]["required"]) == set(tool.params)


def test_factors_have_their_documented_shape(pool):
    items, factors = pool
    by = {f: [i for i, g in zip(items, factors) if g == f] for f in FACTOR_SHARES}
    assert all(i["target"]["type"] == "no_call" for i in by["missing_function"])
    assert all(i["target"]["type"] == "ask" for i in by["missing_parameter"])
    assert all(value_missing(i) for i in by["truncated"]) and all(value_missing(i) for i in by["guess_not_ask"])
    assert not any(value_missing(i) for i in by["clean"])
    assert all(len(i["history"]) >= 3 for i in by["long_context"] + by["recovery"])
    assert all(i["history"][-1]["content"].startswith("error") for i in by["recovery"])


def test_evaluation_is_disjoint_from_the_pool(pool):
    items, _ = pool
    eval_items, categories = generate_eval(50, 99, items)
    assert [categories.count(c) for c in EVAL_CATEGORIES] == [50, 50, 50, 50]
    pool_keys = {combination_key(i) for i in items}
    eval_keys = [combination_key(i) for i in eval_items]
    assert not pool_keys & set(eval_keys) and len(set(eval_keys)) == len(eval_keys)
    assert any(i["target"]["type"] != "call" for i in eval_items)  # ask / no-call items are checked too

    def canonical(item):  # the same item up to the order of its offered tools
        return json.dumps({**item, "tools": sorted(item["tools"])}, sort_keys=True)

    assert not {canonical(i) for i in items} & {canonical(i) for i in eval_items}


def test_ast_match_normalises_arguments_and_checks_each_part():
    call = {"type": "call", "name": "get_order_details", "arguments": {"order_id": "#W123"}}
    assert item_correct({"type": "call", "name": "get_order_details", "arguments": {"order_id": " #w123 "}}, call)
    assert not item_correct({"type": "call", "name": "get_user_details", "arguments": {"order_id": "#W123"}}, call)
    assert not item_correct({"type": "call", "name": "get_order_details", "arguments": {"order_id": "#W124"}}, call)
    assert not item_correct({"type": "call", "name": "get_order_details", "arguments": {}}, call)
    assert not item_correct({"type": "no_call"}, call)
    ask = {"type": "ask", "missing": "date"}
    assert item_correct({"type": "ask", "missing": "date"}, ask) and not item_correct({"type": "ask", "missing": "zip"}, ask)


def test_student_learns_the_base_category(pool):
    torch.set_num_threads(1)
    items, factors = pool
    clean = [i for i, f in enumerate(factors) if f == "clean"][:500]
    encoded = encode_items(items)
    model = train_student(encoded, clean, 0, FcRecipe(epochs=12))
    eval_items, categories = generate_eval(30, 7, items)
    base = [i for i, c in zip(eval_items, categories) if c == "base"]
    predictions = predict(model, encode_items(base))
    accuracy = np.mean([item_correct(p, i["target"]) for p, i in zip(predictions, base)])
    assert accuracy > 0.3  # chance is ~0 (exact match of function and every argument)


def test_submission_errors_are_clear():
    ok = [list(range(k * 3, k * 3 + 3)) for k in range(5)]
    assert validate_submission(ok, [4, 3, 2, 1, 0], 20, 3) == []
    overlap = [g[:] for g in ok]
    overlap[1][0] = 0
    assert any("overlap" in e and "[0]" in e for e in validate_submission(overlap, [0, 1, 2, 3, 4], 20, 3))
    sizes = [g[:] for g in ok]
    sizes[2] = sizes[2][:2]
    assert validate_submission(sizes, [0, 1, 2, 3, 4], 20, 3) == ["group 2 has 2 rows; every group needs exactly 3"]
    unknown = [g[:] for g in ok]
    unknown[4][0] = 25
    assert validate_submission(unknown, [0, 1, 2, 3, 4], 20, 3) == ["group 4 holds unknown rows [25] (rows are 0..19)"]
    assert "expected 5 groups, got 4" in validate_submission(ok[:4], [0, 1, 2, 3], 20, 3)
    assert any("permutation" in e for e in validate_submission(ok, [0, 0, 1, 2, 3], 20, 3))
    assert parse_csv("row,group\n1,0\n2,4\n") == ([[1], [], [], [], [2]], None)
    assert "header" in (parse_csv("a,b\n1,2")[1] or "")
    assert "group 7" in (parse_csv("row,group\n1,7")[1] or "")


def test_metrics_match_hand_computed_values():
    # Group g scores 0.1 * g on every seed plus 0.01 * seed; random draws score 0.2 and 0.3.
    table = {tuple(range(g * 2, g * 2 + 2)): 0.1 * g for g in range(5)}
    table.update({(100, 101): 0.2, (102, 103): 0.3})

    def score(rows, seed):
        return {"score": table[tuple(rows)] + 0.01 * seed, "base": 0.0}

    groups = [list(k) for k in list(table)[:5]]
    m = score_submission(groups, [4, 3, 2, 1, 0], [0, 1], [[100, 101], [102, 103]], score)
    assert m["top_score"] == pytest.approx(0.405) and m["random_mean"] == pytest.approx(0.255)
    assert m["gain"] == pytest.approx(0.15)
    assert m["gain_ci"][0] == pytest.approx(0.1) and m["gain_ci"][1] == pytest.approx(0.2)
    assert m["percentile"] == 100.0 and m["top_is_best"] and m["spearman"] == pytest.approx(1.0)
    assert m["spearman_ceiling"] == pytest.approx(1.0)
    worst_first = score_submission(groups, [0, 1, 2, 3, 4], [0, 1], [[100, 101]], score)
    assert worst_first["spearman"] == pytest.approx(-1.0) and not worst_first["top_is_best"]
    assert not worst_first["top_tie"]  # 0.4 apart with zero seed variance: no tie



def test_gain_ci_covers_a_zero_gain_at_its_nominal_rate():
    # True gain 0; a seed effect shared by every subset, per-seed noise and a draw-to-draw effect.
    # Resampling the R x S differences one by one (as if independent) covers 0 only about half the time.
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(300):
        seed_effect = rng.normal(0, 0.02, 3)
        top = 0.5 + seed_effect + rng.normal(0, 0.02, 3)
        randoms = 0.5 + rng.normal(0, 0.01, (10, 1)) + seed_effect + rng.normal(0, 0.02, (10, 3))
        low, high = gain_ci(top, randoms, seed=int(rng.integers(1 << 30)), resamples=1000)
        covered += low <= 0 <= high
    assert covered / 300 > 0.8


def test_near_tie_uses_the_seed_paired_standard_error():
    # The top group trails the best by 0.01 on every seed: a large shared seed effect must not make
    # that a tie (the paired difference has no spread), while noisy per-seed gaps do tie.
    def run(top_offsets):
        table = {(0,): [0.5 + 0.1 * s for s in range(3)], (1,): [0.5 + 0.1 * s + d for s, d in enumerate(top_offsets)],
                 (2,): [0.0] * 3, (3,): [0.0] * 3, (4,): [0.0] * 3, (9,): [0.0] * 3}
        return score_submission([[0], [1], [2], [3], [4]], [1, 0, 2, 3, 4], [0, 1, 2], [[9]],
                                lambda rows, seed: {"score": table[tuple(rows)][seed]})
    steady = run([-0.01, -0.01, -0.01])
    assert not steady["top_is_best"] and not steady["top_tie"]
    noisy = run([-0.05, 0.04, -0.02])
    assert not noisy["top_is_best"] and noisy["top_tie"]


def test_selectors_are_valid_and_stratified_keeps_coverage(pool):
    items, factors = pool
    visible = [{"row": r, **item} for r, item in enumerate(items)]
    losses = np.random.default_rng(0).exponential(0.1, len(items))
    for name in SELECTORS:
        groups, order = select(name, visible, losses, 100, 0)
        assert validate_submission(groups, order, len(items), 100) == [], name
    groups, _ = select("stratified", visible, losses, 100, 0)
    strata = [stratum(i) for i in visible]
    for s in set(strata):
        counts = [sum(strata[r] == s for r in g) for g in groups]
        guaranteed = int(strata.count(s) * 500 / len(items) / 5)  # each stratum's share in every group
        assert min(counts) >= guaranteed, (s, counts)
    score = suspicion(visible, losses)
    top, bad = select("stratified", visible, losses, 100, 0)[0][0], select("most_suspicious", visible, losses, 100, 0)[0][0]
    assert score[top].mean() < score[bad].mean()
    # The evidence is visible: near duplicates and value-less labels are what gets flagged.
    f = np.array(factors)
    assert score[f == "truncated"].mean() > 1.5 > score[f == "clean"].mean()


def test_selection_plan_reads_only_the_observation_text():
    intro = "Choose 5 disjoint groups of exactly 40 rows and predict"
    assert next_selection_action([intro], "stratified", 0) == {"action": "base_losses", "rows": "all"}
    second = next_selection_action([intro, "Base-model losses of 200 rows"], "stratified", 0)
    assert second["action"] == "run_python" and "select('stratified'" in second["code"] and ", 40, 0)" in second["code"]
    last = next_selection_action([intro, "Base-model losses of 200 rows", "wrote submission.csv"], "stratified", 0)
    assert last == {"action": "submit", "csv_file": "submission.csv", "order": [0, 1, 2, 3, 4]}
