"""The sandboxed side of a test run: one fresh interpreter per (program, test), judged by the harness.

Two programs, both passed inline to ``python3 -I -c`` (no file a program could overwrite):

* ``COLLECTOR`` runs **once per batch as the harness identity** (on docker another uid, which the
  programs cannot ptrace, signal or read). It gets every job on its stdin from the host, listens
  on an abstract Unix socket whose random name the host gives both sides, and **runs each test
  itself**: the test's statements execute in the collector, in the **checker namespace**: the
  collector's own ``builtins``, the problem's helper functions (``Job.helpers``: the prompt's
  ``poly`` or ``encode_cyclic``, trusted text from the host) and the test module's prelude; of the
  program only its entry function, as ``candidate`` and under its entry name (``Job.program_names``),
  bound to a proxy whose calls go over the socket. A program that defines ``abs``, ``str`` or
  ``poly`` changes what its own code calls, never what the test calls. So a test's expected
  values, its assertions and the other tests never leave the collector, and pass/fail is decided
  where the program cannot write.
  It prints one marked line (``repr`` of plain data) with every test's outcome once every test
  reported, or when the host sends the end token.
* ``RUNNER`` runs **once per test as the user**, a fresh interpreter with nothing in it but its
  own job (started by the host after the previous one and every process it left are gone; on
  docker a fork of the pristine exec server, ``ExecServer.run_python_many``, which costs no
  interpreter start, holds no earlier runner's token or the server's stream, and finds a few
  stdlib modules such as ``typing`` loaded; locally ``python3 -I -S``). Its job comes from the host
  on its stdin: the socket name, its one-time token, the program's source, entry name and prelude,
  and the program names the test reads (never the test). It connects and sends its token (before
  any of the program runs), loads the program (under an alarm) and reports what the program binds
  to those names, then answers calls: decode the arguments, call under an alarm set to what is left
  of the test's time, encode the value. Its stdin, stdout and stderr are ``/dev/null`` while the
  program runs: the socket is its only channel. Nothing comes back before the test's first call:
  the collector reads the token, runs the prelude and reads the test's names while the runner
  loads.

Values cross as tagged tuples (``enc``/``dec`` on both sides): exact builtin types (int, float with
nan/inf, str, bytes, bool, None, list, tuple, dict, set, frozenset, complex) are rebuilt in the
collector; anything else stays in the runner and the collector gets an opaque handle (its repr,
equal only to itself, passable back as an argument). An exception the program raises is rebuilt
as a subclass of its nearest builtin base with the same name and message, so a test that expects
it catches it and the outcome reads ``error:<Type>`` as before. A program can thus only influence
its outcome through the values it returns: returning the right values is solving the problem.

A token used twice (a program reconnecting to forge), an unreadable frame, a frame out of turn, or
a runner that ends (a signal, ``os._exit``) before answering is a failure of that test, never a
result. A runner's frame is judged on its bytes before ``compile`` sees it (``reply_reader``, inlined
into the collector: ``MAX_REPLY_BYTES``, then ``MAX_REPLY_TOKENS`` and a literal's grammar checked
on the bytes): a larger one fails its own test with type ``oversized``, one that is no literal
display as ``broken``, and what a frame costs the collector stays bounded (about 20 MB and a
fraction of a second) whatever a runner sends, so the batch's other tests keep their results.

Statuses: ``pass | fail | error | timeout`` (check mode), ``ok`` with ``repr`` and ``literal``
(eval mode), as ``execution.JobResult`` reads them.
"""

from __future__ import annotations

import ast
import inspect
import json
from typing import Any

from . import reply_reader

__all__ = ["RESULT_MARK", "RUNNER", "COLLECTOR", "END_PROGRAM", "TRUSTED_BATCH", "parse_batch"]

RESULT_MARK = "@@rsigym-coderepair@@"

# Framing for both sides. A runner starts once per test, so it imports only built-in modules (no
# json, socket or signal: their imports cost more than the interpreter on a loaded machine). The
# collector sends ``marshal`` (its own data); a runner sends ``repr`` text of tuples, strings,
# numbers, True/False/None and dicts, which the collector reads with ``read_literal`` (no code runs).
_WIRE = r"""
import _socket, marshal, time
MAX_FRAME = 8 * 1024 * 1024


class Oversized(ValueError):
    pass


def send_frame(sock, data):
    sock.sendall(len(data).to_bytes(4, "little") + data)


def recv_frame(sock, limit=MAX_FRAME):
    # the length is checked before a byte of the frame is read
    n = int.from_bytes(_read(sock, 4), "little")
    if n > limit:
        raise Oversized("a frame of %d bytes" % n)
    return _read(sock, n)


def _read(sock, n):
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("the other side ended")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def connect(name, wait_s):
    # the collector may still be starting (one engine exec)
    deadline = time.monotonic() + wait_s
    while True:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.connect("\0" + name)
            return sock
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise SystemExit(3)
            time.sleep(0.002)
"""

RUNNER = _WIRE + r"""
import os, sys, _signal
_job = marshal.loads(sys.stdin.buffer.read())
_null = os.open(os.devnull, os.O_RDWR)
for _fd in (0, 1, 2):
    os.dup2(_null, _fd)
sys.setrecursionlimit(3000)
_sock = connect(_job.pop("socket"), _job.pop("wait_s"))
send_frame(_sock, repr({"token": _job.pop("token")}).encode())


def _send(obj):
    send_frame(_sock, repr(obj).encode("utf-8", "surrogatepass"))


class _TestTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _TestTimeout()


_signal.signal(_signal.SIGALRM, _alarm)
_handles = []
_SEQ = {list: "l", tuple: "t", set: "s", frozenset: "fs"}


def _enc(v, depth=0):
    t = type(v)
    if depth > 200:
        return _opaque(v)
    if v is None or t is bool or t is str:
        return ("v", v)
    if t is int:
        return ("i", hex(v))
    if t is float:
        return ("f", repr(v))
    if t is complex:
        return ("c", repr(v.real), repr(v.imag))
    if t is bytes:
        return ("b", v.hex())
    if t in _SEQ:
        return (_SEQ[t], tuple(_enc(x, depth + 1) for x in v))
    if t is dict:
        return ("d", tuple((_enc(k, depth + 1), _enc(x, depth + 1)) for k, x in v.items()))
    return _opaque(v)


def _opaque(v):
    _handles.append(v)
    try:
        text = repr(v)[:20000]
    except BaseException:
        text = "<unprintable>"
    return ("o", len(_handles) - 1, text)


def _dec(e):
    tag = e[0]
    if tag == "v":
        return e[1]
    if tag == "i":
        return int(e[1], 16)
    if tag == "f":
        return float(e[1])
    if tag == "c":
        return complex(float(e[1]), float(e[2]))
    if tag == "b":
        return bytes.fromhex(e[1])
    if tag == "d":
        return {_dec(k): _dec(x) for k, x in e[1]}
    if tag == "o":
        return _handles[e[1]]
    if tag == "r":
        return _resolve(e[1])
    return {"l": list, "t": tuple, "s": set, "fs": frozenset}[tag](_dec(x) for x in e[1])


def _short(exc):
    return (type(exc).__name__ + ": " + str(exc))[:200]


namespace = {"__name__": "candidate"}


def _resolve(name):
    return _function if name == "candidate" else namespace[name]


try:
    _signal.setitimer(_signal.ITIMER_REAL, _job["timeout_s"])
    exec(compile(_job["source"], "candidate.py", "exec"), namespace)
    if _job["prelude"]:
        exec(compile(_job["prelude"], "tests.py", "exec"), namespace)
    _signal.setitimer(_signal.ITIMER_REAL, 0)
    _function = namespace[_job["entry"]]
    if not callable(_function):
        raise TypeError(_job["entry"] + " is not callable")
except _TestTimeout:
    _send({"load": "timeout"})
    os._exit(0)
except BaseException as exc:
    _signal.setitimer(_signal.ITIMER_REAL, 0)
    _send({"load": "error", "detail": _short(exc), "type": type(exc).__name__})
    os._exit(0)
_names = {}
for _name in _job["names"]:
    if _name == "candidate":
        _names[_name] = ("callable",)
    elif _name not in namespace:
        _names[_name] = ("missing",)
    else:
        _value = namespace[_name]
        _names[_name] = ("callable",) if callable(_value) else _enc(_value)
_send({"load": "ok", "names": _names})
while True:
    _call = marshal.loads(recv_frame(_sock))
    if "end" in _call:
        os._exit(0)
    try:
        _target = _resolve(_call["name"])
        _args = [_dec(a) for a in _call["args"]]
        _kwargs = {k: _dec(a) for k, a in _call["kwargs"].items()}
        _signal.setitimer(_signal.ITIMER_REAL, max(_call["budget_s"], 0.001))
        _value = _target(*_args, **_kwargs)
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _reply = {"value": _enc(_value)}
    except _TestTimeout:
        _reply = {"timeout": True}
    except BaseException as exc:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        try:
            _reply = {"raise": type(exc).__name__, "bases": tuple(c.__name__ for c in type(exc).__mro__),
                      "message": str(exc)[:2000]}
        except BaseException:
            _reply = {"raise": type(exc).__name__, "bases": ("Exception",), "message": "<unprintable>"}
    _send(_reply)
"""

COLLECTOR = _WIRE + inspect.getsource(reply_reader) + r"""
import _ast, builtins, os, sys, _signal
MARK = "@@rsigym-coderepair@@"
cfg = marshal.loads(sys.stdin.buffer.read())
deadline = time.monotonic() + cfg["budget_s"]


class TestTimeout(BaseException):
    pass


class Broken(BaseException):
    # The runner ended or broke the protocol: its test fails, whatever the test catches.
    def __init__(self, kind, detail):
        super().__init__(detail)
        self.kind = kind


def _alarm(signum, frame):
    raise TestTimeout()


_signal.signal(_signal.SIGALRM, _alarm)


def read_reply(conn):
    # One runner frame as data, capped before anything parses it (``read_literal``: reply_reader).
    return read_literal(recv_frame(conn, MAX_REPLY_BYTES))


class Opaque:
    # A value that stayed in the runner: equal only to itself.
    def __init__(self, handle, text):
        self.handle, self.text = int(handle), str(text)

    def __repr__(self):
        return self.text


class Remote:
    # A name of the program's namespace; calling it calls it in the runner.
    def __init__(self, conn, name, test_deadline, state):
        self._conn, self._name, self._deadline, self._state = conn, name, test_deadline, state

    def __repr__(self):
        return "<function %s>" % self._name

    def __call__(self, *args, **kwargs):
        try:
            return self._call(args, kwargs)
        except Broken as exc:
            self._state["broken"] = exc  # stands even if the test catches it
            raise

    def _call(self, args, kwargs):
        if "broken" in self._state:
            raise self._state["broken"]
        budget = self._deadline - time.monotonic()
        if budget <= 0:
            raise TestTimeout()
        try:
            send_frame(self._conn, marshal.dumps({"name": self._name, "args": [enc(a) for a in args],
                                                  "kwargs": {str(k): enc(a) for k, a in kwargs.items()},
                                                  "budget_s": budget}))
            self._conn.settimeout(budget + 1.0)
            data = recv_frame(self._conn, MAX_REPLY_BYTES)
        except TestTimeout:
            raise
        except TimeoutError:
            raise TestTimeout()
        except (EOFError, ConnectionError):
            raise Broken("crashed", "the test process ended before it answered")
        except Oversized as exc:
            raise Broken("oversized", "a reply over the cap (%s)" % exc)
        except BaseException as exc:
            raise Broken("broken", "an unreadable reply (%s)" % type(exc).__name__)
        try:
            reply = read_literal(data)
            if not isinstance(reply, dict):
                raise ValueError("not an object")
            if reply.get("timeout") is True:
                raise TestTimeout()
            if "raise" in reply:
                exc = rebuild(reply)
            else:
                return dec(reply["value"])
        except TestTimeout:
            raise
        except Oversized as exc:
            raise Broken("oversized", "a reply over the cap (%s)" % exc)
        except BaseException as exc:
            raise Broken("broken", "an unreadable reply (%s)" % type(exc).__name__)
        raise exc


def rebuild(reply):
    # The program's exception as a subclass of its nearest builtin base, same name and message.
    base = Exception
    for name in reply.get("bases") or ():
        if name in ("SystemExit", "KeyboardInterrupt", "GeneratorExit"):
            break  # rebuilt as plain exceptions: they must not end the collector
        found = getattr(builtins, str(name), None)
        if isinstance(found, type) and issubclass(found, BaseException):
            base = found
            break
    message = str(reply.get("message", ""))
    cls = type(str(reply.get("raise", "Exception"))[:100], (base,), {"__str__": lambda self: message})
    exc = cls.__new__(cls)
    exc.args = (message,)
    return exc


SEQ = {list: "l", tuple: "t", set: "s", frozenset: "fs"}


def enc(v, depth=0):
    t = type(v)
    if depth > 200:
        raise ValueError("an argument nested too deep")
    if v is None or t is bool or t is str:
        return ("v", v)
    if t is int:
        return ("i", hex(v))
    if t is float:
        return ("f", repr(v))
    if t is complex:
        return ("c", repr(v.real), repr(v.imag))
    if t is bytes:
        return ("b", v.hex())
    if t in SEQ:
        return (SEQ[t], tuple(enc(x, depth + 1) for x in v))
    if t is dict:
        return ("d", tuple((enc(k, depth + 1), enc(x, depth + 1)) for k, x in v.items()))
    if t is Opaque:
        return ("o", v.handle)
    if t is Remote:
        return ("r", v._name)
    raise TypeError("cannot pass a %s to the program" % t.__name__)


def dec(e, depth=0):
    if depth > 200 or type(e) is not tuple or not e:
        raise ValueError("bad value")
    tag = e[0]
    if tag == "v":
        if e[1] is None or type(e[1]) in (bool, str):
            return e[1]
        raise ValueError("bad scalar")
    if tag == "i":
        return int(e[1], 16)
    if tag == "f":
        return float(e[1])
    if tag == "c":
        return complex(float(e[1]), float(e[2]))
    if tag == "b":
        return bytes.fromhex(e[1])
    if tag == "o":
        return Opaque(e[1], e[2])
    if tag == "d":
        return {dec(k, depth + 1): dec(x, depth + 1) for k, x in e[1]}
    kind = {"l": list, "t": tuple, "s": set, "fs": frozenset}[tag]
    return kind(dec(x, depth + 1) for x in e[1])


def walk(node):
    todo = [node]
    while todo:
        node = todo.pop()
        yield node
        for field in node._fields:
            child = getattr(node, field, None)
            if isinstance(child, list):
                todo.extend(c for c in child if isinstance(c, _ast.AST))
            elif isinstance(child, _ast.AST):
                todo.append(child)


def read_names(test):
    # Names the test reads and does not bind itself, and "candidate"; those of the unit's program
    # names come from the program (``execution.names_read`` is the host's copy, which tells the
    # runner what to report).
    loads, stores = set(), set()
    for node in walk(compile(test, "test.py", "exec", _ast.PyCF_ONLY_AST)):
        if isinstance(node, _ast.Name):
            (loads if isinstance(node.ctx, _ast.Load) else stores).add(node.id)
        elif isinstance(node, (_ast.Import, _ast.ImportFrom)):
            stores.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (_ast.FunctionDef, _ast.ClassDef)):
            stores.add(node.name)
    return (loads - stores) | {"candidate"}


PRELUDES = {}  # helper or prelude text -> its code: compiled once, run afresh for each test


def checker_scope(helpers, prelude):
    # The test's namespace before the program's entry is bound: the collector's own builtins (never
    # the program's), the problem's helper functions and the test module's prelude (the host's text).
    scope = {"__name__": "tests", "__builtins__": builtins}
    for text in (helpers, prelude):
        if text:
            if text not in PRELUDES:
                PRELUDES[text] = compile(text, "tests.py", "exec")
            exec(PRELUDES[text], scope)
    return scope


def short(exc):
    return (type(exc).__name__ + ": " + str(exc))[:200]


def literal_repr(value):
    # repr(value) and whether it reads back equal, of the same type (eval mode)
    text = repr(value)
    try:
        if len(text) > MAX_REPLY_BYTES:
            raise Oversized("a repr of %d characters" % len(text))
        back = read_literal(text.encode("utf-8", "surrogatepass"), limit=100000)
        literal = back == value and type(back) is type(value)
    except Exception:
        literal = False
    return text, literal


def serve(conn, unit):
    # Run one test against one runner, which got its job from the host and is loading the program
    # already: {"load": ..., "test": ...}
    timeout_s = float(unit["timeout_s"])
    scope = checker_scope(unit["helpers"], unit["prelude"])
    mode, test = unit["mode"], unit["test"]
    # the only names the test takes from the program: its entry, as "candidate" and by name
    names = (read_names(test) & set(unit["program_names"])) | {"candidate"}
    conn.settimeout(timeout_s + 2.0)
    _signal.setitimer(_signal.ITIMER_REAL, timeout_s + 2.0)  # parsing a capped frame is bounded too
    try:
        load = read_reply(conn)
    except (TimeoutError, TestTimeout):
        return {"load": {"load": "timeout"}}
    except (EOFError, OSError):
        return {"load": {"load": "crashed"}}
    except Oversized as exc:
        raise Broken("oversized", "a load report over the cap (%s)" % exc)
    except BaseException:
        raise Broken("broken", "an unreadable load report")
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
    if not isinstance(load, dict) or load.get("load") not in ("ok", "error", "timeout"):
        raise Broken("broken", "an unreadable load report")
    if load["load"] != "ok":
        return {"load": {k: str(load[k])[:300] for k in ("load", "detail", "type") if k in load}}
    reported = load.get("names")
    if not isinstance(reported, dict) or set(reported) != names \
            or any(info != ("callable",) for info in reported.values()):
        raise Broken("broken", "a load report of other names than the entry point's")
    test_deadline = time.monotonic() + timeout_s
    state = {}
    for name in names:
        scope[name] = Remote(conn, name, test_deadline, state)
    _signal.setitimer(_signal.ITIMER_REAL, timeout_s + 0.5)
    try:
        if mode == "eval":
            value = eval(compile(test, "test.py", "eval"), scope)
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            text, literal = literal_repr(value)
            result = {"status": "ok", "repr": text[:20000], "literal": bool(literal)}
        else:
            exec(compile(test, "test.py", "exec"), scope)
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            result = {"status": "pass"}
    except TestTimeout:
        result = {"status": "timeout"}
    except Broken:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        raise
    except AssertionError as exc:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        result = {"status": "fail", "detail": short(exc)}
    except BaseException as exc:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        result = {"status": "error", "type": type(exc).__name__, "detail": short(exc)}
    if "broken" in state:
        raise state["broken"]
    return {"load": {"load": "ok"}, "test": result}


units = cfg["units"]
expected = set(units)  # the collector ends by itself once every test has reported
results = {}
server = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
server.bind("\0" + cfg["socket"])
server.listen(16)
while not expected <= set(results):
    left = deadline - time.monotonic()
    if left <= 0:
        break
    server.settimeout(left)
    try:
        fd, _ = server._accept()
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fd)
    except OSError:
        break
    try:
        conn.settimeout(2.0)
        _signal.setitimer(_signal.ITIMER_REAL, 2.0)
        hello = read_reply(conn)
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        token = hello.get("token") if isinstance(hello, dict) else None
    except BaseException:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        conn.close()
        continue
    if token == cfg["end_token"]:
        conn.close()
        break
    if not isinstance(token, str) or token not in units:
        conn.close()
        continue
    if token in results:  # a second connection with one token: the test's own program forging
        results[token] = {"load": {"load": "ok"}, "test": {"status": "error", "type": "forged",
                                                           "detail": "a second connection for one test"}}
        conn.close()
        continue
    try:
        results[token] = serve(conn, units[token])
    except Broken as exc:
        results[token] = {"load": {"load": "ok"}, "test": {"status": "error", "type": exc.kind, "detail": str(exc)[:200]}}
    except BaseException as exc:
        results[token] = {"load": {"load": "ok"}, "test": {"status": "error", "type": "broken", "detail": short(exc)}}
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        try:
            send_frame(conn, marshal.dumps({"end": True}))
        except BaseException:
            pass
        conn.close()
sys.stdout.write(MARK + repr({"results": results}) + "\n")
sys.stdout.flush()
"""

# Programs the simulator itself generated (reference solutions, the catalogue's mutants): one
# process of the harness identity runs a whole batch, each job in a forked child with its output
# sent to /dev/null, a per-test alarm and a per-job deadline (the rest of its tests then read
# ``timeout``). Never used for an agent's or a model's program. Its tests see the same checker
# namespace as the collector's (the entry function, the helpers, the prelude, clean builtins).
TRUSTED_BATCH = r'''
import ast, builtins, json, os, select, signal, sys, time
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
    checker = [compile(text, "tests.py", "exec") for text in (job.get("helpers"), job.get("prelude")) if text]
    for index, test in enumerate(job["tests"]):
        if job["mode"] == "check" and index and timed_out:
            send({"status": "timeout", "detail": "not run after an earlier test timed out"})
            continue
        scope = {"__name__": "tests", "__builtins__": builtins}
        try:
            signal.setitimer(signal.ITIMER_REAL, job["timeout_s"])
            for code in checker:
                exec(code, scope)
            scope["candidate"] = scope[job["entry"]] = function
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


# The host's last command of a batch when some test never reported: tells the collector to print.
END_PROGRAM = _WIRE + r"""
import sys
_name, _token, _wait = sys.stdin.buffer.read().decode().split()
send_frame(connect(_name, float(_wait)), repr({"token": _token}).encode())
"""


def parse_batch(stdout: str) -> dict[str, Any] | None:
    """The ``results`` object of the one result line in ``stdout``; None when there is none.

    The collector writes ``repr`` text (the trusted batch writes JSON): read as data, never run.
    """
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT_MARK)]
    if len(lines) != 1:
        return None
    text = lines[0][len(RESULT_MARK):]
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    results = value.get("results") if isinstance(value, dict) else None
    return results if isinstance(results, dict) else None
