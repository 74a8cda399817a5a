"""Calibration cases of CodeRepair-v0's verdict code (run by ``benchmarks/analysis_calibration.py``).

* The reliability check under the env's selection: candidates' true pass probabilities, a greedy
  pick with randomised audits, outcomes of the executed candidate only, weights 1/propensity.
  Calibrated predictions must be called "reliable" (false alarms at most 10%); predictions shifted
  by +0.2 must be called "off" (power at least 90%).
* ``coderepair_compare`` on constructed records of 40 problems x 5 seeds: a world model with no true
  effect is called "better" or "worse" in at most 5% of trials, one with a true +0.25 is called
  "better" in at least 90%; both with a blind control that truly is worse.
* ``coderepair_compare`` at the **paper design** (164 problems x ``PAPER_SEEDS`` seeds, the first
  30 problems of each stream a warm-up that is excluded): constructed streams where the world
  model's true gain is +3 pp (the paper's effect) and where it is 0 (``PAPER_DRAWS`` and ``NULL_DRAWS`` draws).
  Each draw: per-problem difficulty Beta(2, 2); per seed stream a world-model gain drawn around the
  true one (SD 0.01, seeds differ); in a share ``AGREE`` of cells both agents pick the same program
  (identical outcome), elsewhere their outcomes are independent draws. The +3 pp must be called
  "better" in >= 80% of draws and the null called better or worse in <= 5%.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from calibration_cases.common import Case
from rsigym.envs.coderepair.analyses import coderepair_compare
from rsigym.envs.coderepair.reliability import ReliabilityCheck
from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Grade, Trajectory

TRIALS = 200


def _selected(rng: np.random.Generator, rounds: int, shift: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    truth = rng.beta(1.2, 2.0, (rounds, 4))                        # (R, C)
    predicted = np.clip(truth + shift, 0.01, 0.99)
    greedy = predicted.argmax(axis=1)
    audit = rng.random(rounds) < 0.2
    chosen = np.where(audit, rng.integers(0, 4, rounds), greedy)
    propensity = np.where(chosen == greedy, 0.8 + 0.05, 0.05)
    p = predicted[np.arange(rounds), chosen]
    y = (rng.random(rounds) < truth[np.arange(rounds), chosen]).astype(float)
    return p, y, np.minimum(1.0 / propensity, 10.0)


def _verdict_share(shift: float, verdict: str) -> float:
    rng = np.random.default_rng(11)
    check = ReliabilityCheck()
    return float(np.mean([check.check(*_selected(rng, 250, shift)).verdict == verdict for _ in range(TRIALS)]))


def reliability_calibrated() -> Case:
    share = _verdict_share(0.0, "off")
    return Case("reliability check", "calibrated predictions, selected + audited", "off in <= 10%",
                f"off in {share:.1%}", share <= 0.10)


def reliability_shifted() -> Case:
    share = _verdict_share(0.2, "off")
    return Case("reliability check", "predictions +0.2, selected + audited", "off in >= 90%",
                f"off in {share:.1%}", share >= 0.90)


def _record(agent: str, seed: int, passed: dict[str, bool], kind: str | None = None,
            params: dict | None = None) -> Trajectory:
    state = {"family": "code-repair", "online_test_calls": len(passed), "wm_decisions": [],
             "problems": [{"problem_id": k, "index": i, "hidden_pass": v, "final_program": ""}
                          for i, (k, v) in enumerate(passed.items())]}
    record = Trajectory(episode_key=f"{agent}-{seed}", env=EnvRef("rsigym/CodeRepair-v0", task_id="humaneval"),
                        agent=AgentSpec(id=agent, kind=kind or agent, params=params or {}), seed=seed, rep=0,
                        final=FinalSnapshot.of(state))
    record.grades.append(Grade("hidden_tests", "1", 0.0, {"passed": passed}))
    return record


def _compare_share(effect: float, label: str) -> float:
    rng = np.random.default_rng(5)
    hits = 0
    with tempfile.TemporaryDirectory() as out:
        for _ in range(TRIALS // 4):
            base_rate = rng.uniform(0.2, 0.6, 40)                  # per-problem difficulty
            records = []
            for seed in range(5):  # a two-way CI needs more than 3 seed streams to see seed spread
                draw = rng.random((3, 40))
                ids = [f"he-{i:03d}" for i in range(40)]
                records += [_record("static_verifier", seed, dict(zip(ids, (draw[0] < base_rate).tolist()))),
                            _record("wm", seed, dict(zip(ids, (draw[1] < base_rate + effect).tolist()))),
                            _record("random", seed, dict(zip(ids, (draw[2] < base_rate - 0.2).tolist())))]
            verdict = coderepair_compare(records, Path(out)).verdict
            hits += f"wm: {label}" in verdict
    return hits / (TRIALS // 4)


def compare_null() -> Case:
    false_calls = _compare_share(0.0, "better") + _compare_share(0.0, "worse")
    return Case("coderepair_compare", "no true effect (40 problems x 5 seeds)", "better/worse in <= 5%",
                f"{false_calls:.1%}", false_calls <= 0.05)


def compare_effect() -> Case:
    share = _compare_share(0.25, "better")
    return Case("coderepair_compare", "true +0.25 (40 problems x 5 seeds)", "better in >= 90%", f"{share:.1%}",
                share >= 0.90)


# NULL_DRAWS: a nominal 5% test makes about 3% false calls here (the two-way SE is slightly
# conservative), and 80 draws cannot tell that from 10%: the first 80 draws of this stream called 8
# (their estimates spread 0.0087 against 0.0072 over 700 draws of other streams, which called 22,
# 3.1%). 300 draws put the Monte Carlo SE of the rate near 1 pp; the exact binomial 95% CI is printed.
PAPER_PROBLEMS, PAPER_SEEDS, PAPER_WARMUP, PAPER_DRAWS, NULL_DRAWS = 164, 25, 30, 30, 300
AGREE = 0.6       # share of cells where the two agents execute the same program (measured: see README)


def _paper_records(rng: np.random.Generator, gain: float, nulls: int = 0) -> list[Trajectory]:
    """Records of the paper design: ``wm`` with a true ``gain``, ``nulls`` more world models with
    none (``null0``, ...: the other agents of the paper's family), and the blind control."""
    difficulty = rng.beta(2.0, 2.0, PAPER_PROBLEMS)                # (P,) static verifier's pass rate
    ids = [f"he-{i:03d}" for i in range(PAPER_PROBLEMS)]
    wm_params = {"warmup": PAPER_WARMUP}
    records = []
    for seed in range(PAPER_SEEDS):
        seed_gain = rng.normal(gain, 0.01)                          # this stream's world model
        u = rng.random(PAPER_PROBLEMS)
        same = rng.random(PAPER_PROBLEMS) < AGREE
        u_wm = np.where(same, u, rng.random(PAPER_PROBLEMS))
        order = rng.permutation(PAPER_PROBLEMS)                     # the stream's order (warm-up = first 30)
        base = {ids[j]: bool(u[j] < difficulty[j]) for j in order}
        wm = {ids[j]: bool(u_wm[j] < np.clip(difficulty[j] + seed_gain, 0, 1)) for j in order}
        blind = {ids[j]: bool(rng.random() < difficulty[j] - 0.15) for j in order}
        records += [_record("static_verifier", seed, base), _record("wm", seed, wm, "adaptive_world_model", wm_params),
                    _record("random", seed, blind)]
        for k in range(nulls):
            u_null = np.where(rng.random(PAPER_PROBLEMS) < AGREE, u, rng.random(PAPER_PROBLEMS))
            null = {ids[j]: bool(u_null[j] < difficulty[j]) for j in order}
            records.append(_record(f"null{k}", seed, null, "fixed_world_model", wm_params))
    return records


def _binomial_ci(hits: int, draws: int) -> str:
    ci = binomtest(hits, draws).proportion_ci(0.95)  # exact (Clopper-Pearson)
    return f"{hits}/{draws}, 95% CI [{ci.low:.1%}, {ci.high:.1%}]"


def _paper_share(gain: float, labels: tuple[str, ...], draws: int) -> tuple[float, float, str]:
    rng = np.random.default_rng(29)
    hits, mdds = 0, []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(draws):
            section = coderepair_compare(_paper_records(rng, gain), Path(out))
            hits += any(f"wm: {label}" in section.verdict for label in labels)
            mdds.append(float(section.verdict.split("wm: ")[1].split("MDD ")[1].split(")")[0]))
    return hits / draws, float(np.mean(mdds)), _binomial_ci(hits, draws)


def compare_paper_effect() -> Case:
    share, mdd, ci = _paper_share(0.03, ("better",), PAPER_DRAWS)
    return Case("coderepair_compare", f"true +3 pp, paper design ({PAPER_PROBLEMS} x {PAPER_SEEDS} seeds, "
                f"{PAPER_DRAWS} draws)", "better in >= 80%", f"{share:.1%} ({ci}; mean MDD {mdd:.3f})", share >= 0.80)


def compare_paper_null() -> Case:
    share, mdd, ci = _paper_share(0.0, ("better", "worse"), NULL_DRAWS)
    return Case("coderepair_compare", f"no effect, paper design ({PAPER_PROBLEMS} x {PAPER_SEEDS} seeds, "
                f"{NULL_DRAWS} draws)", "better/worse in <= 5%", f"{share:.1%} ({ci}; mean MDD {mdd:.3f})", share <= 0.05)


def compare_paper_family() -> Case:
    """The paper's report compares three agents with the static verifier: one with +3 pp and two with
    none, judged as one Holm family. The one must still be found; the two must not be called."""
    rng = np.random.default_rng(31)
    found = false = 0
    with tempfile.TemporaryDirectory() as out:
        for _ in range(PAPER_DRAWS):
            verdict = coderepair_compare(_paper_records(rng, 0.03, nulls=2), Path(out)).verdict
            found += "wm: better" in verdict
            false += any(f"null{k}: {label}" in verdict for k in range(2) for label in ("better", "worse"))
    return Case("coderepair_compare", f"three agents (Holm): +3 pp and two at 0, paper design, {PAPER_DRAWS} draws",
                "+3 pp better in >= 80%, a null one called in <= 10%",
                f"found {_binomial_ci(found, PAPER_DRAWS)}; a null called in {_binomial_ci(false, PAPER_DRAWS)}",
                found / PAPER_DRAWS >= 0.80 and false / PAPER_DRAWS <= 0.10)


CASES = [reliability_calibrated, reliability_shifted, compare_null, compare_effect, compare_paper_effect,
         compare_paper_null, compare_paper_family]
