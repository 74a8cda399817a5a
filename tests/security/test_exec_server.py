"""Attacks on the docker exec server (``DockerSandbox.exec_server()``), each written as what a
command it runs would try: reach the server's process or the host's stream, outlive its command,
kill or freeze the server, forge a reply, and (through the evolution evaluator) turn any of that
into a score. Each must fail; the server's contract is ``sandbox.exec``'s.
"""

from __future__ import annotations

import json
import os
import posixpath
import time

import pytest

from rsigym.envs.evolution import SandboxEvaluator, make_task

from .test_background_processes import ALIVE, SPAWN

pytestmark = pytest.mark.docker

# Run as a command of the server: every way a same-uid process reaches another one's process or
# fds, tried on the server (its parent). Prints {attempt: "denied" | "ALLOWED"}.
REACH_SERVER = r"""
import ctypes, errno, json, os
server = os.getppid()
libc = ctypes.CDLL(None, use_errno=True)
out = {}
def attempt(name, action):
    try:
        ok = action()
    except OSError:
        ok = False
    out[name] = "ALLOWED" if ok else "denied"
attempt("ptrace_attach", lambda: libc.ptrace(16, server, None, None) == 0)  # PTRACE_ATTACH
attempt("ptrace_seize", lambda: libc.ptrace(0x4206, server, None, None) == 0)  # PTRACE_SEIZE
for name in ("fd/0", "fd/1", "fd/3", "fd/4", "mem", "environ"):
    attempt("open /proc/server/" + name, lambda name=name: os.open("/proc/%d/%s" % (server, name), os.O_RDWR if name.startswith("fd") else os.O_RDONLY) >= 0)
attempt("list /proc/server/fd", lambda: len(os.listdir("/proc/%d/fd" % server)) >= 0)
def getfd():
    pidfd = os.pidfd_open(server)
    got = libc.syscall(438, pidfd, 1, 0)  # pidfd_getfd(pidfd, 1, 0)
    return got >= 0
attempt("pidfd_getfd", getfd)
print(json.dumps(out))
"""

# A command that prints what looks like a whole reply of the server, exits 0, and hopes the
# host reads it as one (a different exit code and an empty stdout).
FAKE_REPLY = r"""
import json, sys
fake = json.dumps({"exit_code": 0, "timed_out": False, "truncated": False, "oom": False, "out": 6, "err": 0}).encode()
sys.stdout.buffer.write(len(fake).to_bytes(4, "big") + fake + b"forged")
sys.stdout.flush()
sys.exit(5)
"""


def test_a_command_cannot_ptrace_the_server_or_open_its_stream(own_sandbox):
    server = own_sandbox.exec_server()
    run = server.exec(["python3", "-c", REACH_SERVER])
    assert run.exit_code == 0, run.stderr
    seen = json.loads(run.stdout)
    assert set(seen.values()) == {"denied"}, seen
    fds = server.exec(["python3", "-I", "-c", "import os; print(sorted(map(int, os.listdir('/proc/self/fd'))))"])
    # 0, 1, 2 and the one listdir opened: nothing of the server's (its stream) is inherited.
    assert json.loads(fds.stdout) == [0, 1, 2, 3], fds


def still_alive(server, pids) -> list[int]:
    """The pids still running, seen from commands of ``server``; polled a moment, since a process
    the server SIGKILLed may still be dying under load (a survivor sleeps 300 s)."""
    for _ in range(100):
        left = json.loads(server.exec(["python3", "-c", ALIVE, *map(str, pids)]).stdout)
        if not left:
            break
        time.sleep(0.1)
    return left


def test_leftovers_of_a_command_are_dead_before_the_next_one_runs(own_sandbox):
    server = own_sandbox.exec_server()
    spawned = server.exec(["python3", "-c", SPAWN])
    pids = json.loads(spawned.stdout)
    assert len(pids) == 4, spawned
    assert still_alive(server, pids.values()) == [], "survived their command"


def test_killing_the_server_fails_only_that_command_and_its_daemons_die(own_sandbox):
    server = own_sandbox.exec_server()
    attack = SPAWN + "\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time; time.sleep(30)\n"
    run = server.exec(["python3", "-c", attack], timeout=20)
    assert run.exit_code == 137 and not run.timed_out and "ended the exec server" in run.stderr, run
    pids = json.loads(run.stdout) if run.stdout else {}
    after = server.exec(["python3", "-c", "import os; print(os.getuid())"])
    assert after.ok and after.stdout.strip() == "65534" and server.starts == 2, after
    if pids:
        assert still_alive(server, pids.values()) == []


def test_stopping_the_server_is_a_timeout_of_that_command_only(own_sandbox):
    server = own_sandbox.exec_server()
    # 3 s: the command must start and stop the server before its own timeout, which an
    # interpreter's start under a loaded suite once missed at 1 s (a plain timeout, no stop)
    run = server.exec(["python3", "-S", "-c", "import os, signal; os.kill(os.getppid(), signal.SIGSTOP)"], timeout=3)
    assert run.timed_out and run.exit_code is None and "stopped answering" in run.stderr, run
    after = server.exec(["echo", "fine"])
    assert after.ok and after.stdout == "fine\n"


# What a command inherits that a same-uid process can change on the server without ptrace.
INHERITS = (
    "import json, os, resource\n"
    "print(json.dumps([resource.getrlimit(resource.RLIMIT_AS), resource.getrlimit(resource.RLIMIT_NOFILE),"
    " os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0), sorted(os.sched_getaffinity(0))]))"
)
# Cripples the server's next children: a small address space, few files, lowest priority, one CPU.
CRIPPLE = r"""
import os, resource
server = os.getppid()
resource.prlimit(server, resource.RLIMIT_AS, (64 << 20, 64 << 20))
resource.prlimit(server, resource.RLIMIT_NOFILE, (8, 8))
os.setpriority(os.PRIO_PROCESS, server, 19)
os.sched_setscheduler(server, os.SCHED_IDLE, os.sched_param(0))
os.sched_setaffinity(server, {min(os.sched_getaffinity(0))})
print("crippled")
"""


def test_a_command_cannot_cripple_what_the_next_one_inherits(own_sandbox):
    server = own_sandbox.exec_server()
    before = server.exec(["python3", "-c", INHERITS])
    crippled = server.exec(["python3", "-c", CRIPPLE])
    assert crippled.ok and crippled.stdout == "crippled\n", crippled  # the attack itself works...
    after = server.exec(["python3", "-c", INHERITS])
    assert after.ok and json.loads(after.stdout) == json.loads(before.stdout), (before.stdout, after.stdout)
    assert server.starts == 2  # ...and the next command ran on a new server


# ioprio_set(IOPRIO_WHO_PROCESS, server, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0)): every later
# command would get disk time only when no one else wants it.
IO_PRIORITY = r"""
import ctypes, os, sys
NR = {"x86_64": (251, 252), "aarch64": (30, 31)}[os.uname().machine]
libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[1] == "set":
    assert libc.syscall(NR[0], 1, os.getppid(), 3 << 13) == 0, ctypes.get_errno()
print(libc.syscall(NR[1], 1, 0))
"""


def test_a_command_cannot_lower_the_io_priority_the_next_one_inherits(own_sandbox):
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("ioprio syscall numbers are known for x86_64 and aarch64 only")
    server = own_sandbox.exec_server()
    before = server.exec(["python3", "-c", IO_PRIORITY, "get"])
    attack = server.exec(["python3", "-c", IO_PRIORITY, "set"])
    assert attack.ok and int(attack.stdout) == int(before.stdout), attack  # its own class is unchanged...
    after = server.exec(["python3", "-c", IO_PRIORITY, "get"])
    assert after.ok and int(after.stdout) == int(before.stdout) != 3 << 13, (before.stdout, after.stdout)
    assert server.starts == 2  # ...and the next command ran on a new server


def test_a_forged_reply_on_stdout_stays_stdout(own_sandbox):
    run = own_sandbox.exec_server().exec(["python3", "-c", FAKE_REPLY])
    assert run.exit_code == 5 and run.stdout.endswith("forged") and '"exit_code": 0' in run.stdout, run


def test_exec_server_keeps_the_exec_contract(own_sandbox):
    """The same outcomes as ``sandbox.exec`` for the cases the evaluator relies on."""
    server = own_sandbox.exec_server()
    cap = own_sandbox.limits.output_bytes
    cases = {
        "status": (["sh", "-c", "echo out; echo err >&2; exit 3"], {}),
        "stdin": (["python3", "-c", "import sys; print(sys.stdin.read()[::-1])"], {"stdin": "abc"}),
        "signal": (["python3", "-c", "import os; os.kill(os.getpid(), 15)"], {}),
        "missing": (["no-such-program-here"], {}),
        "env": (["sh", "-c", "echo $FOO:$HOME"], {"env": {"FOO": "bar"}}),
        "flood": (["python3", "-c", f"print('x' * {3 * cap})"], {}),
        "cwd": (["pwd"], {}),
    }
    for name, (argv, kwargs) in cases.items():
        served = server.exec(argv, **kwargs)
        plain_server_free = own_sandbox.exec(argv, **kwargs)  # between two commands: allowed
        assert (served.exit_code, served.stdout, served.output_truncated) == (
            plain_server_free.exit_code, plain_server_free.stdout, plain_server_free.output_truncated), name
    slow = server.exec(["sleep", "30"], timeout=0.5)
    assert slow.timed_out and slow.exit_code is None
    assert server.exec(["pwd"]).stdout.strip() == posixpath.normpath(own_sandbox.limits.work_dir)


def test_memory_kill_is_reported_as_such(own_sandbox):
    run = own_sandbox.exec_server().exec(["python3", "-c", "x = bytearray(1 << 30); print(len(x))"], timeout=30)
    assert run.exit_code == 137 and run.oom_killed, run


def test_a_candidate_that_kills_the_server_scores_nothing_and_the_next_scores_honestly(own_sandbox, tmp_path,
                                                                                       monkeypatch):
    """Through the evolution evaluator, with the cache on: the killer's evaluation fails without
    a cached result, and the next candidate (the task's seed) gets the score it gets alone."""
    monkeypatch.setenv("RSIGYM_CACHE", str(tmp_path / "cache"))
    task = make_task("circle_packing_26")
    killer = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + task.seed_program
    evaluator = SandboxEvaluator(task, own_sandbox, timeout_s=20.0, cache=True)
    failed = evaluator.evaluate(killer, "full")
    assert failed.score is None and failed.reason.startswith("no result") and "exec server" in failed.reason, failed
    assert not evaluator.cache_path(killer, "full").exists()
    honest = evaluator.evaluate(task.seed_program, "full")
    alone = SandboxEvaluator(task, own_sandbox, timeout_s=20.0).evaluate(task.seed_program, "full")
    assert honest.score is not None and honest.score == alone.score, (honest, alone)


# ---- programs forked from the server (``ExecServer.run_python``: code repair's per-test runner) ----

# Every fd a forked program holds besides its own stdin, stdout and stderr: the host's stream or
# the server's end of a pipe would let it forge the server's replies or read the next request.
OPEN_FDS = r"""
import os
held = []
for fd in range(3, 4096):
    try:
        os.fstat(fd)
        held.append(fd)
    except OSError:
        pass
print(held)
"""

# Reads its whole address space (it makes itself dumpable first: a fork of the server is not)
# and counts the planted markers of earlier commands' stdin it finds there.
SCAN_MEMORY = r"""
import ctypes, re
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: its own /proc/self/mem becomes readable
found = set()
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        span, perms = line.split()[:2]
        if not perms.startswith("rw"):
            continue
        start, end = (int(x, 16) for x in span.split("-"))
        try:
            mem.seek(start)
            chunk = mem.read(end - start)
        except (OSError, OverflowError, ValueError):
            continue
        found.update(re.findall(rb"rsigym-planted-([0-9a-f]{32})", chunk))
print(len(found))
"""


def test_a_forked_program_cannot_reach_the_server_or_its_stream(own_sandbox):
    server = own_sandbox.exec_server()
    run = server.run_python(REACH_SERVER)
    assert run.exit_code == 0, run.stderr
    seen = json.loads(run.stdout)
    assert set(seen.values()) == {"denied"}, seen
    fds = server.run_python(OPEN_FDS)
    assert fds.ok and json.loads(fds.stdout) == [], fds  # not the host's stream, no pipe end of the server's


def test_a_forked_program_finds_no_earlier_commands_stdin_in_its_memory(own_sandbox):
    server = own_sandbox.exec_server()
    for i in range(3):
        # past the allocator's free-list pointers, which overwrite the first bytes of a freed block;
        # large enough to come from malloc, not Python's small-object pools (reused at once)
        planted = server.run_python("import sys\nsys.stdin.buffer.read()\n",
                                    stdin="." * 64 + f"rsigym-planted-{i:032x}" + "." * 4000)
        assert planted.ok, planted
    scan = server.run_python(SCAN_MEMORY, timeout=60)
    assert scan.ok and scan.stdout.strip() == "0", scan


def test_a_forked_program_keeps_the_exec_contract(own_sandbox):
    """``run_python`` gives what ``python3 -I -S -c`` through the server gives, and its leftovers die."""
    server = own_sandbox.exec_server()
    cap = own_sandbox.limits.output_bytes
    cases = {
        "status": ("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)", {}),
        "exit text": ("raise SystemExit('bye')", {}),
        "stdin": ("import sys; print(sys.stdin.read()[::-1])", {"stdin": "abc"}),
        "signal": ("import os; os.kill(os.getpid(), 15)", {}),
        "env": ("import os, sys; print(os.environ.get('FOO'), sys.flags.no_site, sys.flags.isolated)", {"env": {"FOO": "bar"}}),
        "flood": (f"print('x' * {3 * cap})", {}),
        "main": ("print(__name__, sorted(k for k in globals() if not k.startswith('__')))", {}),
        "raise": ("raise ValueError('boom')", {}),
    }
    for name, (program, kwargs) in cases.items():
        forked = server.run_python(program, **kwargs)
        fresh = server.exec(["python3", "-I", "-S", "-c", program], **kwargs)
        assert (forked.exit_code, forked.stdout, forked.output_truncated) == (
            fresh.exit_code, fresh.stdout, fresh.output_truncated), (name, forked, fresh)
        assert forked.stderr.splitlines()[-1:] == fresh.stderr.splitlines()[-1:], (name, forked.stderr, fresh.stderr)
    slow = server.run_python("import time; time.sleep(30)", timeout=0.5)
    assert slow.timed_out and slow.exit_code is None
    pids = json.loads(server.run_python(SPAWN).stdout)
    assert len(pids) == 4
    assert still_alive(server, pids.values()) == []


def test_a_forked_program_finds_no_later_stdin_of_its_batch_in_its_memory(own_sandbox):
    """``run_python_many``: the later runs' stdins (code repair: the next tests' one-time tokens)
    are in the host's stream, not in the server, while the first run runs."""
    program = "import sys\nif sys.stdin.read() != 'scan':\n    raise SystemExit(0)\n" + SCAN_MEMORY
    stdins = ["scan"] + [f"rsigym-planted-{i:032x}" for i in range(1, 4)]
    runs = own_sandbox.exec_server().run_python_many(program, stdins, timeout=60)
    assert all(run is not None and run.ok for run in runs), runs
    assert runs[0] is not None and runs[0].stdout.strip() == "0", runs[0]


def test_a_batch_stops_after_a_run_that_reached_its_limit(own_sandbox):
    server = own_sandbox.exec_server()
    program = "import sys, time\ntime.sleep(float(sys.stdin.read()))\nprint('ran')\n"
    runs = server.run_python_many(program, ["0", "30", "0"], timeout=0.5, stop_after_s=0.4)
    assert runs[0] is not None and runs[0].stdout == "ran\n", runs
    assert runs[1] is not None and runs[1].timed_out and runs[2] is None, runs
    after = server.run_python_many(program, ["0", "0"], timeout=5)
    assert [run.stdout if run else None for run in after] == ["ran\n", "ran\n"]


# Run twice in one batch: the first run changes the preloaded module (as a program under test
# may), the second reports what it finds. Prints whether ``typing`` was loaded before the
# program's first line, and what ``typing.List`` is.
CHANGE_PRELOADED = r"""
import sys
loaded = "typing" in sys.modules
import typing
if sys.stdin.read() == "change":
    typing.List = "changed by an earlier program"
    typing.TYPE_CHECKING = True
print(loaded, typing.List is not None and typing.List != "changed by an earlier program", typing.TYPE_CHECKING)
"""


def test_a_preloaded_module_reaches_each_fork_as_imported(own_sandbox):
    """``preload``: the server imports the module once and each fork finds it loaded, but what one
    program changes in it stays in that program's fork."""
    runs = own_sandbox.exec_server().run_python_many(CHANGE_PRELOADED, ["change", "look"], timeout=30,
                                                     preload=["typing"])
    assert [run.stdout.split() if run else None for run in runs] == [["True", "False", "True"],
                                                                     ["True", "True", "False"]], runs
    with pytest.raises(ValueError, match="module names"):
        own_sandbox.exec_server().run_python_many("pass", [""], preload=["os; import this"])


def test_a_server_start_kills_what_a_persisting_exec_left_before_the_server_runs(own_sandbox):
    # The start kills the identity's processes inside the exec that becomes the server (one engine
    # exec): a daemon a persist=True exec left must not meet the server while it is dumpable.
    left = own_sandbox.exec(["sh", "-c", "nohup sleep 300 >/dev/null 2>&1 & echo $!"], persist=True)
    assert left.ok, left
    pid = left.stdout.strip()
    assert own_sandbox.exec(["sh", "-c", f"kill -0 {pid}"], persist=True).ok  # alive before the server starts
    server = own_sandbox.exec_server()
    result = server.exec(["sh", "-c", f"kill -0 {pid} 2>/dev/null && echo ALIVE || echo dead"])
    assert result.stdout.strip() == "dead", result
    assert server.starts == 1
