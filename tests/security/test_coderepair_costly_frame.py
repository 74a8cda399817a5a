"""Attacks on what parsing one reply frame costs code repair's collector (issue 58, hole 6).

A frame under the 1 MiB byte cap that holds few brackets or commas can still cost ``compile``
hundreds of MB and seconds of C code: ``1<1<...<1`` is one comparison of 520,000 operands. Sent by
a program that holds 150 MB of the sandbox's memory, it got the collector killed (the whole batch
an ``InfraError``); without the hold, the stalled collector got a correct program judged
``timeout``. The frame must fail the sender's own test, at a bounded cost to the collector."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rsigym.envs.coderepair.execution import Job, run_jobs
from rsigym.envs.coderepair.sandbox_program import COLLECTOR

TESTS = [f"assert candidate({i}) == {i + 1}" for i in range(3)]
CORRECT = "def f(x):\n    return x + 1\n"
FRAME_BYTES = 1_040_000  # under the 1 MiB byte cap (1,048,576)

# Holds HOLD_MB of touched memory from its load on, then, called, finds its runner's socket in its
# callers' frames and sends PAYLOAD as its answer. Holding memory, it keeps it until the collector
# is done with the frame (it sends the end of the test or closes the connection); else it ends at
# once, and the next program's runner starts while the collector parses.
HOLD_AND_SEND = r'''
import os, sys, _signal

_held = bytearray(HOLD_MB << 20)
for _page in range(0, len(_held), 4096):
    _held[_page] = 1


def f(x):
    frame = sys._getframe(1)
    while frame is not None:
        if "_sock" in frame.f_globals and "send_frame" in frame.f_globals:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            sock = frame.f_globals["_sock"]
            sock.settimeout(None)
            frame.f_globals["send_frame"](sock, PAYLOAD)
            try:
                if _held:
                    sock.recv(1)
            finally:
                os._exit(0)
        frame = frame.f_back
'''

ATTACKS = {
    # the numbers: 2 of 3 runs an InfraError with the hold, 3 of 3 a timeout without
    "1 MB of 1<1<...<1, holding 150 MB": ('b"1" + b"<1" * 519_999', 150),
    "1 MB of 1<1<...<1": ('b"1" + b"<1" * 519_999', 0),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_frame_costly_to_compile_fails_its_own_test_and_the_batch_keeps_its_results(provider, request, attack):
    payload, hold_mb = ATTACKS[attack]
    attacker = HOLD_AND_SEND.replace("PAYLOAD", payload).replace("HOLD_MB", str(hold_mb))
    jobs = [Job("correct1", CORRECT, "f", TESTS), Job("attacker", attacker, "f", TESTS),
            Job("correct2", CORRECT, "f", TESTS), Job("correct3", CORRECT, "f", TESTS)]
    sb = request.getfixturevalue("make_repair_sandbox")(provider)
    try:
        results = run_jobs(sb, jobs)  # an InfraError here is the hole: the collector was killed
    finally:
        sb.close()
    assert all(results[k].all_pass for k in ("correct1", "correct2", "correct3")), \
        {k: r.tests for k, r in results.items()}
    attacked = results["attacker"]
    assert not any(attacked.passed), attacked.tests
    assert attacked.failure_type() == "error:oversized", attacked.tests


def _repeat(head: bytes, unit: bytes, tail: bytes = b"") -> bytes:
    return head + unit * ((FRAME_BYTES - len(head) - len(tail)) // len(unit)) + tail


# Cheap to send, costly to compile: chains of every kind of operator, names and attributes,
# strings and f-strings, each 1 MB and few of them counted by the earlier item count.
SHAPES = {
    "comparison chain": _repeat(b"1", b"<1"),
    "equality chain": _repeat(b"1", b"==1"),
    "sum chain": _repeat(b"1", b"+1"),
    "difference chain": _repeat(b"1", b"-1"),
    "and chain": _repeat(b"1", b" and 1"),
    "or chain": _repeat(b"1", b" or 1"),
    "attribute chain": _repeat(b"a", b".b"),
    "f-string of a sum": _repeat(b"f'{1", b"+1", b"}'"),
    "adjacent strings": _repeat(b"", b"'a'"),
    "adjacent empty strings": _repeat(b"", b"'' "),
}

# The collector program as the sandbox runs it, given no test: it binds its socket, prints an empty
# result and leaves its functions; then its reader reads one frame (stdin) and the growth of the
# process's peak memory is printed (Linux: /proc/self/status).
READ_ONE_FRAME = r'''
import io, marshal, os, sys


def peak_kb():
    # this process's peak resident memory (ru_maxrss would start at the parent's, pytest's)
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmHWM:")).split()[1])


frame = sys.stdin.buffer.read()
config = {"socket": "rsigym-test-%d" % os.getpid(), "end_token": "-", "budget_s": 1.0, "units": {}}
sys.stdin = io.TextIOWrapper(io.BytesIO(marshal.dumps(config)))
collector = {"__name__": "collector"}
exec(sys.argv[1], collector)
before_kb = peak_kb()
try:
    collector["read_literal"](frame)
    outcome = "read"
except collector["Oversized"]:
    outcome = "oversized"
except BaseException as exc:
    outcome = type(exc).__name__
print(outcome, peak_kb() - before_kb)
'''


def read_one_frame(frame: bytes) -> tuple[str, float]:
    """The collector's reader on ``frame`` in a fresh interpreter: its outcome and peak growth in MB."""
    run = subprocess.run([sys.executable, "-I", "-S", "-c", READ_ONE_FRAME, COLLECTOR], input=frame,
                         capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    outcome, growth_kb = run.stdout.decode().splitlines()[-1].split()
    return outcome, int(growth_kb) / 1024


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_frame_costly_to_compile_is_refused_before_it_costs_the_collector_memory(shape):
    outcome, growth_mb = read_one_frame(SHAPES[shape])
    # compiled, these cost 30 to 440 MB; cutting out strings and counting tokens costs a few copies.
    # Over the token cap, or (a few long strings: an f-string) no literal display.
    assert outcome in ("oversized", "ValueError") and growth_mb < 16, (outcome, growth_mb)


@pytest.mark.parametrize("frame", [b"(" + b"0," * 19_999 + b")", b"{" + b"0: 0, " * 9_999 + b"}",
                                   b"(" + b"('s', 0)," * 6_666 + b")"])
def test_the_costliest_literal_under_the_caps_is_read_at_a_bounded_cost(frame):
    outcome, growth_mb = read_one_frame(frame)
    assert (outcome, growth_mb < 32) == ("read", True), (outcome, growth_mb)
