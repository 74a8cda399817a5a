"""The sandboxed side of a test run: one ``python3 -I -c RUNNER`` executes a whole batch of jobs.

Docker start-up dominates a short test run, so one exec carries many jobs (every test of one
candidate, all four candidates of a round, or all 164 reference solutions). Each job runs in its
own forked child (nothing one candidate does to its interpreter reaches the next job), its output
sent to ``/dev/null``, each test under a per-test alarm, the child killed by the parent when the
job's total deadline passes. The child streams one JSON line per finished test into a pipe, so a
child killed at test k still reports tests 0..k-1; the rest read ``timeout``. In check mode a test
that times out ends the job (the rest read ``timeout`` unrun): one endless loop costs one alarm.

A job is ``{key, source, entry, prelude, tests, mode, timeout_s}``. ``mode="check"``: each test is
a block of statements run with ``candidate`` (and the entry point's own name) bound to the job's
function; it passes when it raises nothing. ``mode="eval"``: each test is an expression; the result
is its ``repr`` and whether that repr reads back (``ast.literal_eval``) equal to the value, which is
how expected outputs are computed from the reference solution.

The parent prints one marked JSON line ``{"results": {key: [..per test..], ...}}``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["RESULT_MARK", "RUNNER", "parse_batch"]

RESULT_MARK = "@@rsigym-coderepair@@"

RUNNER = r'''
import ast, json, os, select, signal, sys, time
MARK = "@@rsigym-coderepair@@"
batch = json.loads(sys.stdin.buffer.read().decode("utf-8", "replace"))


class _TestTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _TestTimeout()


def _short(exc):
    return (type(exc).__name__ + ": " + str(exc))[:200]


def _child(job, wfd):
    out = os.fdopen(wfd, "w")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0); os.dup2(devnull, 1); os.dup2(devnull, 2)
    sys.setrecursionlimit(3000)
    signal.signal(signal.SIGALRM, _alarm)

    def send(obj):
        out.write(json.dumps(obj) + "\n"); out.flush()

    namespace = {"__name__": "candidate"}
    timed_out = False
    try:
        signal.setitimer(signal.ITIMER_REAL, job["timeout_s"])
        exec(compile(job["source"], "candidate.py", "exec"), namespace)
        if job.get("prelude"):
            exec(compile(job["prelude"], "tests.py", "exec"), namespace)
        signal.setitimer(signal.ITIMER_REAL, 0)
        function = namespace[job["entry"]]
        if not callable(function):
            raise TypeError(job["entry"] + " is not callable")
    except _TestTimeout:
        send({"load": "timeout"}); return
    except BaseException as exc:
        signal.setitimer(signal.ITIMER_REAL, 0)
        send({"load": "error", "detail": _short(exc), "type": type(exc).__name__}); return
    send({"load": "ok"})
    for index, test in enumerate(job["tests"]):
        if job["mode"] == "check" and index and timed_out:
            send({"status": "timeout", "detail": "not run after an earlier test timed out"})
            continue
        scope = dict(namespace)
        scope["candidate"] = function
        try:
            signal.setitimer(signal.ITIMER_REAL, job["timeout_s"])
            if job["mode"] == "eval":
                value = eval(compile(test, "test.py", "eval"), scope)
                signal.setitimer(signal.ITIMER_REAL, 0)
                text = repr(value)
                try:
                    literal = ast.literal_eval(text) == value and type(ast.literal_eval(text)) is type(value)
                except Exception:
                    literal = False
                send({"status": "ok", "repr": text[:20000], "literal": bool(literal)})
            else:
                exec(compile(test, "test.py", "exec"), scope)
                signal.setitimer(signal.ITIMER_REAL, 0)
                send({"status": "pass"})
        except _TestTimeout:
            timed_out = True
            send({"status": "timeout"})
        except AssertionError as exc:
            signal.setitimer(signal.ITIMER_REAL, 0)
            send({"status": "fail", "detail": _short(exc)})
        except BaseException as exc:
            signal.setitimer(signal.ITIMER_REAL, 0)
            send({"status": "error", "type": type(exc).__name__, "detail": _short(exc)})


def _run(job):
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            _child(job, wfd)
        finally:
            os._exit(0)
    os.close(wfd)
    deadline = time.monotonic() + job["timeout_s"] * (len(job["tests"]) + 1) + 1.0
    buffer, lines, killed = b"", [], False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL); killed = True; break
        ready, _, _ = select.select([rfd], [], [], left)
        if not ready:
            continue
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        buffer += chunk
    os.close(rfd)
    os.waitpid(pid, 0)
    for raw in buffer.splitlines():
        try:
            lines.append(json.loads(raw))
        except ValueError:
            lines.append({"status": "error", "type": "garbled", "detail": "unreadable result line"})
    head = lines[0] if lines else {"load": "timeout" if killed else "crashed"}
    tests = [line for line in lines[1:]][: len(job["tests"])]
    tests += [{"status": "timeout" if killed else "error", "type": "crashed"}] * (len(job["tests"]) - len(tests))
    if head.get("load") != "ok":
        tests = [{"status": "error", "type": "load_" + str(head.get("load")), "detail": head.get("detail", "")}
                 for _ in job["tests"]]
    return {"load": head, "tests": tests}


results = {job["key"]: _run(job) for job in batch["jobs"]}
sys.stdout.write(MARK + json.dumps({"results": results}) + "\n")
'''


def parse_batch(stdout: str) -> dict[str, Any] | None:
    """The ``results`` object of the one result line in ``stdout``; None when there is none."""
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT_MARK)]
    if len(lines) != 1:
        return None
    try:
        value = json.loads(lines[0][len(RESULT_MARK):])
    except json.JSONDecodeError:
        return None
    results = value.get("results") if isinstance(value, dict) else None
    return results if isinstance(results, dict) else None
