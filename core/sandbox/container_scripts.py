"""Programs the docker provider runs inside its containers, and the uids they run as.

Kept apart from the provider so each can be read, and run by hand, on its own. Each is a
``python3 -c`` program or an ``sh -c`` line: the image has python3 and a POSIX shell, no more.

Three uids, none with any capability (the container drops them all):

* ``INIT_UID`` 65532 runs PID 1 (the reaper) and owns ``/rsigym`` (the exec wrapper) and ``/tmp``;
  the reset's verification runs as it too. Neither of the others can ptrace it (ptrace needs the
  same uid or CAP_SYS_PTRACE) or signal it (kill needs the same uid or CAP_KILL), so a program
  cannot take PID 1 over and outlive the lease through it.
* ``HARNESS_UID`` 65533 runs ``as_user="harness"`` execs and owns ``/harness``.
* ``USER_UID`` 65534 (nobody) runs the untrusted programs and owns the work dir.
"""

from __future__ import annotations

__all__ = [
    "INIT_UID",
    "HARNESS_UID",
    "USER_UID",
    "HARNESS_DIR",
    "WRAPPER_DIR",
    "WRAPPER",
    "SHARED_DIRS",
    "REAPER",
    "SETUP_INIT",
    "SETUP_HARNESS",
    "WRAP",
    "OOM_READ",
    "KILL_ALL",
    "EXTRACT",
    "READ",
    "WIPE",
    "VERIFY",
]

INIT_UID, HARNESS_UID, USER_UID = 65532, 65533, 65534
HARNESS_DIR = "/harness"
WRAPPER_DIR = "/rsigym"
WRAPPER = f"{WRAPPER_DIR}/sh"
# Writable by both identities (mode 1777): each identity's reset removes what it owns there.
SHARED_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")

# PID 1 of the container: reaps orphans of killed commands. It waits for SIGCHLD rather than
# polling, so killed processes free their pids-limit slots at once (a reset right after a fork
# bomb needs them).
REAPER = """
import os, signal
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    signal.sigwait({signal.SIGCHLD})
"""

# Run as INIT_UID once the container (re)starts. The wrapper is a copy of dash that only its
# owner may read (0711): the kernel marks a process that execs a binary it cannot read as
# non-dumpable, so the user cannot ptrace its own wrapper to skip the kill at its end. The
# tmpfs mounts come up 1777 (runc ignores mode= on a fresh mount point): close them to others.
SETUP_INIT = ["sh", "-c", f"cp /bin/dash {WRAPPER} && chmod 0711 {WRAPPER} && chmod 0755 {WRAPPER_DIR}"]
SETUP_HARNESS = ["chmod", "0755", HARNESS_DIR]

# The exec wrapper, run by WRAPPER as the exec's identity: run the command (through env, so a
# shell builtin such as `exit` cannot stand in for it), then kill every other process of the
# identity (kill -1 spares only the caller and PID 1; atomic against fork), then pass the
# command's status on. If the user kills the wrapper instead, the exec's status is >= 128 and
# the provider runs KILL_ALL itself.
WRAP = '/usr/bin/env -- "$@"; rc=$?; kill -9 -1 2>/dev/null; exit $rc'

# cgroup v2, then v1; `exit 0` so a missing file is not an exec failure.
OOM_READ = ["sh", "-c", "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null; exit 0"]
KILL_ALL = ["sh", "-c", "kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null; exit 0"]

# Extracts a tar from stdin into the cwd (the work dir or the harness dir), refusing anything but
# plain files inside it, and giving each file its member's mode; put_archive cannot write into a
# tmpfs mounted on a read-only root.
EXTRACT = r"""
import os, sys, tarfile
root = os.path.realpath(os.getcwd())
with tarfile.open(fileobj=sys.stdin.buffer, mode="r|") as tar:
    for m in tar:
        if m.name.startswith("/") or ".." in m.name.split("/") or not m.isfile():
            sys.exit("refused tar member %r" % m.name)
        dest = os.path.join(root, m.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if os.path.commonpath([root, os.path.realpath(os.path.dirname(dest))]) != root:
            sys.exit("path escapes the sandbox dir: %r" % m.name)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out, tar.extractfile(m) as src:
            os.fchmod(out.fileno(), m.mode & 0o777)
            while chunk := src.read(1 << 20):
                out.write(chunk)
"""

# read_file: refuse what is not a regular file inside the work dir (a FIFO would block, a device
# would never end, a symlink, of the file or of a dir above it, may lead anywhere), then print
# it. Exit 2: missing, 3: refused. A file swapped after the check is bounded by the timeout.
READ = r"""
f=$1
case "$f" in /*) ;; *) f="$PWD/$f" ;; esac
r=$(realpath -e -- "$f" 2>/dev/null) || { echo "no such file" >&2; exit 2; }
case "$r" in "$2"/*) ;; *) echo "resolves outside the work dir" >&2; exit 3 ;; esac
[ -f "$r" ] || { echo "not a regular file" >&2; exit 3; }
exec cat -- "$r"
"""

# One identity's part of the reset, run as that identity: kill all its processes, remove its
# System V IPC objects, empty its own dir (argv[1]) and what it owns in the shared dirs (making
# directories it locked enterable first), and give its own dir back its mode (argv[2], octal).
# One python process and no forks: right after a fork bomb the pids limit may leave room for a
# single process. Prints the oom_kill counters; exits 1 if anything it owns is left.
WIPE = r"""
import ctypes, os, sys
for _ in range(2):
    try:
        os.kill(-1, 9)
    except ProcessLookupError:
        pass
uid, home = os.getuid(), sys.argv[1]
def wipe(path):
    if os.path.isdir(path) and not os.path.islink(path):
        if os.lstat(path).st_uid == uid:
            os.chmod(path, 0o700)
        for name in os.listdir(path):
            wipe(os.path.join(path, name))
        os.rmdir(path)
    else:
        os.unlink(path)
left = 0
os.chmod(home, int(sys.argv[2], 8))
for top in (home, *sys.argv[3:]):
    for name in os.listdir(top):
        path = os.path.join(top, name)
        try:
            if top == home or os.lstat(path).st_uid == uid:
                wipe(path)
        except (OSError, RecursionError):
            left += 1
libc = ctypes.CDLL(None, use_errno=True)
removers = {"shm": lambda i: libc.shmctl(i, 0, None), "sem": lambda i: libc.semctl(i, 0, 0),
            "msg": lambda i: libc.msgctl(i, 0, None)}  # 0 is IPC_RMID
for kind, remove in removers.items():
    with open("/proc/sysvipc/" + kind) as fh:
        header = fh.readline().split()
        for line in fh:
            row = dict(zip(header, line.split()))
            if int(row["uid"]) == uid and remove(int(row[kind + "id" if kind != "msg" else "msqid"])) != 0:
                left += 1
for name in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
    try:
        print(open(name).read())
    except OSError:
        pass
sys.exit(1 if left else 0)
"""

# The reset's second, independent check, run as INIT_UID: no live process of either identity,
# every writable dir empty, no System V IPC object, and the two homes owned and moded as set up.
# Prints what survived, one item a line; exits 1 if anything did.
VERIFY = r"""
import os, sys
work, uids = sys.argv[1], {%(harness)d, %(user)d}
found = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        status = dict(l.split(":", 1) for l in open("/proc/%%s/status" %% pid).read().splitlines() if ":" in l)
    except OSError:
        continue
    if int(status["Uid"].split()[0]) in uids and status["State"].split()[0] not in "ZX":
        found.append("process %%s %%s uid %%s" %% (pid, status["Name"].strip(), status["Uid"].split()[0]))
for top in (work, "%(harness_dir)s", "/tmp", "/dev/shm", "/dev/mqueue"):
    try:
        found += ["file " + os.path.join(top, name) for name in os.listdir(top)]
    except OSError as exc:
        found.append("unreadable %%s: %%s" %% (top, exc))
for kind in ("shm", "sem", "msg"):
    with open("/proc/sysvipc/" + kind) as fh:
        found += ["sysv %%s %%s" %% (kind, line.split()[1]) for line in fh.readlines()[1:]]
for top, uid, mode in ((work, %(user)d, 0o755), ("%(harness_dir)s", %(harness)d, 0o755)):
    st = os.stat(top)
    if st.st_uid != uid or st.st_mode & 0o7777 != mode:
        found.append("%%s is uid %%d mode %%o" %% (top, st.st_uid, st.st_mode & 0o7777))
print("\n".join(found))
sys.exit(1 if found else 0)
""" % {"harness": HARNESS_UID, "user": USER_UID, "harness_dir": HARNESS_DIR}
