"""Attack 4: ``/dev/shm`` survived the reset (data leaked across pool users, and 64 MB stayed
charged to the next user's memory limit), and nothing checked that a reset had worked.

Now the reset empties every writable place of both identities (work dir, harness dir, /tmp,
/dev/shm, /dev/mqueue, System V IPC), then a third uid verifies it; a reset that leaves
anything fails the lease and the pool discards the container.
"""

from __future__ import annotations

import json
import time

import pytest

from rsigym.errors import SandboxError
from rsigym.sandbox import DockerPool, SandboxLimits
from rsigym.sandbox import docker as docker_provider
from rsigym.sandbox.container_scripts import INIT_UID

from .test_exec_server import REACH_SERVER, SCAN_MEMORY

pytestmark = pytest.mark.docker

# Leaves something in every writable place an exec user can reach, including a directory it
# locked (mode 000), a POSIX message queue and a System V shared memory segment.
LITTER = r"""
import ctypes, os, sys
home = sys.argv[1]
for path in (home + "/f", "/tmp/f-%d" % os.getuid(), "/dev/shm/f-%d" % os.getuid()):
    open(path, "w").write("previous user's data")
os.makedirs(home + "/locked/deeper", exist_ok=True)
open(home + "/locked/deeper/x", "w").write("x")
os.chmod(home + "/locked", 0)
libc = ctypes.CDLL(None, use_errno=True)
libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
assert libc.mq_open(b"/leak-%d" % os.getuid(), os.O_CREAT | os.O_RDWR, 0o600, None) >= 0, ctypes.get_errno()
assert libc.shmget(1000 + os.getuid() % 1000, 4096, 0o1000 | 0o600) >= 0, ctypes.get_errno()  # IPC_CREAT
"""
# Everything an exec can see of what a previous lease left.
SURVEY = r"""
import json, os
seen = {top: sorted(os.listdir(top)) for top in ("/work", "/harness", "/tmp", "/dev/shm", "/dev/mqueue")}
for kind in ("shm", "sem", "msg"):
    seen["sysv_" + kind] = open("/proc/sysvipc/" + kind).read().splitlines()[1:]
print(json.dumps(seen))
"""
EMPTY = {top: [] for top in ("/work", "/harness", "/tmp", "/dev/shm", "/dev/mqueue", "sysv_shm", "sysv_sem", "sysv_msg")}


def survey(sb) -> dict:
    result = sb.exec(["python3", "-c", SURVEY])
    assert result.ok, result
    return json.loads(result.stdout)


def test_reset_empties_every_writable_place_of_both_identities(own_sandbox):
    own_sandbox.write_files({"h.txt": "harness file"}, owner="harness")
    for identity, home in (("user", "/work"), ("harness", "/harness")):
        result = own_sandbox.exec(["python3", "-c", LITTER, home], as_user=identity)
        assert result.ok, result
    before = survey(own_sandbox)
    assert all(before[top] for top in EMPTY if top != "sysv_sem" and top != "sysv_msg"), before
    own_sandbox.reset()
    assert survey(own_sandbox) == EMPTY


def test_dev_shm_data_and_memory_do_not_reach_the_next_user(docker_client, sandbox_image):
    limits = SandboxLimits(memory_mb=128, pids=64, output_bytes=64_000, file_size_mb=16)
    with DockerPool(sandbox_image, limits, size=1, client=docker_client) as pool:
        first = pool.acquire()
        # 4 files of 15 MB: each under the 16 MB file size limit, 60 MB in all.
        fill = first.exec(["sh", "-c", "for i in 1 2 3 4; do head -c 15M /dev/urandom > /dev/shm/blob$i || exit 1; done"], timeout=60)
        assert fill.ok, fill
        first.close()
        second = pool.acquire()
        try:
            assert second.container_id == first.container_id
            assert second.exec(["ls", "-A", "/dev/shm"]).stdout == ""
            # 60 MB left in /dev/shm plus this would pass the 128 MB limit; alone it fits.
            allocate = second.exec(["python3", "-c", "x = b'x' * (90 * 2**20); print(len(x))"], timeout=60)
            assert allocate.ok and not allocate.oom_killed, allocate
        finally:
            second.close()


def test_a_reset_that_leaves_anything_fails_the_lease_and_the_pool_discards_the_container(
    pool, docker_client, monkeypatch
):
    first = pool.acquire()
    first.write_files({"secret.txt": "previous user"})
    container_id = first.container_id
    monkeypatch.setattr(docker_provider, "WIPE", "pass")  # a reset that forgets to wipe
    first.close()
    assert pool.idle_count == 0  # the verification failed: not kept
    monkeypatch.undo()
    _discarded_and_the_next_lease_is_another_clean_container(pool, docker_client, container_id)


def _discarded_and_the_next_lease_is_another_clean_container(pool, docker_client, container_id: str) -> None:
    assert container_id not in {c["Id"] for c in docker_client.api.containers(all=True)}
    second = pool.acquire()
    try:
        assert second.container_id != container_id
        assert second.exec(["ls", "-A", "/work"]).stdout == ""
    finally:
        second.close()


def test_reset_reports_what_survived(own_sandbox, monkeypatch):
    own_sandbox.write_files({"left.txt": "x"})
    monkeypatch.setattr(docker_provider, "WIPE", "pass")
    with pytest.raises(SandboxError, match="/work/left.txt"):
        own_sandbox.reset()


def _init_server_pid(sb) -> int:
    server = sb._init_server[0]
    assert server is not None and server.pid is not None
    return server.pid


def test_the_verification_runs_in_the_init_server_which_neither_identity_can_signal(own_sandbox):
    own_sandbox.reset()
    pid = _init_server_pid(own_sandbox)  # made by the first reset, kept for the next ones
    for identity in ("user", "harness"):
        attempt = own_sandbox.exec(["sh", "-c", f"kill -STOP {pid} || kill -9 {pid}; kill -0 {pid}"], as_user=identity)
        assert not attempt.ok and "ermitted" in attempt.stderr, attempt  # EPERM: another uid
    own_sandbox.write_files({"left.txt": "x"})
    own_sandbox.reset()
    assert _init_server_pid(own_sandbox) == pid  # the same server answered
    assert survey(own_sandbox)["/work"] == []


def test_a_verification_whose_init_server_is_gone_falls_back_to_an_exec_and_still_fails(own_sandbox, monkeypatch):
    own_sandbox.reset()
    pid = _init_server_pid(own_sandbox)
    own_sandbox.write_files({"left.txt": "x"})
    monkeypatch.setattr(docker_provider, "WIPE", "pass")  # a reset that forgets to wipe
    calls = []
    real = own_sandbox._raw_exec

    def spy(argv, *args, **kwargs):
        calls.append(list(argv))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(own_sandbox, "_raw_exec", spy)
    own_sandbox._init_server[0].close()  # the server cannot answer: as if it had died
    with pytest.raises(SandboxError, match="/work/left.txt"):
        own_sandbox.reset()
    assert any("python3" in argv and docker_provider.VERIFY in argv for argv in calls)  # the fresh exec
    monkeypatch.undo()
    own_sandbox._init_server[0] = None
    own_sandbox.reset()  # a new INIT server, a clean container
    assert _init_server_pid(own_sandbox) != pid
    assert survey(own_sandbox) == EMPTY


# Every process but the lister: pid, state, uid, name.
PROCESSES = r"""
import os
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) == os.getpid():
        continue
    try:
        status = dict(l.split(":", 1) for l in open("/proc/%s/status" % pid).read().splitlines() if ":" in l)
    except OSError:
        continue
    print(pid, status["State"].split()[0], status["Uid"].split()[0], status["Name"].strip())
"""


def _processes_once_reaped(sb) -> list[list[str]]:
    """The container's processes, once no zombie is left (a few tries: reaping is at once, the
    listing may run a moment before it)."""
    for _ in range(50):
        rows = [line.split() for line in sb.exec(["python3", "-c", PROCESSES]).stdout.splitlines()]
        if not any(row[1] == "Z" for row in rows):
            return rows
        time.sleep(0.02)
    return rows


def test_pid1_verifies_every_reset_itself_and_reaps_what_the_sweeps_kill(own_sandbox):
    """PID 1 is the container's INIT server: no INIT exec, no second INIT process, per container.
    It still reaps: the background processes each command's sweep kills leave no zombie."""
    for _ in range(3):
        assert own_sandbox.exec(["sh", "-c", "(sleep 300 &); (sleep 300 &); true"]).ok
        assert own_sandbox.exec_server().exec(["sh", "-c", "(sleep 300 &); true"]).ok
        own_sandbox.reset()
    server = own_sandbox._init_server[0]
    assert server is not None and server.pid == 1 and server.starts == 1
    rows = _processes_once_reaped(own_sandbox)
    assert [row for row in rows if row[2] == str(INIT_UID)] == [["1", "S", str(INIT_UID), "python3"]], rows
    assert not any(row[1] == "Z" for row in rows), rows


def test_a_pid1_that_stops_serving_reaps_on_and_the_verification_falls_back_to_an_exec(own_sandbox, monkeypatch):
    """A request PID 1 does not serve (a command to spawn: only the identities' servers do that)
    ends its serving for good, never the container: it reaps on, the host notices the silence,
    and the resets verify through an INIT server started in an exec, still failing on what survived."""
    server = own_sandbox._init_server[0]
    own_sandbox.reset()  # verified by PID 1
    lost = server.exec(["true"], timeout=1)
    assert lost.timed_out and lost.exit_code is None, lost  # no reply: the host's deadline
    assert own_sandbox.is_running()
    assert own_sandbox.exec(["sh", "-c", "(sleep 300 &); true"]).ok
    rows = _processes_once_reaped(own_sandbox)
    assert not any(row[1] == "Z" for row in rows) and ["1", "S", str(INIT_UID), "python3"] in rows, rows
    own_sandbox.write_files({"left.txt": "x"})
    monkeypatch.setattr(docker_provider, "WIPE", "pass")  # a reset that forgets to wipe
    with pytest.raises(SandboxError, match="/work/left.txt"):
        own_sandbox.reset()
    assert own_sandbox._init_server[0].pid not in (None, 1)  # an INIT server in an exec of its own
    monkeypatch.undo()
    own_sandbox.reset()
    assert survey(own_sandbox) == EMPTY


# -- the wipe through a lease's live exec server (``ExecServer.wipe``) ------------------------

def _litter_through_servers(sb) -> None:
    """Litter every writable place of both identities through their exec servers, and leave a
    background process of each (the server's own sweep kills it at the command's end)."""
    sb.write_files({"h.txt": "harness file"}, owner="harness")
    for identity, home in (("user", "/work"), ("harness", "/harness")):
        server = sb.exec_server(identity)
        assert server.exec(["python3", "-c", LITTER, home]).ok
        assert server.exec(["sh", "-c", "nohup sleep 300 >/dev/null 2>&1 &"]).ok


def test_a_lease_that_used_its_exec_servers_is_wiped_by_them_and_leaves_nothing(pool):
    first = pool.acquire()
    _litter_through_servers(first)
    container_id, wiped = first.container_id, first.server_wipes
    first.close()
    second = pool.acquire()
    try:
        # the same container: the INIT verification found no process, file or IPC object left
        assert second.container_id == container_id
        assert second.server_wipes == wiped + 2  # both parts by the servers: no engine exec for either
        assert survey(second) == EMPTY
    finally:
        second.close()


def test_a_server_whose_inherited_limits_a_command_changed_refuses_the_wipe_and_an_exec_does_it(pool):
    """A command lowers its server's open-file limit (prlimit on a same-uid process needs no
    ptrace): the server then refuses the wipe (what it inherits changed) and the reset wipes
    from a fresh exec, as without a server; the next user finds nothing."""
    first = pool.acquire()
    server = first.exec_server()
    assert server.exec(["python3", "-c", LITTER, "/work"]).ok
    lowered = server.exec(["python3", "-c", "import os, resource; "
                           "resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (4, 4))"])
    assert lowered.ok, lowered
    container_id, wiped, pid = first.container_id, first.server_wipes, server.pid
    first.close()
    second = pool.acquire()
    try:
        assert second.container_id == container_id and second.server_wipes == wiped  # the exec did it
        assert survey(second) == EMPTY
        fresh = second.exec_server()  # not the one whose limit was lowered: a new one, with the container's
        limit = fresh.exec(["python3", "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))"])
        assert fresh.pid != pid and limit.ok and limit.stdout.strip() != "(4, 4)", (fresh.pid, pid, limit)
    finally:
        second.close()


def _planted(i: int) -> str:
    return f"rsigym-planted-{i:032x}"


def test_a_server_kept_for_the_next_lease_holds_nothing_of_the_last_ones_commands(pool):
    """The reset keeps a lease's exec server for the next lease (it wipes, then execs a fresh
    interpreter in the same process): a program the next lease forks from it finds none of the
    last lease's argv, environment, stdin, program text or output in its memory (a fork copies the
    server's memory), and can no more reach the server than a program of the lease that started it."""
    first = pool.acquire()
    server = first.exec_server()
    for _ in range(3):
        assert server.exec(["sh", "-c", f"for i in $(seq 200); do echo {_planted(1)}; done; cat >/dev/null"],
                           env={"SECRET": _planted(2)}, stdin="." * 64 + _planted(3) + "." * 4000).ok
        assert server.exec(["sh", "-c", f"echo {_planted(6)} >&2; true {_planted(7)}"]).ok
        assert server.run_python(f"print({_planted(4)!r} * 300)", stdin=_planted(5)).ok
    # the scan sees them in the server that ran them; a server kept without the execve still held
    # three of them in the next lease (its output, stderr and program text; checked by hand)
    seen = server.run_python(SCAN_MEMORY, timeout=60)
    assert seen.ok and int(seen.stdout) >= 3, seen
    pid, container_id = server.pid, first.container_id
    first.close()
    second = pool.acquire()
    try:
        assert second.container_id == container_id
        kept = second.exec_server()
        scan = kept.run_python(SCAN_MEMORY, timeout=60)
        assert kept.pid == pid and kept.starts == 1  # the same process: no engine exec for this lease's server
        assert scan.ok and scan.stdout.strip() == "0", scan
        reach = kept.run_python(REACH_SERVER)
        assert set(json.loads(reach.stdout).values()) == {"denied"}, reach.stdout
    finally:
        second.close()


def test_the_next_leases_first_plain_exec_cannot_reach_the_kept_server(pool):
    """The kept server is dumpable from its execve until its first line: the reset waits for its
    ready frame (sent once it is not) before the container goes back to the pool, so the next
    lease's very first command, a plain exec, finds it closed."""
    first = pool.acquire()
    server = first.exec_server()
    assert server.exec(["true"]).ok
    pid = server.pid
    first.close()
    second = pool.acquire()
    try:
        probe = REACH_SERVER.replace("server = os.getppid()", f"server = {pid}")
        reach = second.exec(["python3", "-c", probe], persist=True)
        assert reach.ok and set(json.loads(reach.stdout).values()) == {"denied"}, reach
        assert second.exec_server().pid == pid
    finally:
        second.close()


def test_a_server_wipe_that_leaves_anything_still_fails_the_lease(pool, docker_client, monkeypatch):
    """The server's wipe saves an exec; the INIT verification stays the wall: a server that
    answers "wiped" having removed nothing fails the lease, and the container is discarded."""
    from rsigym.sandbox import exec_server

    lazy = exec_server.EXEC_SERVER.replace("left, counters = wipe(args[0], int(args[1], 8), args[2:])",
                                           "left, counters = 0, ''")
    assert lazy != exec_server.EXEC_SERVER
    monkeypatch.setattr(exec_server, "EXEC_SERVER", lazy)
    first = pool.acquire()
    assert first.exec_server().exec(["sh", "-c", "echo previous user > /work/secret.txt"]).ok
    container_id = first.container_id
    first.close()
    monkeypatch.undo()
    _discarded_and_the_next_lease_is_another_clean_container(pool, docker_client, container_id)
