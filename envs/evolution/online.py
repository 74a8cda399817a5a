"""Online bin packing, enforced: a harness process owns the instances and asks for one item at a time.

Two processes in one sandbox, started together by the evaluator:

* the **harness** (``HARNESS``), run as the sandbox's harness identity: it gets the instances on
  its stdin from the host (they are never in a file), listens on an abstract Unix socket whose
  random name the host gives both sides, and for each item sends ``(item, bins)`` (the remaining
  capacities of the open bins the item fits, then an empty bin) and waits for the candidate's
  scores; it takes the argmax, updates the bins itself and finally prints the bin of every item
  as the one result line. On docker the candidate cannot ptrace, signal or read it (another uid).
* the **candidate** (``CANDIDATE``: the runner of ``harness`` plus this tail), run as the user:
  it connects, loads the candidate, answers each request with ``priority(item, bins)`` and never
  sees an item before it has answered the previous one. Its own output is not a result channel.

Wire format (little-endian): a request is ``u32 n`` then ``n`` float64 ``[item, *bins]``
(``n = 0``: done); a reply is ``u32 n`` then ``n`` float64 scores, or ``u32 ERROR, u32 length``
and an error text (the candidate failed to load, or ``priority()`` raised). The first reply,
before any request, is ``u32 0`` (loaded) or an error. The host still checks every bin's load and
counts the bins (``bin_packing.verify_assignment``).
"""

from __future__ import annotations

from .harness import RUNNER_PRELUDE

__all__ = ["HARNESS", "CANDIDATE", "ERROR_FRAME"]

ERROR_FRAME = 0xFFFFFFFF

HARNESS = r'''
import base64, json, os, socket, struct, sys, time
import numpy as np
MARK = "@@rsigym-evolution-result@@"
ERROR = 0xFFFFFFFF


def emit(obj):
    sys.stdout.write(MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()
    os._exit(0)


class Stop(Exception):
    pass


session = json.loads(sys.stdin.buffer.readline())
task = json.loads(sys.stdin.buffer.readline())
sizes = np.frombuffer(sys.stdin.buffer.read(), dtype="<f8")
deadline = time.monotonic() + float(session["timeout_s"])
capacity, first = float(task["capacity"]), int(task["first"])
bounds = np.cumsum([0] + list(task["items"]))

server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind("\0" + session["socket"])
server.listen(1)
server.settimeout(max(deadline - time.monotonic(), 0.001))
try:
    conn, _ = server.accept()
except OSError:
    emit({"error": "the candidate process never connected"})
server.close()
conn.settimeout(max(deadline - time.monotonic(), 0.001))
reader = conn.makefile("rb")


def reply(expected):
    head = reader.read(4)
    if len(head) < 4:
        raise Stop("the candidate process ended without answering")
    (n,) = struct.unpack("<I", head)
    if n == ERROR:
        (length,) = struct.unpack("<I", reader.read(4))
        raise Stop(reader.read(min(length, 2000)).decode("utf-8", "replace"))
    if n != expected:
        raise Stop(f"the candidate answered {n} scores for {expected} bins")
    data = reader.read(8 * n)
    if len(data) < 8 * n:
        raise Stop("the candidate process ended without answering")
    return np.frombuffer(data, dtype="<f8")


assignments = []
try:
    reply(0)  # loaded
    for index in range(len(bounds) - 1):
        items = sizes[bounds[index]:bounds[index + 1]]
        remaining = np.zeros(len(items))
        assign = np.zeros(len(items), dtype=np.int32)
        opened = 0
        for k, item in enumerate(items):
            fits = np.nonzero(remaining[:opened] >= item)[0]
            request = np.empty(len(fits) + 2)
            request[0], request[1:-1], request[-1] = item, remaining[fits], capacity
            conn.sendall(struct.pack("<I", len(request)) + request.astype("<f8").tobytes())
            choice = int(np.argmax(reply(len(fits) + 1)))
            if choice == len(fits):
                remaining[opened] = capacity - item
                assign[k] = opened
                opened += 1
            else:
                remaining[fits[choice]] -= item
                assign[k] = fits[choice]
        assignments.append(base64.b64encode(assign.tobytes()).decode())
    conn.sendall(struct.pack("<I", 0))
except Stop as exc:
    emit({"error": str(exc)})
except OSError as exc:  # a timeout, or the connection reset
    emit({"error": f"the candidate process stopped answering ({type(exc).__name__})"})
emit({"first": first, "assignments": assignments})
'''

CANDIDATE = RUNNER_PRELUDE + r'''
import socket, struct, time
import numpy as np
ERROR = 0xFFFFFFFF
_sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
_deadline = time.monotonic() + float(_header["connect_timeout_s"])
while True:
    try:
        _sock.connect("\0" + _header["socket"])
        break
    except OSError:  # the harness is not listening yet
        if time.monotonic() > _deadline:
            os._exit(3)
        time.sleep(0.002)
_reader = _sock.makefile("rb")


def _fail(text):
    data = text.encode("utf-8", "replace")[:2000]
    _sock.sendall(struct.pack("<II", ERROR, len(data)) + data)
    os._exit(0)


if LEFTOVERS:
    _fail(LEFTOVERS)
try:
    candidate = load_candidate()
except CandidateError as exc:
    _fail(str(exc))
priority = candidate.get("priority")
if not callable(priority):
    _fail("the candidate defines no function priority(item, bins)")
_sock.sendall(struct.pack("<I", 0))
while True:
    _head = _reader.read(4)
    if len(_head) < 4:
        os._exit(0)
    (_n,) = struct.unpack("<I", _head)
    if _n == 0:
        os._exit(0)
    _request = np.frombuffer(_reader.read(8 * _n), dtype="<f8")
    item, bins = float(_request[0]), _request[1:].astype(float)  # a writable copy, as before
    try:
        scores = np.asarray(priority(item, bins), dtype=float)
        if scores.shape != bins.shape:
            raise ValueError(f"priority returned shape {scores.shape} for {bins.shape[0]} bins")
    except BaseException as exc:
        _fail(describe("priority() failed", exc))
    _sock.sendall(struct.pack("<I", _n - 1) + scores.astype("<f8").tobytes())
'''
