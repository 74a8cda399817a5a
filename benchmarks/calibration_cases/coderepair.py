"""Calibration cases of CodeRepair-v0's verdict code (run by ``benchmarks/analysis_calibration.py``).

* The reliability check under the env's selection: candidates' true pass probabilities, a greedy
  pick with randomised audits, outcomes of the executed candidate only, checked unweighted as the
  protocol does (selection on features leaves calibration intact on the picked rows).
  Calibrated predictions must be called "reliable" (false alarms at most 10%); predictions shifted
  by +0.2 must be called "off" (power at least 90%).
* ``coderepair_compare`` on constructed records of 40 problems x 5 seeds: a world model with no true
  effect is called "better" or "worse" in at most 5% of trials, one with a true +0.25 is called
  "better" in at least 90%; both with a blind control that truly is worse.
* ``coderepair_compare`` at the **paper design** (read from ``scenarios/coderepair_paper.yaml``:
  164 problems x its seeds, its warm-up excluded): constructed streams where the world model's
  true mean gain is +3 pp (the paper's effect), +2 pp (the paper's adaptive over fixed) and 0.
  Each draw: per-problem difficulty Beta(2, 2); the gain differs by problem (SD ``SD_PROBLEM``)
  and by seed stream (SD ``SD_SEED``), as measured on the simulator; in a share ``AGREE`` of cells
  both agents pick the same program (identical outcome), elsewhere their outcomes are independent
  draws; 1% of episodes are lost to infra errors. The +3 pp must be called "better" in >= 80% of
  draws, the null called better or worse in <= 5%, and +2 pp found in < 80% (what docs/families/coderepair.md
  says the design cannot decide); with the paper's family (two world models, one at +3 pp and one at 0,
  Holm) the +3 pp one found in >= 80% and the null one called in <= 10%. Exact binomial CIs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import yaml
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
    # as the protocol calls it: unweighted, on the executed rows (the pick depends only on features
    # and the audit coin, so calibration holds on the picked rows; see ``CoUpdateState.reliability``)
    return float(np.mean([check.check(*_selected(rng, 250, shift)[:2]).verdict == verdict for _ in range(TRIALS)]))


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


# The paper design is read from the shipped scenario (its seeds and the world models' warm-up), so
# this calibration always speaks for what `rsigym run coderepair_paper` runs.
_PAPER = yaml.safe_load((Path(__file__).resolve().parents[2] / "scenarios" / "coderepair_paper.yaml").read_text())
PAPER_PROBLEMS = 164
PAPER_SEEDS = len(_PAPER["seeds"])
PAPER_WARMUP = max(int(a.get("params", {}).get("warmup", 20)) for a in _PAPER["agents"]
                   if a["kind"] in ("fixed_world_model", "adaptive_world_model"))
# 150 draws with an effect and 300 without put the Monte Carlo SE of each rate near 3 pp and 1 pp;
# the exact binomial 95% CI is printed next to each.
PAPER_DRAWS, NULL_DRAWS, FAMILY_DRAWS = 150, 300, 100
FAMILY_NULLS = 1  # the paper family: fixed and adaptive against the static verifier (one at +3 pp, one at 0)
# A model of the real records (measured on a 164 x 5 first-round replay of the shipped simulator,
# issue 40): the world model's effect differs by problem (SD 0.07 to 0.09: 0.08 here) and by seed
# stream (SD 0.016 for the fixed model, 0.044 for the adaptive one: the larger here); in a share
# AGREE of cells both agents execute the same program (identical outcome), elsewhere their outcomes
# are independent draws; an episode is lost to an infra error with probability LOST (its cells are
# missing, and counted next to the verdict).
SD_PROBLEM, SD_SEED, AGREE, LOST = 0.08, 0.044, 0.6, 0.01


def _paper_records(rng: np.random.Generator, gain: float, nulls: int = 0) -> list[Trajectory]:
    """Records of the paper design: ``wm`` with a true mean ``gain`` (heterogeneous by problem and
    seed), ``nulls`` more world models whose mean gain is 0 (``null0``, ...: the other agents of the
    paper's family, equally heterogeneous), and the blind control."""
    difficulty = rng.beta(2.0, 2.0, PAPER_PROBLEMS)                # (P,) static verifier's pass rate
    ids = [f"he-{i:03d}" for i in range(PAPER_PROBLEMS)]
    wm_params = {"warmup": PAPER_WARMUP}
    problem_gain = {name: rng.normal(0.0, SD_PROBLEM, PAPER_PROBLEMS) for name in ["wm", *(f"null{k}" for k in range(nulls))]}
    records = []

    def episode(agent: str, seed: int, passed: dict[str, bool], kind: str | None = None,
                params: dict | None = None) -> Trajectory:
        if rng.random() < LOST:                                     # an infra error: no final state, no grade
            lost = _record(agent, seed, {}, kind, params)
            lost.final, lost.termination = None, "infra_error"
            lost.grades.clear()
            return lost
        return _record(agent, seed, passed, kind, params)

    for seed in range(PAPER_SEEDS):
        u = rng.random(PAPER_PROBLEMS)
        order = rng.permutation(PAPER_PROBLEMS)                     # the stream's order (warm-up = first ones)
        base = {ids[j]: bool(u[j] < difficulty[j]) for j in order}
        records.append(episode("static_verifier", seed, base))
        for name, mean in [("wm", gain), *((f"null{k}", 0.0) for k in range(nulls))]:
            seed_gain = rng.normal(mean, SD_SEED)                   # this stream's world model
            same = rng.random(PAPER_PROBLEMS) < AGREE
            u_wm = np.where(same, u, rng.random(PAPER_PROBLEMS))
            p = np.clip(difficulty + seed_gain + problem_gain[name], 0, 1)
            outcome = {ids[j]: bool(u_wm[j] < p[j]) for j in order}
            records.append(episode(name, seed, outcome, "adaptive_world_model" if name == "wm" else "fixed_world_model",
                                   wm_params))
        records.append(episode("random", seed, {ids[j]: bool(rng.random() < difficulty[j] - 0.15) for j in order}))
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


def compare_paper_two_points() -> Case:
    """The paper's second step (adaptive over fixed, +2 pp) is below this design's MDD: the case
    checks that the docs page's "cannot decide it" stays true (it fails if the design grows enough)."""
    share, mdd, ci = _paper_share(0.02, ("better",), FAMILY_DRAWS)
    return Case("coderepair_compare", f"true +2 pp, paper design ({PAPER_PROBLEMS} x {PAPER_SEEDS} seeds, "
                f"{FAMILY_DRAWS} draws)", "found in < 80%: the design cannot decide +2 pp",
                f"{share:.1%} ({ci}; mean MDD {mdd:.3f})", share < 0.80)


def compare_paper_family() -> Case:
    """The paper's report compares three agents with the static verifier: one with +3 pp and two with
    none, judged as one Holm family. The one must still be found; the two must not be called."""
    rng = np.random.default_rng(31)
    found = false = 0
    with tempfile.TemporaryDirectory() as out:
        for _ in range(FAMILY_DRAWS):
            verdict = coderepair_compare(_paper_records(rng, 0.03, nulls=FAMILY_NULLS), Path(out)).verdict
            found += "wm: better" in verdict
            false += any(f"null{k}: {label}" in verdict for k in range(FAMILY_NULLS) for label in ("better", "worse"))
    return Case("coderepair_compare", f"the paper family (Holm): +3 pp and {FAMILY_NULLS} at 0, paper design, {FAMILY_DRAWS} draws",
                "+3 pp better in >= 80%, a null one called in <= 10%",
                f"found {_binomial_ci(found, FAMILY_DRAWS)}; a null called in {_binomial_ci(false, FAMILY_DRAWS)}",
                found / FAMILY_DRAWS >= 0.80 and false / FAMILY_DRAWS <= 0.10)


CASES = [reliability_calibrated, reliability_shifted, compare_null, compare_effect, compare_paper_effect,
         compare_paper_null, compare_paper_two_points, compare_paper_family]
