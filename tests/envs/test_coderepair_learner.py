"""CodeRepair-v0's learner and protocol: the offset learner starts at the static verifier, the pair
comparison is normalised and paired, only accepted adaptations use the budget (no Docker)."""

from __future__ import annotations

import numpy as np
import pytest

from rsigym.envs.coderepair.acceptance import Fold, Pair, compare_pairs
from rsigym.envs.coderepair.coupdate import CoUpdateState, LoggedRound
from rsigym.envs.coderepair.features import FEATURE_NAMES
from rsigym.envs.coderepair.predictors import OffsetLogisticPredictor, StaticPredictor, make_predictor
from rsigym.envs.coderepair.reliability import ReliabilityCheck

KNOWN = FEATURE_NAMES.index("known_failure")
GOOD = FEATURE_NAMES.index("output_agreement")   # static weights it +2


def _features(rng: np.random.Generator) -> np.ndarray:
    x = np.zeros((4, len(FEATURE_NAMES)))
    x[:, GOOD] = rng.random(4)
    return x


def _stream(state: CoUpdateState, start: int, stop: int, rng: np.random.Generator, *, reversed_: bool,
            audit: float = 0.5) -> None:
    """Play problems start..stop-1 with the state's current pair: one round each, the outcome of the
    executed candidate only; P(pass) is the static verifier's own prediction, or falls with
    output_agreement once ``reversed_``."""
    for t in range(start, stop):
        x = _features(rng)
        scores = state.predictor.predict(x)
        greedy = state.policy.greedy(scores, x, KNOWN)
        chosen = int(rng.integers(4)) if rng.random() < audit else greedy
        propensity = (1 - audit) * float(chosen == greedy) + audit / 4
        p = 1 - x[chosen, GOOD] if reversed_ else float(StaticPredictor().predict(x)[chosen])
        state.rows.append(LoggedRound(t, x, chosen, propensity, float(rng.random() < p), state.version,
                                      float(scores[chosen])))


def test_an_untrained_or_data_free_offset_learner_predicts_exactly_the_static_scores():
    X = np.random.default_rng(0).random((50, len(FEATURE_NAMES)))
    static = StaticPredictor().predict(X)
    assert np.array_equal(make_predictor("offset").predict(X), static)
    empty = OffsetLogisticPredictor().fit(X[:0], np.zeros(0), np.zeros(0))
    assert np.array_equal(empty.predict(X), static)


def test_the_offset_learner_moves_only_with_evidence():
    rng = np.random.default_rng(1)
    X = rng.random((400, len(FEATURE_NAMES)))
    y = (rng.random(400) < 1 - X[:, GOOD]).astype(float)    # output_agreement now means "fails"
    few = OffsetLogisticPredictor().fit(X[:4], y[:4], np.ones(4))
    many = OffsetLogisticPredictor().fit(X, y, np.ones(400))
    assert abs(few.coef[GOOD]) < abs(many.coef[GOOD]) / 2 and abs(many.coef[GOOD]) > 2.0
    assert many.coef[GOOD] < -2.0  # enough to reverse static's +2


def test_with_no_difference_in_the_data_the_protocol_does_not_accept():
    """Outcomes follow static's own relation: nothing to gain, nothing accepted, nothing spent."""
    accepted = 0
    for seed in range(4):
        state = CoUpdateState("offset", KNOWN, ReliabilityCheck(min_samples=20), min_fit_rows=30, window=60,
                              max_adaptations=1, seed=seed)
        rng = np.random.default_rng(seed)
        _stream(state, 0, 120, rng, reversed_=False)
        for t in (60, 80, 100, 120):
            state.adapt(t)
        accepted += sum(d["event"] == "accept" for d in state.audit)
    assert accepted == 0


def test_a_clear_reversal_is_accepted_within_a_few_check_points_and_rejections_cost_no_budget():
    state = CoUpdateState("offset", KNOWN, ReliabilityCheck(min_samples=20), min_fit_rows=30, window=40,
                          max_adaptations=1, seed=3)
    rng = np.random.default_rng(3)
    _stream(state, 0, 40, rng, reversed_=False)
    state.fit_initial(40)
    checks = 0
    for t in range(50, 130, 10):                 # the relation is reversed from problem 40 on
        _stream(state, t - 10, t, rng, reversed_=True)
        state.adapt(t)
        checks += 1
        if any(d["event"] == "accept" for d in state.audit):
            break
    decisions = [d for d in state.audit if d["event"] in ("accept", "reject")]
    assert decisions[-1]["event"] == "accept" and checks <= 6, [d["event"] for d in state.audit]
    rejected = [d for d in decisions if d["event"] == "reject"]
    assert state.adaptations == 1 and all("adaptation budget" not in d.get("reason", "") for d in state.audit)
    accept = decisions[-1]
    pair = accept["pair"]
    assert pair["ci"][0] > 0 and pair["difference"] > pair["margin"] and pair["held_rows"] > 0
    assert accept["accepted"] == 1 and len(rejected) == len(decisions) - 1
    # the budget (1 accepted) is now spent: a later check point keeps the pair whatever it finds
    version = state.version
    _stream(state, 130, 170, rng, reversed_=False)
    state.adapt(170)
    assert state.audit[-1]["event"] == "keep" and state.version == version and state.adaptations == 1


def test_the_pair_values_stay_pass_rates_even_with_tiny_propensities():
    rng = np.random.default_rng(4)
    rows = []
    for t in range(40):
        x = _features(rng)
        rows.append(LoggedRound(t, x, int(rng.integers(4)), 0.01, 1.0, "wm", 0.5))  # weight 100, all pass
    static = StaticPredictor()
    flipped = OffsetLogisticPredictor()
    flipped.coef[GOOD] = -10.0
    result = compare_pairs([Fold(rows, flipped, None)], lambda f: Pair(static, 1.0), lambda f: Pair(f.new_predictor, 1.0),
                           KNOWN)
    assert 0.0 <= result.retained_value <= 1.0 and 0.0 <= result.new_value <= 1.0
    assert result.retained_value == pytest.approx(1.0) and -1.0 <= result.ci[0] <= result.ci[1] <= 1.0


def test_identical_pairs_differ_by_exactly_zero_and_are_not_accepted():
    rng = np.random.default_rng(5)
    rows = [LoggedRound(t, _features(rng), int(rng.integers(4)), 0.25, float(rng.random() < 0.5), "wm", 0.5)
            for t in range(60)]
    static = StaticPredictor()
    result = compare_pairs([Fold(rows, static, static)], lambda f: Pair(static, 1.0), lambda f: Pair(static, 1.0),
                           KNOWN, margin=0.0)
    assert result.difference == 0.0 and result.ci == (0.0, 0.0) and not result.accept


# -- warm-up, the check's false alarms, where audits go (round three, part two) -------------------------

def test_the_warm_up_fit_keeps_static_without_evidence_and_recalibrates_when_only_the_level_is_off():
    """Outcomes follow static's ranking: the full correction never replaces static; when static is
    also miscalibrated (the level shifted) the recalibration (same ranking) is taken instead."""
    chosen = []
    for seed in range(3):
        state = CoUpdateState("offset", KNOWN, seed=seed)
        _stream(state, 0, 40, np.random.default_rng(seed), reversed_=False)
        state.fit_initial(40)
        chosen.append(state.audit[-1].get("chosen"))
    assert "offset" not in chosen
    shifted = CoUpdateState("offset", KNOWN, seed=0)
    rng = np.random.default_rng(10)
    for t in range(80):  # P(pass) = static's prediction at a logit 2 lower: same ranking, lower level
        x = _features(rng)
        chosen_ = int(rng.integers(4))
        p = 1 / (1 + np.exp(-(StaticPredictor().logit(x)[chosen_] - 2.0)))
        shifted.rows.append(LoggedRound(t, x, chosen_, 0.25, float(rng.random() < p), shifted.version, 0.5))
    shifted.fit_initial(80)
    assert shifted.audit[-1]["event"] == "warmup_fit" and shifted.audit[-1]["chosen"] == "recalibrated"
    x = _features(rng)
    assert np.argmax(shifted.predictor.predict(x)) == np.argmax(StaticPredictor().predict(x))


def test_calibrated_predictions_in_small_samples_are_rarely_called_off():
    """30 calibrated outcomes: the bare ECE bound (0.15) calls a large share off by chance; the
    consistency-resampled rule keeps false alarms near the z test's 1% per rule."""
    bare, resampled = ReliabilityCheck(resamples=0), ReliabilityCheck()
    false_bare = false_resampled = 0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        p = rng.uniform(0.2, 0.8, 30)
        y = (rng.random(30) < p).astype(float)
        false_bare += bare.check(p, y).verdict == "off"
        false_resampled += resampled.check(p, y).verdict == "off"
    assert false_resampled <= 6 and false_bare >= 3 * max(false_resampled, 1)


def test_a_real_shift_in_a_small_sample_is_still_called_off():
    hits = 0
    for seed in range(50):
        rng = np.random.default_rng(seed)
        p = rng.uniform(0.4, 0.8, 40)
        y = (rng.random(40) < p - 0.35).astype(float)
        hits += ReliabilityCheck().check(p, y).verdict == "off"
    assert hits >= 40


@pytest.mark.parametrize("kind, in_doubt, expected", [("fixed_world_model", False, 0.0),
                                                      ("adaptive_world_model", False, 0.01),
                                                      ("adaptive_world_model", True, 0.1)])
def test_after_warm_up_audits_go_where_there_is_doubt(kind, in_doubt, expected):
    from rsigym.envs.coderepair.agents import WorldModelAgent
    from rsigym.records import AgentSpec

    agent = WorldModelAgent(AgentSpec(id="a", kind=kind, params={"warmup": 5}))
    agent.reset({"info": {"entry": "f", "problem_id": "p0"}}, 0)
    assert agent._rate() == 0.05                 # warm-up: the exploration the first fit needs
    agent._problems_done, agent.state.in_doubt = 5, in_doubt
    assert agent._rate() == expected


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_change_point_lands_near_the_drift_and_the_refit_stands_on_the_new_regime(seed):
    """60 problems under static's own relation, then 60 under a sharply reversed one (high
    output_agreement now means a repeated wrong program): the CUSUM of the deployed version's
    log-likelihood puts the regime's start near problem 60 (a fixed 40-problem window at 120 would
    start at 80 and one at 100 would straddle the drift), and the accepted refit stands on the rows
    from there on."""
    rng = np.random.default_rng(seed)
    state = CoUpdateState("offset", KNOWN, ReliabilityCheck(min_samples=20))
    state.version_rows = 30
    for t in range(120):
        x = _features(rng)
        x[:, [FEATURE_NAMES.index(n) for n in ("parses", "defines_entry", "loads")]] = 1.0  # static: confident
        scores = state.predictor.predict(x)
        chosen = int(rng.integers(4)) if rng.random() < 0.1 else state.policy.greedy(scores, x, KNOWN)
        logit = 8 * (0.5 - x[chosen, GOOD]) if t >= 60 else float(StaticPredictor().logit(x)[chosen])
        state.rows.append(LoggedRound(t, x, chosen, 0.9, float(rng.random() < 1 / (1 + np.exp(-logit))),
                                      state.version, float(scores[chosen])))
    start, details = state.change_point(120)
    assert 52 <= details["estimate"] <= 68, details
    assert start == details["estimate"] and details["mean_loglik_after"] < details["mean_loglik_before"]
    state.in_doubt = True
    state.adapt(120)
    decision = state.audit[-1]
    assert decision["event"] == "accept" and decision["regime_start"] == start, decision
    assert state.anchor == start and state.version_rows == len([r for r in state.rows if r.t >= start])


def test_a_refresh_waits_for_evidence_and_for_the_regime_to_grow():
    state = CoUpdateState("offset", KNOWN)
    _stream(state, 0, 60, np.random.default_rng(3), reversed_=False, audit=0.1)
    assert not state.refresh_due(60)           # no version fitted on evidence yet (before warm-up)
    state.version_rows = 40
    assert state.refresh_due(60)               # 60 rows >= 1.5 x 40
    state.version_rows = 41
    assert not state.refresh_due(60)
    state.refresh_growth = 0
    state.version_rows = 10
    assert not state.refresh_due(60)           # refreshes switched off
