"""Attacks on code repair's result collector (issue 38, hole 2): a program writes one huge frame
on its own runner's socket, text that costs the collector far more memory to parse than the
sandbox holds. The frame must fail the program's own test, never the collector: the batch's
other programs keep their results, and nothing becomes an infra error."""

from __future__ import annotations

import pytest

from rsigym.envs.coderepair.execution import Job, run_jobs

TESTS = [f"assert candidate({i}) == {i + 1}" for i in range(3)]
CORRECT = "def f(x):\n    return x + 1\n"

# Finds its runner's socket and frame writer in the caller's frames, and sends PAYLOAD as the
# runner's next frame: at load time (in place of the load report) or as the answer to a call.
SEND_FRAME = r'''
import os, sys


def _send_huge():
    frame = sys._getframe(1)
    while frame is not None:
        if "_sock" in frame.f_globals and "send_frame" in frame.f_globals:
            try:
                frame.f_globals["send_frame"](frame.f_globals["_sock"], PAYLOAD)
            finally:
                os._exit(0)
        frame = frame.f_back


if AT_LOAD:
    _send_huge()


def f(x):
    _send_huge()
'''

ATTACKS = {
    # 8 MB of nested tuples: under the old 8 MiB frame limit, 2.7 million AST nodes (about 1 kB each)
    "8 MB of nested tuples, as the load report": ('b"(" + b"()," * 2_666_000 + b")"', True),
    "8 MB of nested tuples, as an answer": ('b"(" + b"((0,),)," * 1_000_000 + b")"', False),
    # under the 1 MiB byte cap, still half a million items (about 500 MB to compile)
    "1 MB of small items, as an answer": ('b"(" + b"0," * 520_000 + b")"', False),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_one_huge_frame_fails_its_own_test_and_the_rest_of_the_batch_keeps_its_results(provider, request, attack):
    payload, at_load = ATTACKS[attack]
    attacker = SEND_FRAME.replace("PAYLOAD", payload).replace("AT_LOAD", str(at_load))
    jobs = [Job("correct1", CORRECT, "f", TESTS), Job("attacker", attacker, "f", TESTS),
            Job("correct2", CORRECT, "f", TESTS), Job("correct3", CORRECT, "f", TESTS)]
    sb = request.getfixturevalue("make_repair_sandbox")(provider)
    try:
        results = run_jobs(sb, jobs)  # an InfraError here is the hole: the collector died
    finally:
        sb.close()
    assert all(results[k].all_pass for k in ("correct1", "correct2", "correct3")), \
        {k: r.tests for k, r in results.items()}
    attacked = results["attacker"]
    assert not any(attacked.passed), attacked.tests
    assert attacked.tests[0] == {"status": "error", "type": "oversized", "detail": attacked.tests[0].get("detail")}, \
        attacked.tests
    assert attacked.failure_type() == "error:oversized"
