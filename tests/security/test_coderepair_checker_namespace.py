"""Attacks on code repair's checker namespace (issue 38, hole 1): a program that defines the
built-ins a hidden test reads (``abs``, ``range``, ``str``...) or the problem's helper (``poly``,
``encode_cyclic``) at module level, so that the test, not the program, computes the wrong thing.
The test must see only the program's entry function; everything else it reads comes from clean
builtins, the test's prelude and the problem's own prompt."""

from __future__ import annotations

import builtins

import gymnasium as gym
import pytest

from rsigym.envs.coderepair.execution import Job, names_read, run_jobs
from rsigym.envs.coderepair.graders import regrade_programs
from rsigym.envs.coderepair.problems import build_suite
from rsigym.sandbox import open_sandbox

# What each redefinition returns so that a test comparing with a constant 0 passes: ``abs(x - y)``
# is 0, ``range(...)`` is empty (the loop of asserts never runs), ``str(x)``, ``sum(...)`` and
# ``tuple(...)`` are 0 like the entry's answer, ``poly(coeffs, root)`` is 0 for any "root".
FORGED_VALUES = {"range": "[]", "list": "[]", "print": "None"}


def _forger(entry: str, names: set[str]) -> str:
    lines = [f"def {entry}(*args, **kwargs):\n    return 0\n"]
    lines += [f"def {name}(*args, **kwargs):\n    return {FORGED_VALUES.get(name, '0')}\n" for name in sorted(names)]
    return "\n\n".join(lines)


def _constant(entry: str) -> str:
    """The honest wrong program: the same constant answer, no redefinition."""
    return f"def {entry}(*args, **kwargs):\n    return 0\n"


def _program_names_read(problem) -> set[str]:
    """Names the problem's hidden and strict tests read that neither the test's prelude nor the
    entry binds: builtins and the problem's helpers, which the program must not be able to supply."""
    prelude: dict = {}
    exec(problem.prelude, prelude)
    read = {n for t in [*problem.hidden, *problem.strict_extra] for n in names_read(t)}
    return read - set(prelude) - {"candidate", problem.entry}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RSIGYM_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        with open_sandbox("local") as sandbox:
            return build_suite(sandbox)


def test_a_program_that_redefines_what_a_test_reads_passes_no_more_tests_than_its_constant_answer(suite, repair_sandbox):
    targets = {p.problem_id: (p, _program_names_read(p)) for p in suite.problems if _program_names_read(p)}
    assert len(targets) >= 17, sorted(targets)  # the 17 problems of issue 38: builtins, poly, encode_*
    assert any(names & set(dir(builtins)) for _, names in targets.values())
    assert {"poly", "encode_cyclic", "encode_shift"} <= set().union(*(names for _, names in targets.values()))
    jobs = []
    for pid, (p, names) in targets.items():
        tests = [*p.hidden, *p.strict_extra]
        jobs.append(Job(pid + "/forger", _forger(p.entry, names), p.entry, tests, prelude=p.prelude, helpers=p.helpers))
        jobs.append(Job(pid + "/constant", _constant(p.entry), p.entry, tests, prelude=p.prelude, helpers=p.helpers))
    results = run_jobs(repair_sandbox, jobs)
    forged = {pid: (sum(results[pid + "/forger"].passed), sum(results[pid + "/constant"].passed))
              for pid in targets if results[pid + "/forger"].passed != results[pid + "/constant"].passed}
    assert forged == {}, f"problem: (tests the forger passed, tests its constant answer passed): {forged}"
    assert not any(results[pid + "/forger"].all_pass for pid in targets)


IDENTITY_HELPER = '''
def {helper}(s):
    return s


def {entry}(s):
    return s
'''


@pytest.mark.parametrize("problem_id,helper", [("he-038", "encode_cyclic"), ("he-050", "encode_shift")])
def test_a_program_that_makes_the_problems_encoder_the_identity_cannot_pass_as_its_decoder(
        suite, repair_sandbox, problem_id, helper):
    """The test encodes with the problem's encoder, never the program's: an identity decoder that
    also makes the encoder the identity would pass every round trip."""
    p = suite.by_id()[problem_id]
    code = IDENTITY_HELPER.format(helper=helper, entry=p.entry)
    result = run_jobs(repair_sandbox, [Job("forger", code, p.entry, [*p.hidden, *p.public], prelude=p.prelude,
                                           helpers=p.helpers)])["forger"]
    assert not any(result.passed), result.tests
    reference = run_jobs(repair_sandbox, [Job("reference", p.reference, p.entry, [*p.hidden, *p.public],
                                              prelude=p.prelude, helpers=p.helpers)])["reference"]
    assert reference.all_pass, reference.tests


def test_a_program_whose_poly_is_zero_everywhere_finds_no_root(suite, repair_sandbox):
    p = suite.by_id()["he-032"]
    code = "def poly(xs, x):\n    return 0.0\n\n\ndef find_zero(xs):\n    return 0.5\n"
    result = run_jobs(repair_sandbox, [Job("forger", code, p.entry, p.hidden, prelude=p.prelude,
                                           helpers=p.helpers)])["forger"]
    assert not any(result.passed), result.tests


# The mocked model answers a bare body: the env completes the prompt with it, so every problem's
# entry returns 0 and the module redefines each name a hidden test of those problems reads.
FORGED_NAMES = ("abs", "range", "sum", "tuple", "str", "len", "list", "print", "poly")
FORGING_BODY = "    return 0\n\n\n" + "\n\n".join(
    f"def {name}(*args, **kwargs):\n    return {FORGED_VALUES.get(name, '0')}\n" for name in FORGED_NAMES)


def test_a_model_that_offers_the_forging_program_solves_nothing_in_the_env(suite, provider, request):
    targets = sorted(p.problem_id for p in suite.problems if _program_names_read(p) & set(FORGED_NAMES))
    sb = request.getfixturevalue("make_repair_sandbox")(provider)
    env = gym.make("rsigym/CodeRepair-v0", coder="llm", problems=targets, shuffle=False, rounds=1, candidates=2,
                   sandbox=sb, coder_params={"model": "openai/gpt-4o-mini", "api_base": "http://127.0.0.1:9",
                                             "litellm_kwargs": {"mock_response": f"```python\n{FORGING_BODY}```"}})
    try:
        env.reset(seed=0)
        done = False
        while not done:
            _, _, done, _, _ = env.step({"candidate": 0})
        state = env.unwrapped.snapshot()
        assert [r["problem_id"] for r in state["problems"]] == targets
        assert all("def abs(" in r["final_program"] for r in state["problems"])
        assert state["solved"] == 0, [(r["problem_id"], r["hidden_failure"]) for r in state["problems"]]
        for strict in (False, True):  # the graders' regrade, in a fresh sandbox, agrees
            passed, _ = regrade_programs(state, strict, provider)
            assert not any(passed.values()), (strict, passed)
    finally:
        env.close()
        sb.close()
