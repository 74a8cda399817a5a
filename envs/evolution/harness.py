"""The sandboxed side of an evaluation: load the candidate, call it, report its raw output.

Every harness starts with ``PRELUDE``: it moves the candidate's own prints to stderr (so they can
neither corrupt nor forge the result line, and a flood is capped by the sandbox), compiles and
runs ``candidate.py``, and defines ``emit``, which writes one marked JSON line to the real
stdout. A failure inside the candidate is reported as ``{"error": ...}``; anything the harness
reports is checked again on the host (see ``tasks``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PRELUDE", "RESULT_MARK", "parse_result"]

RESULT_MARK = "@@rsigym-evolution-result@@"

PRELUDE = r'''
import json, os, sys, traceback
_result = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # the candidate's prints go to stderr
MARK = "@@rsigym-evolution-result@@"

def emit(obj):
    _result.write(MARK + json.dumps(obj) + "\n")
    _result.flush()

def fail(prefix, exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "candidate.py"]
    where = f" (candidate.py line {frames[-1].lineno})" if frames else ""
    emit({"error": f"{prefix}: {type(exc).__name__}: {str(exc)[:300]}{where}"})
    _result.close()
    os._exit(0)

try:
    _code = compile(sys.stdin.read(), "candidate.py", "exec")
except SyntaxError as exc:
    emit({"error": f"syntax error: {exc.msg} (line {exc.lineno})"})
    os._exit(0)
candidate = {"__name__": "candidate"}
try:
    exec(_code, candidate)
except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the candidate failed
    fail("loading the candidate failed", exc)
'''


def parse_result(stdout: str) -> dict[str, Any] | None:
    """The harness's result object, or None when it printed none (killed, or crashed early)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            try:
                value = json.loads(line[len(RESULT_MARK):])
            except json.JSONDecodeError:
                return None
            return value if isinstance(value, dict) else None
    return None
