"""Attacks on PID 1 through the container's memory (issue 58, hole 7).

Before: 200,000 empty files in a tmpfs (``size=`` bounds bytes, not files; each file costs the
kernel about 1 KB of the container's memory) reached the memory limit, and the OOM killer, which
ranks processes by their RSS when their scores tie, chose PID 1 in 2 of 8 runs: the container
stopped and the step was an infra error (``SandboxUnavailable``) instead of the program's own
failure; ProgramEvolution made 0 of 6 steps. Memory that is no process's RSS (files in a tmpfs)
beside small user processes did the same in 3 of 3 runs.

Now each tmpfs holds a bounded number of files (``engine.tmpfs_inodes``: ENOSPC past it) and every
user command starts with the highest OOM score (``container_scripts.COMMAND_OOM_SCORE_ADJ``), PID 1
with the container's lowest. Each attack checks that the program failed on its own, the
container still runs the same PID 1, and the next command works.
"""

from __future__ import annotations

import pytest

from rsigym.envs.evolution import EVOLUTION_LIMITS, SandboxEvaluator, make_task
from rsigym.sandbox import DockerSandbox
from rsigym.sandbox.engine import tmpfs_inodes

from .conftest import LIMITS
from .test_evaluator_attacks import SEED_SCORE

pytestmark = pytest.mark.docker

WRITABLE = ("/work", "/tmp", "/dev/shm")
# 200,000 empty files in each tmpfs the user can write; one line per tmpfs that refused, exit 1.
FILES = r"""
import os, sys
refused = []
for top in ("/work", "/tmp", "/dev/shm"):
    try:
        for i in range(200_000):
            os.close(os.open("%s/f%d" % (top, i), os.O_CREAT | os.O_WRONLY, 0o600))
    except OSError as exc:
        refused.append("%s %d %s" % (top, i, exc.strerror))
print("\n".join(refused))
sys.exit(1 if refused else 0)
"""
# 90 MB of tmpfs files (no process's RSS) in a 128 MB container, then 8 small shells of about
# 10 MB each (PID 1, a Python, has about 12 MB): with equal scores PID 1 has the largest RSS.
PRESSURE = r"""
for k in 1 2 3 4; do head -c 15M /dev/zero > /dev/shm/a$k; done
head -c 15M /dev/zero > /tmp/a; head -c 15M /dev/zero > /work/a
pids=""
for i in 1 2 3 4 5 6 7 8; do
  sh -c 'x=$(head -c 2000000 /dev/zero | tr "\0" a); y=$x$x$x$x; sleep 8' &
  pids="$pids $!"
done
killed=0
for p in $pids; do wait $p || killed=$((killed+1)); done
echo "killed $killed"
[ $killed -eq 0 ]
"""
PID1 = ["sh", "-c", "cut -d' ' -f22 /proc/1/stat; tr '\\0' ' ' </proc/1/cmdline | cut -c1-40; stat -c %u /proc/1"]


def _pid1(sandbox: DockerSandbox) -> str:
    """PID 1's start time, command line and uid: another process in its place differs."""
    result = sandbox.exec(PID1)
    assert result.ok and "python3" in result.stdout and result.stdout.split()[-1] == "65532", result
    return result.stdout


def _oom_kills(sandbox: DockerSandbox) -> int:
    text = sandbox.exec(["cat", "/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"]).stdout
    return sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill "))


def _lives_on(sandbox: DockerSandbox, pid1: str) -> None:
    assert sandbox.is_running()
    assert _pid1(sandbox) == pid1  # the same PID 1, never a restarted container
    assert sandbox.exec(["echo", "next"]).stdout == "next\n"


def test_200000_empty_files_in_each_tmpfs_fail_the_program_and_pid1_lives_on(own_sandbox):
    pid1 = _pid1(own_sandbox)
    result = own_sandbox.exec(["python3", "-c", FILES], timeout=120)
    # the program's own failure: each tmpfs refused a file at its bound, long before the memory limit
    assert result.exit_code == 1 and not result.oom_killed, result
    bound = tmpfs_inodes(LIMITS)
    assert result.stdout.split("\n")[:3] == [f"{top} {bound - 1} No space left on device" for top in WRITABLE], result
    _lives_on(own_sandbox, pid1)
    own_sandbox.reset()  # the files go, and the reset's verification (in PID 1) passes
    _lives_on(own_sandbox, pid1)


@pytest.mark.parametrize("path", ["exec", "exec_server"])
def test_memory_that_is_no_processs_rss_kills_a_user_command_never_pid1(own_sandbox, path):
    pid1 = _pid1(own_sandbox)
    before = _oom_kills(own_sandbox)
    run = own_sandbox.exec if path == "exec" else own_sandbox.exec_server().exec
    result = run(["sh", "-c", PRESSURE], timeout=120)
    assert _oom_kills(own_sandbox) > before  # the limit was reached: the OOM killer chose
    assert result.exit_code == 1 and "killed" in result.stdout and result.stdout != "killed 0\n", result
    _lives_on(own_sandbox, pid1)


def test_every_user_command_is_first_in_the_oom_killers_order_and_pid1_last(own_sandbox):
    read = ["cat", "/proc/self/oom_score_adj"]
    server = own_sandbox.exec_server()
    scores = {
        "exec": own_sandbox.exec(read).stdout,
        "persisting exec": own_sandbox.exec(read, persist=True).stdout,
        "exec server": server.exec(read).stdout,
        "exec server fork": server.run_python("print(open('/proc/self/oom_score_adj').read(), end='')").stdout,
    }
    assert scores == dict.fromkeys(scores, "1000\n")
    assert server.pid
    kept = own_sandbox.exec(["cat", "/proc/1/oom_score_adj", f"/proc/{server.pid}/oom_score_adj"], as_user="harness")
    assert kept.stdout.split() == ["0", "0"], kept  # PID 1 and the server itself keep the container's
    assert own_sandbox.exec(read, as_user="harness").stdout == "0\n"  # trusted: killed after the user
    lowered = own_sandbox.exec(["sh", "-c", "echo -1 > /proc/self/oom_score_adj; cat /proc/self/oom_score_adj"])
    assert lowered.stdout == "1000\n" and lowered.stderr, lowered  # refused: never below PID 1


def test_an_evolution_candidate_that_floods_the_tmpfs_fails_and_the_next_step_scores(docker_client, sandbox_image):
    """ProgramEvolution's step, as in the issue: the flooding candidate fails with its reason, the
    seed program after it scores as ever, and PID 1 is the same throughout."""
    sandbox = DockerSandbox(sandbox_image, EVOLUTION_LIMITS, client=docker_client)
    try:
        pid1 = _pid1(sandbox)
        task = make_task("circle_packing_26")
        evaluator = SandboxEvaluator(task, sandbox, timeout_s=60.0)
        flood = FILES.replace("sys.exit(1 if refused else 0)", "raise SystemExit('refused: ' + ' / '.join(refused))")
        flooded = evaluator.evaluate(flood + task.seed_program, "full")
        assert flooded.score is None and "No space left on device" in flooded.reason, flooded
        for _ in range(2):
            after = evaluator.evaluate(task.seed_program, "full")
            assert after.score == pytest.approx(SEED_SCORE), after.reason
        _lives_on(sandbox, pid1)
    finally:
        sandbox.remove()
