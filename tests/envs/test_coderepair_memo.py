"""The code repair execution memo: a hit is the run's own JobResult, another program is another key,
and an episode with the memo records what one without it records."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from rsigym.envs.coderepair import memo as memo_module
from rsigym.envs.coderepair.agents import RandomPickAgent, WorldModelAgent
from rsigym.envs.coderepair.env import CodeRepairEnv
from rsigym.envs.coderepair.execution import Job, run_jobs
from rsigym.envs.coderepair.memo import ExecMemo, memo_key, run_jobs_memo
from rsigym.records import AgentSpec
from rsigym.sandbox import open_sandbox

RIGHT = "def inc(x):\n    return x + 1\n"
WRONG = "def inc(x):\n    return x + 2\n"
TESTS = ["assert inc(1) == 2", "assert inc(-1) == 0"]


@pytest.fixture(autouse=True)
def _fresh_lru():
    memo_module._LRU.clear()
    yield
    memo_module._LRU.clear()


def test_a_memo_hit_returns_exactly_the_job_result_a_run_returns(tmp_path):
    memo = ExecMemo(tmp_path / "memo.sqlite")
    jobs = [Job("a", RIGHT, "inc", TESTS), Job("b", WRONG, "inc", TESTS), Job("c", "def inc(x) return\n", "inc", TESTS)]
    with open_sandbox("local") as box:
        ran = run_jobs(box, jobs)
        first = run_jobs_memo(box, jobs, memo)
        assert (memo.hits, memo.misses) == (0, 3)
        memo_module._LRU.clear()  # the second answer comes from the store, not the process
        second = run_jobs_memo(box, [replace(job, key=job.key + "2") for job in jobs], memo)
    assert (memo.hits, memo.misses) == (3, 3)
    assert first == ran
    assert second == {k + "2": replace(r, key=k + "2") for k, r in ran.items()}
    assert [list(t) for t in second["b2"].tests] == [list(t) for t in ran["b"].tests]  # key order too
    assert [ran[k].all_pass for k in "abc"] == [True, False, False] and ran["c"].failure_type() == "load"


def test_a_program_one_character_apart_is_run_not_answered_from_the_memo(tmp_path):
    memo = ExecMemo(tmp_path / "memo.sqlite")
    with open_sandbox("local") as box:
        assert run_jobs_memo(box, [Job("p", RIGHT, "inc", TESTS)], memo)["p"].all_pass
        other = run_jobs_memo(box, [Job("p", WRONG, "inc", TESTS)], memo)["p"]
    assert not other.all_pass and (memo.hits, memo.misses) == (0, 2)


def test_the_key_changes_with_every_input_that_decides_the_outcome():
    job = Job("k", RIGHT, "inc", TESTS, prelude="", helpers="")
    docker = {"provider": "docker", "image": "sha256:1", "limits": "L"}
    base = memo_key(job, docker, False)
    variants = [memo_key(replace(job, source=RIGHT + " "), docker, False),
                memo_key(replace(job, entry="inc2"), docker, False),
                memo_key(replace(job, tests=TESTS[:1]), docker, False),
                memo_key(replace(job, prelude="x = 1"), docker, False),
                memo_key(replace(job, helpers="def h(): pass"), docker, False),
                memo_key(replace(job, timeout_s=1.0), docker, False),
                memo_key(replace(job, mode="eval"), docker, False),
                memo_key(job, docker, True),
                memo_key(job, {**docker, "image": "sha256:2"}, False),
                memo_key(job, {**docker, "provider": "local"}, False),
                memo_key(job, {**docker, "limits": "M"}, False),
                memo_key(job, docker, False, namespace="grader")]
    assert len({base, *variants}) == 1 + len(variants)
    assert memo_key(replace(job, key="other label"), docker, False) == base


def test_an_unreadable_store_is_a_miss_and_the_job_still_runs(tmp_path):
    (tmp_path / "memo.sqlite").write_bytes(b"not a database" * 100)
    memo = ExecMemo(tmp_path / "memo.sqlite")
    with open_sandbox("local") as box:
        result = run_jobs_memo(box, [Job("p", RIGHT, "inc", TESTS)], memo)["p"]
    assert result.all_pass and memo.misses == 1


def test_the_first_outcome_of_a_key_is_kept(tmp_path):
    memo = ExecMemo(tmp_path / "memo.sqlite")
    assert memo.put("k", "first") == "first"
    memo_module._LRU.clear()
    assert memo.put("k", "second") == "first" and memo.get("k") == "first"
    rows = sqlite3.connect(tmp_path / "memo.sqlite").execute("SELECT result FROM outcomes").fetchall()
    assert rows == [("first",)]


def test_the_mixture_coder_memoises_by_default_and_the_llm_coder_and_the_switch_do_not(monkeypatch):
    assert CodeRepairEnv(sandbox="local")._memo is not None
    assert CodeRepairEnv(sandbox="local", memo=False)._memo is None
    assert CodeRepairEnv(coder="llm", coder_params={"model": "m"}, sandbox="local")._memo is None
    monkeypatch.setenv("RSIGYM_CODEREPAIR_MEMO", "off")
    assert CodeRepairEnv(sandbox="local")._memo is None


def _play(memo: bool, agent, seed: int) -> dict:
    env = CodeRepairEnv(sandbox="local", problems=6, memo=memo, coder_params={"drift_at": 0.4})
    try:
        observation, info = env.reset(seed=seed)
        agent.reset({"info": info}, seed)
        done = False
        while not done:
            observation, reward, done, _, info = env.step(agent.act(observation))
            if hasattr(agent, "observe"):
                agent.observe(reward, observation, info)
        hits = env._memo.hits if env._memo else 0
        state = env.snapshot()
    finally:
        env.close()
    state["memo_hits"] = hits
    return state


def _what_must_match(state: dict) -> list:
    return [(p["problem_id"], [(r["chosen"], r["public_pass"], r["failure"], r["features"]) for r in p["rounds"]],
             p["final_program"], p["hidden_pass"], p["hidden_failure"]) for p in state["problems"]]


@pytest.mark.parametrize("kind", ["static_verifier", "coderepair_random"])
def test_an_episode_with_the_memo_records_what_one_without_it_records(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("RSIGYM_CODEREPAIR_MEMO", str(tmp_path / "memo.sqlite"))

    def agent():
        spec = AgentSpec(id="a", kind=kind)
        return RandomPickAgent(spec) if kind == "coderepair_random" else WorldModelAgent(spec)

    without = _play(False, agent(), seed=3)
    first = _play(True, agent(), seed=3)    # fills the memo
    again = _play(True, agent(), seed=3)    # answered from it
    assert _what_must_match(without) == _what_must_match(first) == _what_must_match(again)
    assert without["memo_hits"] == 0 and again["memo_hits"] > first["memo_hits"]


def test_the_grader_reexecutes_what_the_env_ran_and_shares_only_its_own_runs(tmp_path, monkeypatch):
    from rsigym.envs.coderepair.graders import regrade_programs

    monkeypatch.setenv("RSIGYM_CODEREPAIR_MEMO", str(tmp_path / "memo.sqlite"))
    state = _play(True, RandomPickAgent(AgentSpec(id="r", kind="coderepair_random")), seed=1)
    monkeypatch.setattr(memo_module, "STATS", {"hits": 0, "misses": 0})
    first, _ = regrade_programs(state, False, "local")
    assert memo_module.STATS == {"hits": 0, "misses": len(state["problems"])}  # the env's runs not reused
    again, _ = regrade_programs(state, False, "local")
    assert memo_module.STATS == {"hits": len(state["problems"]), "misses": len(state["problems"])}
    assert first == again == {p["problem_id"]: p["hidden_pass"] for p in state["problems"]}


NAMED = "def inc(x):\n    val_1 = x + 1\n    if x < 0:\n        raise ValueError('val_1 went negative')\n    return val_1\n"
RENAMED = NAMED.replace("val_1 =", "tmp_7 =").replace("return val_1", "return tmp_7")


def test_a_renamed_program_is_answered_only_by_an_outcome_that_names_none_of_its_locals(tmp_path):
    """The simulator re-prints a catalogue entry with new local names in every seed: a renaming is
    answered from the first program's outcome, unless that outcome names a local (here the error
    message does), which a renamed run would print differently."""
    memo = ExecMemo(tmp_path / "memo.sqlite", rename_invariant=True)
    clean = "def inc(x):\n    val_1 = x + 1\n    return val_1\n"
    with open_sandbox("local") as box:
        run_jobs_memo(box, [Job("a", clean, "inc", TESTS)], memo)
        renamed = run_jobs_memo(box, [Job("b", clean.replace("val_1", "acc_4"), "inc", TESTS)], memo)["b"]
        assert (memo.hits, memo.misses) == (1, 1) and renamed.all_pass
        run_jobs_memo(box, [Job("c", NAMED, "inc", TESTS)], memo)
        answered = run_jobs_memo(box, [Job("d", RENAMED, "inc", TESTS)], memo)["d"]
        ran = run_jobs(box, [Job("d", RENAMED, "inc", TESTS)])["d"]
    assert (memo.hits, memo.misses) == (1, 3)           # the named outcome answered nothing
    assert answered == ran and "val_1" in str(answered.tests) and "tmp_7" not in str(answered.tests)


def test_a_seed_answered_from_another_seeds_renamings_records_what_it_records_without_the_memo(tmp_path, monkeypatch):
    monkeypatch.setenv("RSIGYM_CODEREPAIR_MEMO", str(tmp_path / "memo.sqlite"))

    def agent():
        return RandomPickAgent(AgentSpec(id="r", kind="coderepair_random"))

    _play(True, agent(), seed=3)                         # fills the memo with seed 3's renamings
    answered = _play(True, agent(), seed=4)              # seed 4 re-prints the catalogue with new names
    without = _play(False, agent(), seed=4)
    assert _what_must_match(answered) == _what_must_match(without)
    assert answered["memo_hits"] > 0
