"""The local provider: rlimits, process-group kills, output caps and path confinement."""

from __future__ import annotations

import os
import sys
import time

import pytest

from rsigym.errors import SandboxError, UserError
from rsigym.sandbox import ExecResult, LocalSandbox, Sandbox, SandboxLimits, open_sandbox, resolve_provider
from rsigym.sandbox.output import CappedBuffer
from rsigym.sandbox.paths import work_relative

LIMITS = SandboxLimits(memory_mb=256, pids=64, output_bytes=64_000, file_size_mb=16)


@pytest.fixture(params=["prlimit", "preexec"])
def sandbox(request):
    """Both ways of setting the limits: util-linux's prlimit (the default where the host has it) and
    the fork-time ``preexec_fn`` (where it does not)."""
    with LocalSandbox(LIMITS) as sb:
        if request.param == "preexec":
            sb._prlimit = None
        elif sb._prlimit is None:
            pytest.skip("no prlimit on this host")
        yield sb


def _dead(pid: int) -> bool:
    """Gone, or a zombie nobody reaped yet (it no longer runs)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_local_sandbox_satisfies_protocol(sandbox):
    assert isinstance(sandbox, Sandbox)
    assert sandbox.info == {"provider": "local", "image": None, "isolation": "none (rlimits only)"}


def test_exec_passes_stdin_env_and_runs_this_python(sandbox):
    result = sandbox.exec(
        ["python3", "-c", "import os, sys; print(sys.executable, os.environ['GREETING'], sys.stdin.read())"],
        stdin="from stdin",
        env={"GREETING": "hi"},
    )
    assert result.ok, result
    assert result.stdout.split() == [sys.executable, "hi", "from", "stdin"]


def test_exec_reports_exit_code_and_stderr(sandbox):
    result = sandbox.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.stdout, result.stderr, result.exit_code, result.timed_out) == ("out\n", "err\n", 3, False)


def test_missing_program_is_exit_127_not_an_exception(sandbox):
    result = sandbox.exec(["no-such-program-rsigym"])
    assert result.exit_code == 127 and "no-such-program-rsigym" in result.stderr


def test_a_file_that_is_not_executable_or_a_directory_is_exit_126(sandbox):
    sandbox.write_files({"script.sh": "echo hi\n"}, mode=0o644)
    assert sandbox.exec(["./script.sh"]).exit_code == 126
    sandbox.write_files({"sub/x": ""})
    assert sandbox.exec(["./sub"]).exit_code == 126
    sandbox.write_files({"run.sh": "#!/bin/sh\necho \"$0\"\n"}, mode=0o755)
    result = sandbox.exec(["./run.sh"])  # found relative to the work dir, its argv[0] as given
    assert (result.exit_code, result.stdout) == (0, "./run.sh\n")
    # on PATH, a non-executable file does not hide an executable one further on (as execvp searches)
    sandbox.write_files({"a/tool": "echo first\n", "b/tool": "#!/bin/sh\necho second\n"}, mode=0o644)
    os.chmod(os.path.join(sandbox.work_dir, "b", "tool"), 0o755)
    path = os.pathsep.join(os.path.join(sandbox.work_dir, d) for d in ("a", "b"))
    assert sandbox.exec(["tool"], env={"PATH": path}).stdout == "second\n"
    os.chmod(os.path.join(sandbox.work_dir, "b", "tool"), 0o644)
    assert sandbox.exec(["tool"], env={"PATH": path}).exit_code == 126


def test_the_command_runs_under_the_limits_in_its_own_session(sandbox):
    probe = ("import os, resource as r; print([r.getrlimit(x) for x in (r.RLIMIT_AS, r.RLIMIT_CPU, r.RLIMIT_FSIZE, "
             "r.RLIMIT_CORE)], os.getsid(0) == os.getpid())")
    result = sandbox.exec(["python3", "-c", probe], timeout=7)
    assert result.ok, result
    mib = 2**20
    expected = [(LIMITS.memory_mb * mib,) * 2, (8, 9), (LIMITS.file_size_mb * mib,) * 2, (0, 0)]
    assert result.stdout == f"{expected} True\n"


def test_timeout_kills_the_process_group_including_grandchild(sandbox):
    # sleeps far past pytest-timeout's 300 s: a timeout that killed nothing hangs the test and fails it
    result = sandbox.exec(["sh", "-c", "sleep 1000 & echo $!; sleep 1000"], timeout=1)
    assert result.timed_out and result.exit_code is None
    grandchild = int(result.stdout.split()[0])
    for _ in range(40):  # polls, not a clock: a killed process may need a moment to be reaped
        if _dead(grandchild):
            break
        time.sleep(0.05)
    assert _dead(grandchild)


def test_allocation_beyond_rlimit_as_fails_and_is_reported(sandbox):
    result = sandbox.exec(["python3", "-c", f"x = b'x' * ({2 * LIMITS.memory_mb} * 2**20)"])
    assert result.exit_code not in (0, None)
    assert result.oom_killed
    assert "MemoryError" in result.stderr


def test_ordinary_failure_is_not_reported_as_oom(sandbox):
    assert not sandbox.exec(["python3", "-c", "raise SystemExit(4)"]).oom_killed


def test_output_is_capped_and_the_command_still_finishes(sandbox):
    result = sandbox.exec(["python3", "-c", "import sys; sys.stdout.write('a' * 10_000_000); print('done', file=sys.stderr)"])
    assert result.exit_code == 0  # kept draining, so the writer never blocked
    assert len(result.stdout) <= LIMITS.output_bytes and result.output_truncated
    assert result.stderr == "done\n"


def test_large_stdin_while_output_overflows_does_not_deadlock(sandbox):
    payload = "x" * 2_000_000
    result = sandbox.exec(["cat"], stdin=payload, timeout=10)
    assert result.exit_code == 0 and not result.timed_out
    assert result.output_truncated and result.stdout == payload[: LIMITS.output_bytes]


def test_write_and_read_files_round_trip(sandbox):
    sandbox.write_files({"pkg/a.txt": "alpha", f"{LIMITS.work_dir}/b.bin": bytes(range(256))})
    assert sandbox.read_file("pkg/a.txt") == b"alpha"
    assert sandbox.read_file("b.bin") == bytes(range(256))
    assert sandbox.exec(["cat", "a.txt"], cwd="pkg").stdout == "alpha"
    with pytest.raises(SandboxError, match="no such file"):
        sandbox.read_file("missing.txt")


@pytest.mark.parametrize("path", ["../escape.txt", "a/../../escape.txt", "/etc/rsigym-escape", "/tmp/x"])
def test_paths_escaping_the_work_dir_are_rejected(sandbox, path):
    with pytest.raises(SandboxError):
        sandbox.write_files({path: "x"})
    with pytest.raises(SandboxError):
        sandbox.read_file(path)
    with pytest.raises(SandboxError):
        sandbox.exec(["true"], cwd=path)
    assert not os.path.exists("/etc/rsigym-escape")


def test_symlink_planted_by_a_program_does_not_leak_host_files(sandbox):
    assert sandbox.exec(["ln", "-s", "/etc/hostname", "link"]).ok
    with pytest.raises(SandboxError, match="outside"):
        sandbox.read_file("link")


def test_close_removes_the_work_dir_and_refuses_further_use():
    sb = LocalSandbox(LIMITS)
    sb.write_files({"x": "1"})
    sb.close()
    sb.close()  # idempotent
    assert not os.path.exists(sb.work_dir)
    with pytest.raises(SandboxError, match="closed"):
        sb.exec(["true"])


def test_open_sandbox_local_records_the_request():
    with open_sandbox("local", LIMITS) as sb:
        assert sb.info["provider"] == "local" and sb.info["requested"] == "local"
        assert isinstance(sb.exec(["true"]), ExecResult)


def test_unknown_provider_is_a_user_error():
    with pytest.raises(UserError, match="'dockr'"):
        resolve_provider("dockr")


@pytest.mark.parametrize(
    ("path", "expected"),
    [("a/b", "a/b"), ("./a//b/", "a/b"), ("a/../b", "b"), ("/work", "."), ("/work/a/../b", "b")],
)
def test_work_relative_normalises(path, expected):
    assert work_relative(path, ("/work",)) == expected


def test_capped_buffer_counts_what_it_drops():
    buf = CappedBuffer(5)
    for chunk in (b"abc", b"def", b"gh"):
        buf.write(chunk)
    assert buf.getvalue() == b"abcde" and buf.dropped == 3 and buf.truncated


def test_kill_marked_kills_an_exact_marker_entry_only():
    """The environ is matched entry by entry: the marker as a prefix of another value, inside
    another variable's value, or under another name is not this sandbox's process."""
    import subprocess

    from rsigym.sandbox.local import MARKER_VAR, kill_marked

    marker = f"kill-test-{os.getpid()}"
    environs = {"exact": {MARKER_VAR: marker}, "prefix": {MARKER_VAR: marker + "-other"},
                "inside": {"OTHER": f"{MARKER_VAR}={marker}"}, "renamed": {"X" + MARKER_VAR: marker}}
    procs = {name: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                    env={"PATH": os.environ.get("PATH", ""), **extra})
             for name, extra in environs.items()}
    try:
        assert kill_marked([marker]) >= 1  # a process killed but not yet gone is found again by the next sweep
        assert procs["exact"].wait(timeout=10) == -9
        assert all(procs[name].poll() is None for name in ("prefix", "inside", "renamed"))
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()
