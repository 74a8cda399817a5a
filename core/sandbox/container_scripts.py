"""Programs the docker provider runs inside its containers (as ``nobody``, via exec).

Kept apart from the provider so each can be read, and run by hand, on its own. Each is a
``python3 -c`` program or an ``sh -c`` line: the image has python3 and a POSIX shell, no more.
"""

from __future__ import annotations

__all__ = ["REAPER", "OOM_READ", "KILL_ALL", "EXTRACT", "RESET"]

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
# cgroup v2, then v1; `exit 0` so a missing file is not an exec failure.
OOM_READ = ["sh", "-c", "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null; exit 0"]
KILL_ALL = ["sh", "-c", "kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null; exit 0"]
# Extracts a tar from stdin into the cwd (the work dir), refusing anything but plain files
# inside it; put_archive cannot write into a tmpfs mounted on a read-only root.
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
            sys.exit("path escapes the work dir: %r" % m.name)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out, tar.extractfile(m) as src:
            while chunk := src.read(1 << 20):
                out.write(chunk)
"""
# Kills every process of the user, then empties the work dir and /tmp (making directories the
# program locked enterable first); exits 1 if anything is left. Prints the oom_kill counters.
RESET = r"""
import os, sys
try:
    os.kill(-1, 9)
except ProcessLookupError:
    pass
def wipe(path):
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, 0o700)
        for name in os.listdir(path):
            wipe(os.path.join(path, name))
        os.rmdir(path)
    else:
        os.unlink(path)
left = 0
for top in (sys.argv[1], "/tmp"):
    for name in os.listdir(top):
        try:
            wipe(os.path.join(top, name))
        except (OSError, RecursionError):
            left += 1
for name in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
    try:
        print(open(name).read())
    except OSError:
        pass
sys.exit(1 if left else 0)
"""
