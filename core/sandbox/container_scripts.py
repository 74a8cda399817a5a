"""Programs the docker provider runs inside its containers, and the uids they run as.

Kept apart from the provider so each can be read, and run by hand, on its own. Each is a
``python3 -c`` program or an ``sh -c`` line: the image has python3 and a POSIX shell, no more.

Three uids, none with any capability (the container drops them all):

* ``INIT_UID`` 65532 runs PID 1 (the reaper and the INIT server, ``INIT_SERVER``) and owns ``/rsigym`` (the exec wrapper) and ``/tmp``;
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
    "WRAP",
    "SET_OOM_SCORE_ADJ",
    "COMMAND_OOM_SCORE_ADJ",
    "OOM_READ",
    "KILL_ALL",
    "EXTRACT",
    "READ",
    "REMOVE_TREE",
    "WIPE",
    "WIPE_FUNCTION",
    "VERIFY",
    "EXEC_SERVER",
    "INIT_SERVER",
]

INIT_UID, HARNESS_UID, USER_UID = 65532, 65533, 65534
HARNESS_DIR = "/harness"
WRAPPER_DIR = "/rsigym"
# The exec wrapper: a copy of dash in the image, owned by INIT_UID, mode 0711 (``image.RECIPE``)
WRAPPER = f"{WRAPPER_DIR}/sh"
# Writable by both identities (mode 1777): each identity's reset removes what it owns there.
SHARED_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")

# The OOM killer's order: PID 1, the exec servers, the wrapper and the harness keep the
# container's oom_score_adj (0), every command of the user starts at 1000, so when the memory
# limit is reached (files in a tmpfs, kernel memory: nobody's RSS) the kernel kills a user
# command, never PID 1 (the container would stop: SandboxUnavailable, an infra error for what was
# the program's own doing). Raising one's own score needs no privilege. A command may lower its
# score back to 0 (the floor the engine set, which PID 1 cannot go below either without
# CAP_SYS_RESOURCE): a program that means to can then tie with PID 1, where the larger RSS goes.
COMMAND_OOM_SCORE_ADJ = {"user": 1000, "harness": 0}
# `sh -c SET_OOM_SCORE_ADJ SCORE COMMAND...`: sets its score, then execs the command (through env,
# so a shell builtin such as `exit` cannot stand in for it). A process of its own (a readable
# /bin/sh): the wrapper cannot write its /proc/self, which is root's (WRAPPER is execute-only, so
# the kernel makes it non-dumpable). A score the kernel refuses leaves the command at 0.
SET_OOM_SCORE_ADJ = '{ echo "$0" >/proc/self/oom_score_adj; } 2>/dev/null; exec /usr/bin/env -- "$@"'

# The exec wrapper, run by WRAPPER as the exec's identity: run the command (SET_OOM_SCORE_ADJ,
# the second argument its score), then kill every other process of the identity (kill -1 spares
# only the caller and PID 1; atomic against fork), then pass the command's status on. If the user
# kills the wrapper instead, the exec's status is >= 128 and the provider runs KILL_ALL itself.
# The first argument is a mark printed before and after the command (``exec_stream.unframe``): a
# stream that ends without it lost output on the way.
WRAP = ('m=$1; a=$2; shift 2; printf %%s "$m"; /bin/sh -c \'%s\' "$a" "$@"; rc=$?; kill -9 -1 2>/dev/null; '
        'printf %%s "$m"; exit $rc' % SET_OOM_SCORE_ADJ)

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
# it between two marks ($3, as the exec wrapper does). Exit 2: missing, 3: refused, 4: unreadable.
# A file swapped after the check is bounded by the timeout.
READ = r"""
f=$1
case "$f" in /*) ;; *) f="$PWD/$f" ;; esac
r=$(realpath -e -- "$f" 2>/dev/null) || { echo "no such file" >&2; exit 2; }
case "$r" in "$2"/*) ;; *) echo "resolves outside the work dir" >&2; exit 3 ;; esac
[ -f "$r" ] || { echo "not a regular file" >&2; exit 3; }
printf %s "$3"; cat -- "$r" || exit 4; printf %s "$3"
"""

# One identity's part of the reset, run as that identity: kill all its processes, remove its
# System V IPC objects, empty its own dir (argv[1]) and what it owns in the shared dirs (making
# directories it locked enterable first), and give its own dir back its mode (argv[2], octal).
# One python process and no forks: right after a fork bomb the pids limit may leave room for a
# single process. Prints the oom_kill counters; exits 1 if anything it owns is left.
# ``remove_tree(path)`` for the programs below and the evolution runner: bottom-up without recursion,
# one level at a time through relative chdir, so a directory nested thousands deep (past Python's
# recursion limit and past PATH_MAX) goes like any other. Symlinks are unlinked, never followed;
# a directory is made 0o700 first (its owner locked it). The cwd is restored.
REMOVE_TREE = r"""
def remove_tree(path):
    import os
    if os.lstat(path).st_mode & 0o170000 != 0o040000:
        os.unlink(path)
        return
    back = os.open(".", os.O_PATH | os.O_DIRECTORY)
    parent, top = os.path.split(os.path.abspath(path))
    stack = []  # (name, its subdirectories still to remove), from the top down to the cwd

    def enter(name):
        os.chmod(name, 0o700)
        os.chdir(name)
        subs = []
        for entry in os.listdir("."):
            if os.lstat(entry).st_mode & 0o170000 == 0o040000:
                subs.append(entry)
            else:
                os.unlink(entry)
        stack.append((name, subs))

    try:
        os.chdir(parent)
        enter(top)
        while stack:
            name, subs = stack[-1]
            if subs:
                enter(subs.pop())
            else:
                stack.pop()
                os.chdir("..")
                os.rmdir(name)
    finally:
        os.fchdir(back)
        os.close(back)
"""

# ``wipe(home, mode, shared)``: the whole part as a function (returns the count of what it owns
# and could not remove, and the oom counters' text), for WIPE below and for the exec server, which
# runs it in its own process at the end of a lease (``ExecServer.wipe``: no engine exec for it).
WIPE_FUNCTION = REMOVE_TREE + r"""
def wipe(home, mode, shared):
    import os
    for _ in range(2):
        try:
            os.kill(-1, 9)
        except ProcessLookupError:
            pass
    uid, left = os.getuid(), 0
    os.chmod(home, mode)
    for top in (home, *shared):
        for name in os.listdir(top):
            path = os.path.join(top, name)
            try:
                if top == home or os.lstat(path).st_uid == uid:
                    remove_tree(path)
            except OSError:
                left += 1
    owned = []  # (kind, id) of this uid's System V IPC objects
    for kind in ("shm", "sem", "msg"):
        with open("/proc/sysvipc/" + kind) as fh:
            header = fh.readline().split()
            for line in fh:
                row = dict(zip(header, line.split()))
                if int(row["uid"]) == uid:
                    owned.append((kind, int(row[kind + "id" if kind != "msg" else "msqid"])))
    if owned:  # ctypes only when there is something to remove (its import is most of WIPE's start)
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        removers = {"shm": lambda i: libc.shmctl(i, 0, None), "sem": lambda i: libc.semctl(i, 0, 0),
                    "msg": lambda i: libc.msgctl(i, 0, None)}  # 0 is IPC_RMID
        left += sum(removers[kind](ident) != 0 for kind, ident in owned)
    counters = []
    for name in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            counters.append(open(name).read())
        except OSError:
            pass
    return left, "\n".join(counters)
"""

WIPE = "import os, sys\n" + WIPE_FUNCTION + r"""
left, counters = wipe(sys.argv[1], int(sys.argv[2], 8), sys.argv[3:])
print(counters)
sys.exit(1 if left else 0)
"""

# The reset's second, independent check, run as INIT_UID: no live process of either identity,
# every writable dir empty, no System V IPC object, and the two homes owned and moded as set up.
# Prints what survived, one item a line; exits 1 if anything did. argv: the work dir, then the
# pids of the exec servers kept for the next lease (``ExecServer.wipe``), the only processes spared.
VERIFY = r"""
import os, sys
work, uids, spared = sys.argv[1], {%(harness)d, %(user)d}, set(sys.argv[2:])
found = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    if pid in spared:  # an exec server the host just saw wipe, start afresh and say it is ready
        continue
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

# The exec server (``rsigym.sandbox.exec_server``): one long-lived exec of the user identity that
# runs many short commands for the host without a docker exec each (the engine's exec costs
# ~45 ms here; a spawn from this process ~2 ms). It first makes itself non-dumpable: the
# commands it spawns run as its own uid, and a non-dumpable process cannot be ptraced, nor its
# /proc/<pid>/fd, mem or environ opened, by a process of the same uid without CAP_SYS_PTRACE
# (the container has none), so a command cannot read or write the host's stream. A command can
# still signal it (same uid): a killed or stopped server is noticed by the host, which kills
# the identity's processes and starts a new server.
#
# Wire format, both ways over the exec's stdin/stdout: a 4-byte big-endian length, a JSON header
# of that length, then the header's payload bytes. Request: {argv, env, timeout, cap, stdin}
# (+ stdin bytes). Replies: {started} once the request is read, then {exit_code, timed_out,
# truncated, oom, out, err} (+ stdout, stderr bytes). The first frame, {ready}, is sent once the
# server is non-dumpable.
#
# Per request: spawn the command (posix_spawnp: PATH lookup; SIGPIPE and SIGXFSZ back to their
# defaults), or for a {python} request fork and run that program in the fork (``forked``: only its
# three pipes stay open; ``ExecServer.run_python``; the program is compiled once per request and
# the stdlib modules the request names in {preload} are imported once, before the first fork, see
# ``prepare``), feed its stdin (read into one buffer, zeroed
# once the command ended, so no later fork holds it), keep the first `cap` bytes of each output stream and drain the rest,
# and when it exits (a pidfd) or its timeout passes, kill -9 every other process of the uid
# (kill(-1) spares only the caller and PID 1: the same sweep as the exec wrapper) before
# replying. Exit codes follow the wrapper: the status, or 128+N for death by signal N.
#
# A same-uid process can also change, without ptrace, what the server's children inherit: its
# resource limits (prlimit), nice value (setpriority, also PRIO_USER), scheduling policy and
# attributes (sched_setscheduler/sched_setattr: SCHED_IDLE, reset-on-fork, utilization clamps where
# the kernel has them), CPU affinity, and I/O priority (ioprio_set to the idle class, also
# IOPRIO_WHO_USER). Tried and refused to a same-uid process on a non-dumpable server (so not
# checked): oom_score_adj and timerslack_ns (/proc/<pid> files of a non-dumpable process belong
# to root), NUMA page migration (a ptrace-mode check). The server records
# them at start and, before it takes a request, exits if any changed: the host sees the stream end
# before the acknowledgement, kills the user's processes and starts a new server (fresh values
# from the container's configuration) for that request, so one command cannot starve, slow or
# cripple the next.
_SERVER_BODY = r"""
import ctypes, json, os, resource, select, signal, struct, sys, time
""" + "OOM_SCORE_ADJ = %r if os.getuid() == %d else None\n" % (str(COMMAND_OOM_SCORE_ADJ["user"]).encode(), USER_UID) + r"""
# The user's server keeps the container's score and gives each command COMMAND_OOM_SCORE_ADJ:
# it raises its own around the spawn (the child inherits it) and lowers it back, through this fd,
# opened while /proc/self is still its own (a non-dumpable process's /proc files are root's).
try:
    OOM_FD = os.open("/proc/self/oom_score_adj", os.O_RDWR) if OOM_SCORE_ADJ else None
    OOM_BASE = os.pread(OOM_FD, 16, 0).strip() if OOM_FD is not None else None
except OSError:
    OOM_FD = OOM_BASE = None
if ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE = 4
    sys.exit("rsigym exec server: prctl(PR_SET_DUMPABLE, 0) failed")
rd, wr = os.dup(0), os.dup(1)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0); os.dup2(null, 1)  # nothing spawned can inherit the host's stream
CGROUP = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")
MAX_FD = max(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1024)

def readable():
    pass  # a read blocks until the host's stream has bytes (PID 1 waits reaping instead: INIT_SERVER)

def ended():
    sys.exit(0)  # the host closed the session (PID 1 must not exit: INIT_SERVER)

def read_exact(n):
    chunks = []
    while n:
        readable()
        chunk = os.read(rd, min(n, 1 << 20))
        if not chunk:
            ended()
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)

def read_payload(n):
    # straight into one bytearray (no copies left behind), zeroed once its command ended
    buf, got = bytearray(n), 0
    view = memoryview(buf)
    while got < n:
        readable()
        count = os.readv(rd, [view[got:got + (1 << 20)]])
        if not count:
            ended()
        got += count
    view.release()
    return buf

def send(header, *payloads):
    head = json.dumps(header).encode()
    data = len(head).to_bytes(4, "big") + head + b"".join(payloads)
    while data:
        data = data[os.write(wr, data):]

def oom_kills():
    for name in CGROUP:
        try:
            for line in open(name):
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except OSError:
            pass
    return 0

def sweep():
    for _ in range(2):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass

def forked(program, env, in_r, out_w, err_w):
    # The fork of a "python" request: runs `program` as `python3 -I -S -c` would, in a copy of
    # this process (which has run no command's code: its state is a fresh interpreter's plus this
    # script). Only its own three pipes reach it: the host's stream, every other pipe and pidfd
    # are closed before the program's first line. Never returns.
    status = 1
    try:
        os.dup2(in_r, 0); os.dup2(out_w, 1); os.dup2(err_w, 2)
        os.closerange(3, MAX_FD)
        os.environ.update(env)
        sys.argv[:] = ["-c"]
        main = type(sys)("__main__")
        sys.modules["__main__"] = main
        code = COMPILED.get(program) or compile(program, "<string>", "exec")
        exec(code, vars(main))
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException as exc:
        import traceback
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)  # from the program's first frame
    finally:
        try:
            sys.stdout.flush(); sys.stderr.flush()
        finally:
            os._exit(status & 0xFF)

def oom_score(value):
    if OOM_FD is not None:
        try:
            os.pwrite(OOM_FD, value, 0)
        except OSError:
            pass

def run(req, data):
    env = dict(os.environ, **req["env"])
    cap, deadline = req["cap"], time.monotonic() + req["timeout"]
    in_r, in_w = os.pipe(); out_r, out_w = os.pipe(); err_r, err_w = os.pipe()
    pending = memoryview(data)
    if len(data) <= 4096:  # fits the pipe: written before the start, so the command never waits for it
        os.write(in_w, pending)
        pending = pending[len(data):]
    oom_score(OOM_SCORE_ADJ)  # the command is born with it; no other process of the uid is alive now
    try:
        if "python" in req:
            pid = os.fork()
            if pid == 0:
                forked(req["python"], req["env"], in_r, out_w, err_w)
        else:
            pid = os.posix_spawnp(req["argv"][0], req["argv"], env, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
                                  file_actions=[(os.POSIX_SPAWN_DUP2, in_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1),
                                                (os.POSIX_SPAWN_DUP2, err_w, 2)])
    except OSError as exc:
        oom_score(OOM_BASE)
        for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
            os.close(fd)
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        return {"exit_code": code, "timed_out": False, "truncated": False, "oom": False}, b"", \
            ("%s: %s\n" % (req["argv"][0], exc.strerror or exc)).encode()
    oom_score(OOM_BASE)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    kept = {out_r: bytearray(), err_r: bytearray()}
    dropped = 0
    status, timed_out = None, False
    if not pending:
        os.close(in_w); in_w = None
    else:
        os.set_blocking(in_w, False)
    readers = [out_r, err_r]
    while readers or status is None:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        watch = readers + ([pidfd] if status is None else [])
        ready, writable, _ = select.select(watch, [in_w] if in_w is not None else [], [], left)
        if writable:
            try:
                pending = pending[os.write(in_w, pending[:65536]):]
            except BlockingIOError:
                pass
            except BrokenPipeError:
                pending = b""  # the command exited without reading all of it
            if not pending:
                os.close(in_w); in_w = None
        for fd in ready:
            if fd == pidfd:
                status = os.waitpid(pid, 0)[1]
                sweep()  # leftovers holding the pipes die now, so the reads below reach EOF
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                readers.remove(fd)
                continue
            room = cap - len(kept[fd])
            kept[fd] += chunk[:max(room, 0)]
            dropped += max(0, len(chunk) - max(room, 0))
    sweep()
    if status is None:
        status = os.waitpid(pid, 0)[1]
    for fd in [pidfd, out_r, err_r] + ([in_w] if in_w is not None else []):
        os.close(fd)
    code = os.waitstatus_to_exitcode(status)
    code = 128 - code if code < 0 else code
    header = {"exit_code": None if timed_out else code, "timed_out": timed_out, "truncated": dropped > 0,
              "oom": False}
    return header, bytes(kept[out_r]), bytes(kept[err_r])

LIBC = ctypes.CDLL(None, use_errno=True)
# ioprio_get and sched_getattr (x86_64, aarch64; None elsewhere: no libc wrapper for either)
NR_IOPRIO_GET, NR_SCHED_GETATTR = {"x86_64": (252, 315), "aarch64": (31, 275)}.get(os.uname().machine, (None, None))

def io_priority():
    return None if NR_IOPRIO_GET is None else LIBC.syscall(NR_IOPRIO_GET, 1, 0)  # IOPRIO_WHO_PROCESS, self

def sched_attr():
    # policy, flags (reset-on-fork), nice, priority and the utilization clamps
    buf = ctypes.create_string_buffer(56)
    if NR_SCHED_GETATTR is None or LIBC.syscall(NR_SCHED_GETATTR, 0, buf, 56, 0) != 0:
        return None
    return list(struct.unpack("IIQiIQQQII", buf.raw))

def inherited():
    # What a spawned command inherits from this process and another process of the same uid can
    # change without ptrace (the list in the comment above EXEC_SERVER).
    limits = [(name, resource.getrlimit(getattr(resource, name))) for name in dir(resource) if name.startswith("RLIMIT_")]
    return (limits, os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0), sorted(os.sched_getaffinity(0)),
            io_priority(), sched_attr())

def serve(req, size):
    # One command: its stdin is read only now (a batch's later stdins wait in the host's stream,
    # out of a fork's reach), and zeroed once the command ended.
    data = read_payload(size)
    if inherited() != INHERITED:
        sys.exit("rsigym exec server: a command changed what the next one would inherit; exiting")
    send({"started": True})  # from here on the command, not the server's past, owns what happens
    before = oom_kills()
    started = time.monotonic()
    header, out, err = run(req, data)
    data[:] = bytes(len(data))  # a later forked command inherits none of this one's stdin
    if header["exit_code"] == 137:
        header["oom_kills"] = oom_kills()
        header["oom"] = header["oom_kills"] > before
    header.update(out=len(out), err=len(err), duration_s=time.monotonic() - started)
    send(header, out, err)
    return header

COMPILED = {}  # the last {python} request's program: compiled once, not once per fork

def prepare(req):
    # Before the forks of a {python} request: import the stdlib modules it names (each fork finds
    # them loaded instead of importing them again: ``typing`` alone costs more than the fork) and
    # compile its program once. Neither runs a command's code: the modules come from the image's
    # read-only stdlib (-I -S: no cwd, no user site, no PYTHONPATH), the program is the host's.
    # A module that fails to import, or a program that does not compile, is left to the fork,
    # which reports it as python3 -c would.
    for name in req.get("preload", ()):
        if name not in sys.modules:
            try:
                __import__(name)
            except BaseException:
                pass
    program = req["python"]
    if program not in COMPILED:
        COMPILED.clear()
        try:
            COMPILED[program] = compile(program, "<string>", "exec")
        except BaseException:
            COMPILED[program] = None

def alone():
    # True when no other process of this uid is alive (zombies are dead): a process killed in the
    # middle of a system call finishes that call before it dies, so the wipe's kill alone does not
    # promise that nothing more can change this process
    me, uid = str(os.getpid()), os.getuid()
    for pid in os.listdir("/proc"):
        if pid.isdigit() and pid != me:
            try:
                status = dict(l.split(":", 1) for l in open("/proc/%s/status" % pid).read().splitlines() if ":" in l)
            except OSError:
                continue
            if int(status["Uid"].split()[0]) == uid and status["State"].split()[0] not in "ZX":
                return False
    return True

def end_lease(args, source):
    # The lease's end (``ExecServer.wipe``): this identity's part of the reset, run here, in the
    # server itself (kill(-1) spares the caller): no engine exec and no interpreter start for it.
    # Then the server execs a fresh interpreter running `source` (this script, sent by the host)
    # in this same process for the next lease: execve leaves nothing of this one's memory, and it
    # keeps only what inherited() checks, checked here once the uid has no other live process.
    # Anything amiss (something a command changed, a process that would not die, the wipe raised)
    # is reported as a failure and the server exits: the host then wipes from a fresh exec, as
    # without a server.
    left, counters = 1, ""
    try:
        left, counters = wipe(args[0], int(args[1], 8), args[2:])
        for _ in range(100):
            if alone():
                break
            time.sleep(0.01)
        else:
            left += 1
        if inherited() != INHERITED:
            left += 1
    except BaseException:
        left += 1
    body = counters.encode()[:4096]
    again = bool(source) and not left
    send({"wiped": True, "left": left, "again": again, "out": len(body), "err": 0}, body)
    if again:
        try:
            os.dup2(rd, 0); os.dup2(wr, 1)
            os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", source])
        except BaseException:
            pass
    os._exit(0)
""" + WIPE_FUNCTION + r"""
def serve_all(req):
    # {runs: [stdin sizes]}: one command per stdin (a batch: one after another); after one that
    # timed out or ran `stop_after` seconds the rest are read, zeroed and skipped
    stop = False
    for size in req["runs"]:
        if stop:
            read_payload(size)[:] = bytes(size)
            send({"skipped": True})
            continue
        header = serve(req, size)
        stop = header["timed_out"] or header["duration_s"] >= req.get("stop_after", 1e18)

INHERITED = inherited()
send({"ready": True, "pid": os.getpid()})
"""

EXEC_SERVER = _SERVER_BODY + r"""
while True:
    req = json.loads(read_exact(int.from_bytes(read_exact(4), "big")))
    if "wipe" in req:
        end_lease(req["wipe"], req.get("again"))
    if "python" in req:
        prepare(req)
    serve_all(req)
"""

# PID 1 of the container, as INIT_UID: the reaper and the container's INIT server in one process
# (``exec_server.InitServer``, over the container's attach stream, which the host opens before the
# container starts: the reset's verification then costs no engine exec and no interpreter start
# per container, ~50 ms of machine CPU each). As PID 1 it must reap every orphan of a killed
# command (their pids count against the pids limit: a reset right after a fork bomb needs them)
# and must never exit (the container would stop). SIGCHLD interrupts its waits (a handler that
# does nothing, and a wake-up pipe for select), and it reaps whenever it waits for the host's
# stream, never while a fork of its own runs (``run`` waits for that one by its pid), so it never
# takes another's exit status. It serves the host's {python} requests only; the stream's end, any
# other request, or any failure (the inherited-settings check included) ends the serving for good,
# and it goes on as a reaper only: the host then verifies from a fresh INIT exec, as it does when
# this server cannot answer. Its stdin is the attach stream: no exec identity can reach PID 1's
# fds (another uid, non-dumpable), and the engine copies a non-tty stdin byte for byte (no detach
# keys). Attacks: ``tests/security/test_pid1_takeover.py``, ``test_reset.py``.
INIT_SERVER = r"""
import os, select, signal
WAKE_R, WAKE_W = os.pipe()
os.set_blocking(WAKE_R, False); os.set_blocking(WAKE_W, False)
signal.signal(signal.SIGCHLD, lambda signum, frame: None)
signal.set_wakeup_fd(WAKE_W, warn_on_full_buffer=False)
""" + _SERVER_BODY + r"""
class Ended(Exception):
    pass

def reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass

def wait_for(fds):
    # until one of fds is readable, reaping every orphan as it dies
    while True:
        reap()
        ready = select.select(fds + [WAKE_R], [], [])[0]
        if WAKE_R in ready:
            try:
                while os.read(WAKE_R, 4096):
                    pass
            except BlockingIOError:
                pass
        if any(fd in ready for fd in fds):
            return

def readable():  # the server's reads wait as PID 1 does ...
    wait_for([rd])

def ended():  # ... and the stream's end is Ended, not an exit
    raise Ended

def forked(program, env, in_r, out_w, err_w, inner=forked):
    # PID 1's SIGCHLD set-up is not its forks' (the identities' servers have none to undo, and
    # their forks stay as they were: what a fork allocates first can overwrite freed memory)
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    except BaseException:
        os._exit(1)
    inner(program, env, in_r, out_w, err_w)  # never returns

try:
    while True:
        req = json.loads(read_exact(int.from_bytes(read_exact(4), "big")))
        if "python" not in req or "wipe" in req:
            raise Ended  # the host sends this server its verification only
        prepare(req)
        serve_all(req)
except BaseException:
    pass
while True:  # a reaper only, for good
    try:
        wait_for([])
    except BaseException:
        try:
            reap()
            time.sleep(0.1)
        except BaseException:
            pass
"""
