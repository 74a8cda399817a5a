"""The sandboxed side of an evaluation: the candidate runner, and the result line it or a harness prints.

Every evaluation starts a fresh ``python3 -I -c RUNNER`` as the sandbox's user, the program text
passed inline (no file a candidate could overwrite; ``-I`` ignores the work dir, the user
site-packages and ``PYTHON*`` variables, so no module a candidate planted is imported). The
runner reads a JSON header line and then the candidate's source from stdin, and first **clears
what an earlier candidate may have left**: everything the user owns in its work dir and in the
header's shared dirs (``/tmp``, ``/dev/shm``, ``/dev/mqueue`` on docker) and, when asked, its
System V IPC objects. Processes an earlier candidate left are gone already (the sandbox kills
the user's processes when each exec ends). Then it moves the candidate's prints to stderr,
compiles and runs the candidate, and defines ``emit``, which writes one marked JSON line to the
real stdout. A task appends its own tail (call ``pack()``; or serve ``priority()`` to a harness
process, see ``online``).

Nothing the candidate's process prints is trusted as a score: the host checks the packing it
reports (circle packing) or reads the bin assignment from a harness process the candidate cannot
reach (bin packing), and accepts exactly one result line.
"""

from __future__ import annotations

import json
from typing import Any

from rsigym.sandbox.container_scripts import REMOVE_TREE

__all__ = ["RESULT_MARK", "RUNNER_PRELUDE", "CLEAR", "parse_result"]

RESULT_MARK = "@@rsigym-evolution-result@@"

# What the runner (before the candidate) and ``CLEAR`` (after it) remove: see the module docstring.
CLEARING = "import os\n" + REMOVE_TREE + r'''



def _clear_dir(top, me, left):
    try:
        if os.lstat(top).st_uid == me:
            os.chmod(top, 0o755)
        names = os.listdir(top)
    except FileNotFoundError:
        return
    except OSError as exc:
        left.append(f"{top} ({exc.strerror})")
        return
    for name in names:
        path = os.path.join(top, name)
        try:
            if os.lstat(path).st_uid == me:  # another identity's files are not ours to judge
                remove_tree(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            left.append(f"{path} ({exc.strerror or type(exc).__name__})")


def _clear_ipc(me, left):
    libc = None
    for kind in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                rows = [line.split() for line in fh]
        except OSError:
            continue
        if len(rows) < 2:
            continue
        uid_col = rows[0].index("uid")
        for row in rows[1:]:
            if int(row[uid_col]) != me:
                continue
            import ctypes  # only when there is something to remove
            libc = libc or ctypes.CDLL(None, use_errno=True)
            ident = int(row[1])
            removed = {"shm": lambda: libc.shmctl(ident, 0, None), "sem": lambda: libc.semctl(ident, 0, 0),
                       "msg": lambda: libc.msgctl(ident, 0, None)}[kind]()  # 0 = IPC_RMID
            if removed != 0:
                left.append(f"System V {kind} {ident}")


def clear_leftovers(header):
    """Remove what the user owns in the work dir (the cwd) and the header's shared dirs."""
    me, left = os.getuid(), []
    for top in [os.getcwd(), *header.get("shared_dirs", [])]:
        _clear_dir(top, me, left)
    if header.get("sysv_ipc"):
        _clear_ipc(me, left)
    return left
'''

# Run after each evaluation, once the candidate's processes are gone (``python3 -I -S -c CLEAR
# <sysv 0|1> <shared dir>...`` in the work dir): prints what it could not remove, one per line.
CLEAR = CLEARING + r'''
import sys
print("\n".join(clear_leftovers({"sysv_ipc": sys.argv[1] == "1", "shared_dirs": sys.argv[2:]})))
'''

RUNNER_PRELUDE = r'''
import json, os, sys, traceback
_header = json.loads(sys.stdin.buffer.readline())
_source = sys.stdin.buffer.read().decode("utf-8", "replace")
_result = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # the candidate's prints go to stderr
MARK = "@@rsigym-evolution-result@@"


def emit(obj):
    _result.write(MARK + json.dumps(obj) + "\n")
    _result.flush()


def describe(prefix, exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "candidate.py"]
    where = f" (candidate.py line {frames[-1].lineno})" if frames else ""
    return f"{prefix}: {type(exc).__name__}: {str(exc)[:300]}{where}"


''' + CLEARING + r'''


class CandidateError(Exception):
    pass


def load_candidate():
    """The candidate's globals, or raises CandidateError with the reason it failed to load."""
    try:
        code = compile(_source, "candidate.py", "exec")
    except SyntaxError as exc:
        raise CandidateError(f"syntax error: {exc.msg} (line {exc.lineno})")
    namespace = {"__name__": "candidate"}
    try:
        exec(code, namespace)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the candidate failed
        raise CandidateError(describe("loading the candidate failed", exc))
    return namespace


_left = clear_leftovers(_header)
# The tail reports this (as its task reports any failure) and does not run the candidate.
LEFTOVERS = None
if _left:
    LEFTOVERS = "the sandbox could not be cleared of an earlier candidate's files: " + ", ".join(_left)[:300]
'''


def parse_result(stdout: str) -> dict[str, Any] | None:
    """The one result object in ``stdout``; None when there is none (killed, or crashed early).

    More than one result line (a candidate writing into the result channel as well) or an
    unreadable one is reported as an error object, never as a result.
    """
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT_MARK)]
    if not lines:
        return None
    if len(lines) > 1:
        return {"error": f"{len(lines)} result lines instead of one (something else wrote to the result channel)"}
    try:
        value = json.loads(lines[0][len(RESULT_MARK):])
    except json.JSONDecodeError:
        return {"error": "the result line is not valid JSON"}
    return value if isinstance(value, dict) else {"error": "the result line is not a JSON object"}
