"""Attacks on code repair's test runner (issue 27, item 1): a program under test tries to forge its
own results, to write a result for a whole batch, or to read hidden tests and show them to the
coder through the public feedback. Each program here is what an adversarial coder could submit."""

from __future__ import annotations

import pytest

from rsigym.envs.coderepair.coders import Candidate
from rsigym.envs.coderepair.env import CodeRepairEnv
from rsigym.envs.coderepair.execution import Job, run_jobs

TESTS = [f"assert candidate({i}) == {i + 1}" for i in range(6)]

# No entry function at all: at load time the program walks up its caller's frames and writes
# "loaded" and six passes into whatever result channel it finds there (a forked child's pipe, or
# a runner's socket to the collector).
FORGE_THROUGH_FRAMES = r'''
import json, os, sys
frame = sys._getframe(1)
while frame is not None:
    loc = frame.f_locals
    if hasattr(loc.get("out"), "write"):
        for line in [{"load": "ok"}] + [{"status": "pass"}] * 6:
            loc["out"].write(json.dumps(line) + "\n")
        loc["out"].flush()
        os._exit(0)
    if callable(loc.get("_send")):  # the per-test runner: forge its load report and a pass
        names = loc["_job"]["names"] if "_job" in loc else ["candidate"]
        loc["_send"]({"load": "ok", "names": {n: ("v", True) for n in names}})
        loc["_send"]({"status": "pass"})
        loc["_send"]({"value": ("i", "0x1")})
        os._exit(0)
    frame = frame.f_back
'''

# Writes a result line that passes every job of the batch into the stdout of every runner or
# collector process it can open (/proc/<pid>/fd/1), then SIGKILLs them, so that forged line is the
# only result line the host sees.
FORGE_INTO_RUNNER_STDOUT = r'''
import json, os, signal
MARK = "@@rsigym-coderepair@@"
forged = {key: {"load": {"load": "ok"}, "tests": [{"status": "pass"}] * 6} for key in KEYS}
line = (MARK + json.dumps({"results": forged}) + "\n").encode()
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if MARK.encode() not in fh.read():
                continue
        fd = os.open(f"/proc/{pid}/fd/1", os.O_WRONLY)
        os.write(fd, line)
        os.close(fd)
        os.kill(int(pid), signal.SIGKILL)
    except OSError:
        pass


def f(x):
    return None
'''


def test_a_program_cannot_forge_its_results_through_its_callers_frames(repair_sandbox):
    result = run_jobs(repair_sandbox, [Job("forger", FORGE_THROUGH_FRAMES, "f", TESTS)])["forger"]
    assert not any(result.passed), result.tests
    # the honest control: a correct program passes the same tests in the same sandbox
    assert run_jobs(repair_sandbox, [Job("honest", "def f(x):\n    return x + 1\n", "f", TESTS)])["honest"].all_pass


@pytest.mark.docker
def test_a_program_cannot_write_a_batch_result_into_a_runners_stdout(request):
    """The runner's and the collector's stdout are out of reach (docker: the collector is the
    harness identity; each runner's stdout is /dev/null and ignored). Local has one identity."""
    keys = ["attacker", "none1", "none2", "none3"]
    attacker = FORGE_INTO_RUNNER_STDOUT.replace("KEYS", repr(keys))
    jobs = [Job("attacker", attacker, "f", TESTS)] + [Job(k, "def f(x):\n    return None\n", "f", TESTS) for k in keys[1:]]
    with request.getfixturevalue("make_repair_sandbox")("docker") as sb:
        results = run_jobs(sb, jobs)
    assert not any(any(r.passed) for r in results.values()), {k: r.tests for k, r in results.items()}


LEAK_HIDDEN = r'''
import gc, sys


def _seen():
    texts = set()
    main = sys.modules.get("__main__")
    for value in list(vars(main).values()) + gc.get_objects():
        if isinstance(value, str) and "candidate(" in value:
            texts.add(value)
        elif isinstance(value, (dict, list, tuple)):
            for item in list(value.values() if isinstance(value, dict) else value):
                if isinstance(item, str) and "candidate(" in item and "_seen" not in item:
                    texts.add(item)
    return sorted(texts)


def ENTRY(*args, **kwargs):
    raise ValueError(" || ".join(_seen())[:190] or "nothing")
'''


class _AttackCoder:
    """A coder whose every candidate is the leaking program."""

    usage = type("U", (), {"model_calls": 0})()

    def __init__(self, code: str) -> None:
        self.code = code

    def propose(self, problem, catalogue, *, round_index, progress, feedback, n, rng):
        return [Candidate(self.code.replace("ENTRY", problem.entry), "llm", "attack")] * n


def test_hidden_tests_never_reach_a_live_round_or_its_feedback(provider, request):
    """A program that reads every test text in its process and raises it as its error message:
    the next round's feedback (shown to the coder) holds no hidden test, and the per-step reward
    is the public outcome; the hidden outcome appears only in the final state."""
    sb = request.getfixturevalue("make_repair_sandbox")(provider)
    env = CodeRepairEnv(problems=["he-000", "he-002"], shuffle=False, rounds=2, sandbox=sb)
    try:
        env.reset(seed=0)
        env.coder = _AttackCoder(LEAK_HIDDEN)  # type: ignore[assignment]
        env._propose()
        problem = env._stream[0]
        feedbacks = []
        done = False
        while not done:
            observation, reward, done, _, info = env.step({"candidate": 0})
            feedbacks.append(observation["feedback"] + observation["text"])
            assert reward == 0.0
        leaked = [t for t in problem.hidden if t[:60] in "\n".join(feedbacks)]
        assert not leaked, leaked[:2]
        state = env.snapshot()
        assert [row["hidden_pass"] for row in state["problems"]] == [False, False]
    finally:
        env.close()
        sb.close()


def test_each_test_runs_in_a_fresh_interpreter(repair_sandbox):
    """State a program leaves in its interpreter (here a counter in ``builtins``) never reaches
    its next test, nor another program's."""
    counting = ("import builtins\n\ndef f(x):\n    builtins.calls = getattr(builtins, 'calls', 0) + 1\n"
                "    return builtins.calls\n")
    tests = ["assert candidate(0) == 1"] * 3
    results = run_jobs(repair_sandbox, [Job("a", counting, "f", tests), Job("b", counting, "f", tests)])
    assert results["a"].all_pass and results["b"].all_pass, (results["a"].tests, results["b"].tests)
