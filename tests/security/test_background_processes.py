"""Attack 5: background processes outlive their exec (``nohup``, ``setsid``, double fork) for
the rest of the lease (docker), and ``setsid`` + double fork outlive ``close()`` (local).

Now every process of the exec's identity dies when the exec ends, unless it asked to persist;
a harness exec and a user exec on one sandbox never kill each other's processes.
"""

from __future__ import annotations

import json
import posixpath
import threading
import time

import pytest

from rsigym.errors import SandboxError
from rsigym.sandbox import LocalSandbox

from .conftest import LIMITS

# Starts one background process per escape and prints their pids as JSON; none holds the
# exec's output open, so the exec itself ends at once.
SPAWN = r"""
import json, os, signal, subprocess, sys, time
quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
pids = {"nohup": subprocess.Popen(["nohup", "sleep", "300"], **quiet).pid,
        "setsid": subprocess.Popen(["setsid", "sleep", "301"], **quiet).pid}
def double_fork(name, new_session):
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        if new_session:
            os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
            os.write(w, str(os.getpid()).encode()); os.close(w)
            time.sleep(302)
        os._exit(0)
    os.close(w); os.waitpid(child, 0)
    pids[name] = int(os.read(r, 32)); os.close(r)
double_fork("double_fork", False)
double_fork("setsid_double_fork", True)
print(json.dumps(pids))
"""

# Prints the pids (argv) that still run: present in /proc and not a zombie.
ALIVE = (
    "import json, sys\nalive = []\nfor pid in sys.argv[1:]:\n    try:\n"
    "        state = open('/proc/%s/stat' % pid).read().rsplit(')', 1)[1].split()[0]\n"
    "    except OSError:\n        continue\n    if state not in 'ZX':\n        alive.append(int(pid))\n"
    "print(json.dumps(alive))"
)


def spawn(sb, **kwargs) -> dict[str, int]:
    result = sb.exec(["python3", "-c", SPAWN], timeout=30, **kwargs)
    assert result.ok, result
    return json.loads(result.stdout)


def alive(sb, pids, as_user="user", *, settle: bool = True) -> list[int]:
    """The pids still running; with ``settle``, polls a while for them to go (a SIGKILLed
    process may need a moment to be reaped)."""
    for polls_left in range(100 if settle else 0, -1, -1):  # polls of 0.1 s, not a clock read
        # persist=True: the check must not kill what it looks for.
        result = sb.exec(["python3", "-c", ALIVE, *map(str, pids)], persist=True, as_user=as_user)
        assert result.ok, result
        found = json.loads(result.stdout)
        if not found or not polls_left:
            return found
        time.sleep(0.1)
    raise AssertionError("unreachable: the last poll returns")


def test_nohup_setsid_and_double_forks_die_when_the_exec_ends(any_sandbox):
    pids = spawn(any_sandbox)
    assert set(pids) == {"nohup", "setsid", "double_fork", "setsid_double_fork"}
    assert alive(any_sandbox, pids.values()) == []


@pytest.mark.parametrize("as_user", ["user", "harness"])
def test_persist_keeps_background_processes_until_an_exec_without_it_ends(any_sandbox, as_user):
    pids = spawn(any_sandbox, persist=True, as_user=as_user)
    ids = list(pids.values())
    assert sorted(alive(any_sandbox, ids, as_user, settle=False)) == sorted(ids)  # a daemon for a session
    assert any_sandbox.exec(["true"], as_user=as_user).ok
    assert alive(any_sandbox, ids, as_user) == []


def test_local_close_kills_setsid_and_double_forks_of_persistent_execs():
    sb = LocalSandbox(LIMITS)
    pids = list(spawn(sb, persist=True).values())
    # One that also leaves its group and clears its environment: found by its cwd at close.
    started = sb.exec(["sh", "-c", "setsid env -i sleep 303 >/dev/null 2>&1 & echo $!"], persist=True)
    pids.append(int(started.stdout))
    assert sorted(alive(sb, pids, settle=False)) == sorted(pids)
    checker = LocalSandbox(LIMITS)
    try:
        sb.close()
        assert alive(checker, pids) == []
    finally:
        checker.close()


@pytest.mark.docker
def test_killing_or_tracing_the_exec_wrapper_does_not_save_a_background_process(own_sandbox):
    # The command kills its own wrapper (its parent) so the wrapper's final kill never runs.
    killer = own_sandbox.exec(["sh", "-c", "setsid sleep 304 >/dev/null 2>&1 & echo $!; kill -9 $PPID"])
    assert killer.exit_code == 137
    assert alive(own_sandbox, [int(killer.stdout.split()[0])]) == []
    # Nor can it ptrace the wrapper to skip that kill: an execute-only binary is non-dumpable.
    probe = (
        "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.ptrace(16, os.getppid(), None, None), ctypes.get_errno())"
    )
    traced = own_sandbox.exec(["python3", "-c", probe])
    assert traced.stdout.split() == ["-1", "1"], traced  # EPERM


def wait_for(path: str) -> list[str]:
    """A command that waits (up to 60 s) for ``path`` to appear, then says it survived."""
    return ["sh", "-c", f"i=0; while [ ! -e {path} ]; do sleep 0.1; i=$((i+1)); [ $i -gt 600 ] && exit 3; done; echo survived"]


def test_harness_exec_survives_the_end_and_the_timeout_of_a_user_exec(any_sandbox):
    harness: dict[str, object] = {}
    go = posixpath.join(getattr(any_sandbox, "work_dir", "/work"), "go")
    thread = threading.Thread(target=lambda: harness.update(r=any_sandbox.exec(wait_for(go), as_user="harness", timeout=90)))
    thread.start()
    time.sleep(0.5)
    assert any_sandbox.exec(["sh", "-c", "sleep 100 & true"]).ok  # its end kills the user's processes
    assert any_sandbox.exec(["sleep", "100"], timeout=1).timed_out  # its timeout kills them too
    any_sandbox.write_files({"go": ""})
    thread.join()
    result = harness["r"]
    assert result.ok and result.stdout == "survived\n", result  # type: ignore[attr-defined]


def test_user_exec_survives_the_end_and_the_timeout_of_a_harness_exec(any_sandbox):
    user: dict[str, object] = {}
    go = posixpath.join(any_sandbox.harness_dir, "go")
    thread = threading.Thread(target=lambda: user.update(r=any_sandbox.exec(wait_for(go), timeout=90)))
    thread.start()
    time.sleep(0.5)
    assert any_sandbox.exec(["sh", "-c", "sleep 100 & true"], as_user="harness").ok
    assert any_sandbox.exec(["sleep", "100"], as_user="harness", timeout=1).timed_out
    any_sandbox.write_files({"go": ""}, owner="harness")
    thread.join()
    result = user["r"]
    assert result.ok and result.stdout == "survived\n", result  # type: ignore[attr-defined]


def test_overlapping_execs_of_one_identity_are_refused_unless_both_persist(any_sandbox):
    outcome: dict[str, object] = {}
    thread = threading.Thread(target=lambda: outcome.update(r=any_sandbox.exec(["sleep", "3"], persist=True)))
    thread.start()
    time.sleep(1.0)
    with pytest.raises(SandboxError, match="another exec as 'user'"):
        any_sandbox.exec(["true"])
    assert any_sandbox.exec(["true"], persist=True).ok
    assert any_sandbox.exec(["true"], as_user="harness").ok
    thread.join()
    assert outcome["r"].ok  # type: ignore[attr-defined]


@pytest.mark.docker
def test_user_cannot_signal_trace_or_write_a_harness_process_or_file(own_sandbox):
    own_sandbox.write_files({"data.txt": "harness data", "key.txt": "answer"}, owner="harness")
    own_sandbox.write_files({"key.txt": "answer"}, owner="harness", mode=0o600)
    started = own_sandbox.exec(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], as_user="harness", persist=True)
    pid = started.stdout.strip()
    attack = (
        f"kill -9 {pid}; echo kill=$?; echo x > /harness/data.txt; echo write=$?; rm -f /harness/data.txt; "
        "echo rm=$?; cat /harness/key.txt; echo read=$?; touch /harness/new; echo create=$?; "
        f"python3 -c 'import ctypes; print(\"ptrace\", ctypes.CDLL(None).ptrace(16, {pid}, None, None))'"
    )
    result = own_sandbox.exec(["sh", "-c", attack])
    for step in ("kill=1", "write=2", "rm=1", "read=1", "create=1", "ptrace -1"):
        assert step in result.stdout, result
    assert alive(own_sandbox, [pid], "harness", settle=False) == [int(pid)]
    assert own_sandbox.exec(["cat", "/harness/data.txt"]).stdout == "harness data"
