"""DataSelection function-calling pool, hidden evaluation, student, selectors and metrics."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from rsigym.envs.dataselect.agents import next_selection_action
from rsigym.envs.dataselect.subset_selectors import SELECTORS, select, stratum, suspicion, value_missing
from rsigym.envs.dataselect.evaluation import (gain_ci, parse_csv, score_submission, simulate_gain_ci_coverage,
                                               validate_submission)
from rsigym.envs.dataselect.fc_eval import EVAL_CATEGORIES, HELD_OUT, generate_eval, normalise
from rsigym.envs.dataselect.fc_pool import FACTOR_SHARES, combination_key, generate_pool
from rsigym.envs.dataselect.fc_student import FcRecipe, FcStudent, encode_items, item_correct, predict, train_student
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
    # normalised request text is disjoint too, and no evaluation request fits a pool template
    assert not {normalise(i["request"]) for i in items} & {normalise(i["request"]) for i in eval_items}
    import re

    pool_templates = [re.compile("^" + re.sub(r"\\\{\w+\\\}", r"\\S+", re.escape(p)) + "$")
                      for t in fc_tools() for p in t.phrasings]
    for item in eval_items:
        assert not any(t.match(item["request"]) for t in pool_templates), item["request"]


def test_held_out_templates_differ_from_the_pool_and_fill_every_slot():
    pool_templates = {normalise(p) for t in fc_tools() for p in t.phrasings}
    for tool in fc_tools():
        templates = HELD_OUT[(tool.domain, tool.name)]
        for template in templates:
            assert normalise(template) not in pool_templates
            assert set(re.findall(r"\{(\w+)\}", template)) == set(tool.params), template
    assert normalise("Hello , PLEASE check order #W1 !") == "check order #w1"


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
    assert accuracy > 0.2  # chance is ~0 (exact match of function and every argument); held-out phrasings


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
    # t interval with R - 1 = 1 degree of freedom: sd(0.205, 0.305) * sqrt(1 + 1/2) * t(0.975, 1)
    half = 12.7062047 * np.std([0.205, 0.305], ddof=1) * np.sqrt(1.5)
    assert m["gain_ci"][0] == pytest.approx(0.15 - half) and m["gain_ci"][1] == pytest.approx(0.15 + half)
    assert m["gain_verdict"] == "indistinguishable"
    assert m["percentile"] == 100.0 and m["top_is_best"] and m["spearman"] == pytest.approx(1.0)
    assert m["top_verdict"] == "best" and m["tied_groups"] == [4]
    assert m["spearman_ceiling"] == pytest.approx(1.0)
    worst_first = score_submission(groups, [0, 1, 2, 3, 4], [0, 1], [[100, 101], [102, 103]], score)
    assert worst_first["spearman"] == pytest.approx(-1.0) and not worst_first["top_is_best"]
    assert not worst_first["top_tie"]  # 0.4 apart with zero seed variance: no tie



@pytest.mark.parametrize("seeds, draws", [(3, 10), (2, 8), (1, 3)])
def test_gain_ci_covers_a_zero_gain_at_its_nominal_rate(seeds, draws):
    # True gain 0: the top group is a subset like the random ones (a seed effect shared by all,
    # a subset effect, per-seed noise). The old two-way percentile bootstrap covered 0.84-0.88 at
    # 3 x 10 and 0.57 at 1 x 3; the t interval reaches the nominal 0.95 within simulation error.
    assert simulate_gain_ci_coverage(seeds, draws, trials=1500, seed=1) >= 0.93
    # and with no subset effect at all (a fixed top group), it is conservative, never below
    assert simulate_gain_ci_coverage(seeds, draws, trials=500, seed=2, draw_sd=0.0) >= 0.93


def test_gain_ci_detects_a_real_gain_and_refuses_one_draw():
    rng = np.random.default_rng(0)
    randoms = 0.5 + rng.normal(0, 0.01, (10, 3))
    low, high = gain_ci(np.array([0.6, 0.61, 0.59]), randoms)
    assert low > 0.05 and high < 0.15
    with pytest.raises(ValueError, match="at least 2 random draws"):
        gain_ci(np.array([0.5]), randoms[:1])


def test_a_three_way_tie_is_a_tie_not_top_is_best():
    # every group at the floor: the top group "has the highest score" only as one of five equals
    m = score_submission([[0], [1], [2], [3], [4]], [0, 1, 2, 3, 4], [0], [[9], [8]],
                         lambda rows, seed: {"score": 0.0, "base": 0.0})
    assert m["top_verdict"] == "tie" and not m["top_is_best"] and m["top_tie"] and m["tied_groups"] == [0, 1, 2, 3, 4]
    assert m["floor_categories"] == ["base"]
    table = {0: 0.5, 1: 0.5, 2: 0.5, 3: 0.1, 4: 0.1, 9: 0.2, 8: 0.3}
    m = score_submission([[0], [1], [2], [3], [4]], [1, 0, 2, 3, 4], [0], [[9], [8]],
                         lambda rows, seed: {"score": table[rows[0]], "base": table[rows[0]]})
    assert m["top_verdict"] == "tie" and m["tied_groups"] == [0, 1, 2] and m["floor_categories"] == []


def test_near_tie_uses_the_seed_paired_standard_error():
    # The top group trails the best by 0.01 on every seed: a large shared seed effect must not make
    # that a tie (the paired difference has no spread), while noisy per-seed gaps do tie.
    def run(top_offsets):
        table = {(0,): [0.5 + 0.1 * s for s in range(3)], (1,): [0.5 + 0.1 * s + d for s, d in enumerate(top_offsets)],
                 (2,): [0.0] * 3, (3,): [0.0] * 3, (4,): [0.0] * 3, (9,): [0.0] * 3}
        return score_submission([[0], [1], [2], [3], [4]], [1, 0, 2, 3, 4], [0, 1, 2], [[9], [9]],
                                lambda rows, seed: {"score": table[tuple(rows)][seed]})
    steady = run([-0.01, -0.01, -0.01])
    assert not steady["top_is_best"] and not steady["top_tie"] and steady["top_verdict"] == "not_best"
    noisy = run([-0.05, 0.04, -0.02])
    assert not noisy["top_is_best"] and noisy["top_tie"] and noisy["top_verdict"] == "tie"


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


def test_students_fine_tune_the_base_model_the_agent_probes(monkeypatch):
    from rsigym.envs.dataselect import fc_track
    from rsigym.envs.dataselect.pools import PoolSpec

    pool = fc_track.FunctionCallingPool(PoolSpec("function_calling", 300, 20, 2, 0), recipe=FcRecipe(epochs=1))
    base = FcStudent(pool.recipe)
    monkeypatch.setattr(pool, "base_model", lambda: base)
    seen = {}

    def fake_train(encoded, rows, seed, recipe, init=None):
        seen["init"] = init
        return base

    monkeypatch.setattr(fc_track, "train_student", fake_train)
    pool.train_and_score([0, 1, 2], 0)
    assert seen["init"] is not None and all(torch.equal(seen["init"][k], v) for k, v in base.state_dict().items())
    assert pool.recipe_key()["start"].startswith(fc_track.BASE_VERSION)  # the base is part of every score's key
    # and the base model learns from every correct skill, never from a wrong label
    from rsigym.envs.dataselect.fc_pool import BASE_SHARES, generate_base_pool

    kinds = {item["target"]["type"] for item in generate_base_pool(200, 0)}
    assert kinds == {"call", "ask", "no_call"} and set(BASE_SHARES) <= set(FACTOR_SHARES)


def test_report_section_verdicts_and_floor_warning():
    from rsigym.envs.dataselect.analyses import _agent_verdict, _floor_warning

    assert _agent_verdict({"better": 0, "indistinguishable": 0, "worse": 2}, 2) == "worse than random"
    assert _agent_verdict({"better": 1, "indistinguishable": 1, "worse": 0}, 2).startswith("mixed")

    def run(level):
        return score_submission([[g] for g in range(5)], [0, 1, 2, 3, 4], [0, 1], [[8], [9]],
                                lambda rows, seed: {"score": level, "ask": 0.0 if level < 0.05 else 0.6})
    warning = _floor_warning({("p", "a"): [run(0.0)]})
    assert warning is not None and "ask, score" not in warning and "categories ask" in warning
    assert "5 of 5 groups" in warning
    assert _floor_warning({("p", "a"): [run(0.6)]}) is None
