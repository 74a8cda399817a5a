"""Removes each hardening setting of the docker sandbox, one at a time, and shows which tests fail.

The exec server's three guarantees (non-dumpable, the kill after each command, the check of what
the next command inherits) count as settings too, and so does each rule of the redaction of secrets
by structure (``rsigym.records.redact``: URL userinfo and query values, header mappings and header lines,
secret key names, configured values registered), guarded by ``tests/security/test_secrets_by_structure.py``
(no Docker needed for those rows).

A setting no test notices is not guarded: every row must show at least one failing test. Each
mutation runs the docker tests of ``tests/security`` and ``tests/core/test_sandbox_docker.py``
in a child process that patches the setting away before any container is created (the package
itself is never edited). The fork-bomb test is left out of every run: without the pids limit it
would be a real fork bomb on the host (``test_process_count_stops_at_the_pids_limit`` guards the
limit with a bounded number of forks instead).

Run: ``python benchmarks/sandbox_mutation_check.py [--only NAME ...] [--tests PATH ...]`` (``--tests``:
a subset of the test files, when only some walls are checked). Needs a Docker engine and the image
(``rsigym sandbox build``). Prints one table: setting, failed tests (count), their names.

Issue 27 added code repair's runner (every test in a fresh interpreter, judged by the harness
identity: removed, every batch runs in one process again), the evolution clearing without recursion
and its fallback (reset the sandbox, charge the candidate that left the files), the exec
server's I/O priority check, the workflow env's walls (``tests/security/test_workflow_walls.py``:
the workspace listing isolated and capped, a bad listing as the agent's error, the answer key from
a per-run secret), the walls of the exec server's forked programs (``run_python``: only their own
three fds, no later stdin of their batch; the zeroing of an earlier command's stdin has no row:
with it removed the attack test still finds nothing, the allocator reuses the freed buffer), and
the two lines that end a killed run's workers (the watchdog process, each worker's parent watch;
both run as subprocesses of the tests, so these rows reach them through ``sitecustomize``).

Issue 45 made PID 1 the container's INIT server as well as its reaper, and added two rows: it
reaps while it serves (``def reap`` emptied), and it goes on reaping when its serving ends (it
exits instead).

Issue 58 added two rows, guarded by ``tests/security/test_memory_pressure.py``: each tmpfs holds a
bounded number of files, and every user command starts first in the OOM killer's order.

Issue 38 added two rows for code repair's checker: a test sees only the program's entry function
(``tests/security/test_coderepair_checker_namespace.py``), and a runner's frame is capped in bytes
and items before the collector parses it (``tests/security/test_coderepair_oversized_frame.py``).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

REPO = pathlib.Path(__file__).resolve().parents[1]
TESTS = ["tests/security", "tests/core/test_sandbox_docker.py"]
DESELECT = "not fork_bomb and not overhead_benchmark"


def _drop_host_config(*keys: str) -> Callable[[], None]:
    def apply() -> None:
        from docker.api.container import ContainerApiMixin

        original = ContainerApiMixin.create_host_config

        def create_host_config(self: Any, *args: Any, **kwargs: Any) -> Any:
            for key in keys:
                kwargs.pop(key, None)
            return original(self, *args, **kwargs)

        ContainerApiMixin.create_host_config = create_host_config

    return apply


def _pid1_as_exec_user() -> None:
    from docker.api.container import ContainerApiMixin

    from rsigym.sandbox.engine import NOBODY

    original = ContainerApiMixin.create_container

    def create_container(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs["user"] = NOBODY
        return original(self, *args, **kwargs)

    ContainerApiMixin.create_container = create_container


def _exec_as_root() -> None:
    from rsigym.sandbox import engine

    engine.IDENTITY_USERS["user"] = "0:0"


def _no_reset() -> None:
    from rsigym.sandbox.docker import DockerSandbox

    DockerSandbox._reset = lambda self: None


def _no_reset_verification() -> None:
    from rsigym.sandbox import docker

    docker.VERIFY = "pass"


def _no_kill_after_exec() -> None:
    from rsigym.sandbox import docker

    docker.WRAP = '/usr/bin/env -- "$@"'


def _no_dev_shm_wipe() -> None:
    from rsigym.sandbox import docker

    docker.SHARED_DIRS = ("/tmp", "/dev/mqueue")


def _tmpfs_files_unbounded() -> None:
    """Each tmpfs bounded by its size only (``nr_inodes=0``: no bound on files, before issue 58)."""
    from rsigym.sandbox import engine

    engine.tmpfs_inodes = lambda limits: 0  # type: ignore[assignment]


def _oom_order_flat() -> None:
    """User commands keep the container's OOM score, PID 1's (before issue 58)."""
    from rsigym.sandbox import container_scripts, exec_server

    container_scripts.COMMAND_OOM_SCORE_ADJ["user"] = 0
    assert "OOM_SCORE_ADJ = b'1000'" in exec_server.EXEC_SERVER
    exec_server.EXEC_SERVER = exec_server.EXEC_SERVER.replace("OOM_SCORE_ADJ = b'1000'", "OOM_SCORE_ADJ = None")


def _exec_server_text(old: str, new: str) -> Callable[[], None]:
    def apply() -> None:
        from rsigym.sandbox import exec_server

        assert old in exec_server.EXEC_SERVER, old
        exec_server.EXEC_SERVER = exec_server.EXEC_SERVER.replace(old, new)

    return apply


def _init_server_text(old: str, new: str) -> Callable[[], None]:
    """PID 1's program (the reaper and INIT server) with ``old`` replaced."""
    def apply() -> None:
        from rsigym.sandbox import engine

        assert old in engine.INIT_SERVER, old
        engine.INIT_SERVER = engine.INIT_SERVER.replace(old, new)

    return apply


def _batch_read_ahead() -> None:
    """The server reads every stdin of a batch before its first fork (as one read would)."""
    for old, new in (('    for size in req["runs"]:', '    ahead = iter([read_payload(n) for n in req["runs"]])\n    for size in req["runs"]:'),
                     ("    data = read_payload(size)\n", "    data = next(ahead)\n"),
                     ("            read_payload(size)[:] = bytes(size)", "            next(ahead)[:] = bytes(size)")):
        _exec_server_text(old, new)()


def _coderepair_one_process() -> None:
    """Every code repair batch in one process, each job a fork of it (the runner before issue 27)."""
    from rsigym.envs.coderepair import execution

    original = execution.run_jobs

    def run_jobs(sandbox: Any, jobs: Any, *, trusted: bool = False) -> Any:
        return original(sandbox, jobs, trusted=True)

    execution.run_jobs = run_jobs  # before the env and graders import it


def _coderepair_program_namespace() -> None:
    """A test takes every name it reads that the program defines at module level from the program
    (``abs``, ``str``, ``poly``...), as before issue 38, not only the entry function."""
    import ast

    from rsigym.envs.coderepair import execution

    def program_names(job: Any) -> tuple[str, ...]:
        try:
            body = ast.parse(job.source).body
        except SyntaxError:
            body = []
        defined = {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        defined |= {t.id for n in body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        return ("candidate", job.entry, *sorted(defined))

    execution.Job.program_names = property(program_names)  # type: ignore[method-assign,assignment]


def _coderepair_frames_uncapped() -> None:
    """The collector parses any runner frame up to the wire's 8 MiB (before issue 38)."""
    from rsigym.envs.coderepair import execution

    old = "MAX_REPLY_BYTES = 1024 * 1024\nMAX_REPLY_ITEMS = 20000\n"
    assert old in execution.COLLECTOR
    execution.COLLECTOR = execution.COLLECTOR.replace(old, "MAX_REPLY_BYTES = MAX_FRAME\nMAX_REPLY_ITEMS = 1 << 62\n")


# The evolution clearing as it was: a recursive walk (a directory 3,000 deep ends in RecursionError).
_RECURSIVE_REMOVE = r"""
def remove_tree(path):
    import os
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, 0o700)
        for name in os.listdir(path):
            remove_tree(os.path.join(path, name))
        os.rmdir(path)
    else:
        os.unlink(path)
"""


def _recursive_clearing() -> None:
    from rsigym.sandbox import container_scripts

    container_scripts.REMOVE_TREE = _RECURSIVE_REMOVE  # before the evolution harness is built from it


def _no_cleanup_fallback() -> None:
    from rsigym.envs.evolution.evaluator import SandboxEvaluator

    SandboxEvaluator._cleared = lambda self, kind, cost, session, result: result  # type: ignore[method-assign]


def _workflow_listing_not_isolated() -> None:
    """The workspace listing as ``python3 -S`` (the cwd on sys.path: a planted json.py is imported)."""
    from rsigym.envs.workflow import aec_workspace

    original = aec_workspace.Workspace._list

    def _list(self: Any, sandbox: Any) -> Any:
        class NotIsolated:
            def __getattr__(self, name: str) -> Any:
                return getattr(sandbox, name)

            def exec(self, argv: list[str], **kwargs: Any) -> Any:
                return sandbox.exec(["-S" if arg == "-I" else arg for arg in argv], **kwargs)

        return original(self, NotIsolated())

    aec_workspace.Workspace._list = _list  # type: ignore[method-assign]


def _workflow_listing_uncapped() -> None:
    """The listing copies back every file whole: no count or size cap, no fitting under the output limit."""
    from rsigym.envs.workflow import aec_workspace

    for old, new in (("if info.st_size > max_file or len(out) >= max_files or total + info.st_size > max_total:",
                      "if False:"), ("data = handle.read(max_file + 1)", "data = handle.read()"),
                     ("while len(text.encode()) > cap and out:", "while False:")):
        assert old in aec_workspace._COLLECT, old
        aec_workspace._COLLECT = aec_workspace._COLLECT.replace(old, new)


def _workflow_bad_listing_raises() -> None:
    """A listing that cannot be read back raises (the env fails, recorded as infra_error) instead of
    being the agent's error observation."""
    from rsigym.envs.workflow import aec_workspace

    original = aec_workspace.Workspace._list

    def _list(self: Any, sandbox: Any) -> Any:
        listing, problem = original(self, sandbox)
        if listing is None:
            raise RuntimeError(f"the workspace listing failed: {problem}")
        return listing, problem

    aec_workspace.Workspace._list = _list  # type: ignore[method-assign]


def _workflow_key_from_task_id() -> None:
    """Tasks drawn from the public task id alone (crc32 seed, as before issue 27): no run secret."""
    import zlib

    import numpy as np

    from rsigym.envs.workflow import aec, graders, tasks

    def make_task(task_id: str, salt: str) -> Any:
        _, family = tasks._family(task_id)
        files, key = family.generate(np.random.default_rng(zlib.crc32(task_id.encode())))
        return tasks.WorkflowTask(task_id, family, {**files, "task.md": tasks.task_brief(task_id)}, key, salt)

    for module in (tasks, aec, graders):
        module.make_task = make_task  # type: ignore[attr-defined]


MUTATIONS: dict[str, Callable[[], None]] = {
    "network_mode=none": _drop_host_config("network_mode"),
    "read_only root": _drop_host_config("read_only"),
    'cap_drop=["ALL"]': _drop_host_config("cap_drop"),
    "no-new-privileges": _drop_host_config("security_opt"),
    "pids_limit": _drop_host_config("pids_limit"),
    "memory limit (and no swap)": _drop_host_config("mem_limit", "memswap_limit"),
    "unprivileged exec user": _exec_as_root,
    "PID 1 under its own uid": _pid1_as_exec_user,
    "reset": _no_reset,
    "reset verification": _no_reset_verification,
    "PID 1 reaps while it serves": _init_server_text("def reap():\n", "def reap():\n    return\n"),
    "PID 1 outlives its serving (a reaper to the end)": _init_server_text(
        "except BaseException:\n    pass\nwhile True:  # a reaper only", "except BaseException:\n    os._exit(0)\nwhile True:  # a reaper only"),
    "/dev/shm emptied on reset": _no_dev_shm_wipe,
    "tmpfs files bounded (nr_inodes)": _tmpfs_files_unbounded,
    "user commands first in the OOM killer's order": _oom_order_flat,
    "kill at the end of each exec": _no_kill_after_exec,
    "exec server non-dumpable": _exec_server_text("prctl(4, 0, 0, 0, 0)", "prctl(4, 1, 0, 0, 0)"),
    "exec server kill after each command": _exec_server_text("def sweep():\n", "def sweep():\n    return\n"),
    "exec server inherited-state check": _exec_server_text("if inherited() != INHERITED:", "if False:"),
    "exec server I/O priority check": _exec_server_text("io_priority(), sched_attr())", "sched_attr())"),
    "exec server: a forked program gets only its own three fds": _exec_server_text("        os.closerange(3, MAX_FD)\n", ""),
    "exec server: a batch's later stdins read only when their fork starts": _batch_read_ahead,
    "code repair: fresh interpreter per test": _coderepair_one_process,
    "code repair: checker namespace from the entry and prompt helpers only": _coderepair_program_namespace,
    "code repair: frame size and nesting capped before parsing": _coderepair_frames_uncapped,
    "evolution clearing without recursion": _recursive_clearing,
    "evolution clean-up fallback (reset, charge the leaver)": _no_cleanup_fallback,
    "workflow: workspace listing isolated (python3 -I)": _workflow_listing_not_isolated,
    "workflow: listing caps (count, size, output fit)": _workflow_listing_uncapped,
    "workflow: a bad listing is an error observation": _workflow_bad_listing_raises,
    "workflow: answer key from a per-run secret": _workflow_key_from_task_id,
}


# ---- issue 27 item 4: redaction by structure (helper issue27b) --------------------------------
# Each rule of ``rsigym.records.redact`` removed in turn; ``tests/security/test_secrets_by_structure.py``
# must notice. The end-to-end test runs ``rsigym`` in subprocesses, so the mutation also reaches
# them: the child puts a ``sitecustomize`` module on PYTHONPATH that applies it at start-up.
_NEVER = r"(?!)"  # a pattern that matches nothing


def _redact_rule_off(*names: str) -> Callable[[], None]:
    def apply() -> None:
        import re

        from rsigym.records import redact

        for name in names:
            setattr(redact, name, re.compile(_NEVER))

    return apply


def _no_secret_registration() -> None:
    from rsigym.scenario import spec as scenario

    scenario.register_secrets_in = lambda value: None  # type: ignore[assignment]


REDACTION_MUTATIONS: dict[str, Callable[[], None]] = {
    "redaction: URL userinfo": _redact_rule_off("_USERINFO"),
    "redaction: URL query values": _redact_rule_off("_PAIR_VALUE"),
    "redaction: header mappings (headers, extra_headers)": _redact_rule_off("_HEADERS_KEY"),
    "redaction: header lines in text (Cookie: ...)": _redact_rule_off("_HEADER_TEXT"),
    "redaction: secret words in key names (cookie, signature)": _redact_rule_off("_SECRET_WORD"),
    "redaction: *-key and *-token key names": _redact_rule_off("_KEY_SUFFIX"),
    "redaction: configured secrets registered by value": _no_secret_registration,
}
REDACTION_TESTS = ["tests/security/test_secrets_by_structure.py"]
MUTATIONS.update(REDACTION_MUTATIONS)


def _propagate_to_subprocesses(name: str) -> None:
    """Make every Python process the tests start apply mutation ``name`` too (sitecustomize)."""
    import os

    folder = tempfile.mkdtemp(prefix="rsigym-mutation-")
    pathlib.Path(folder, "sitecustomize.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(REPO / 'benchmarks')!r})\n"
        "import sandbox_mutation_check\n"
        f"sandbox_mutation_check.MUTATIONS[{name!r}]()\n")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p)


def _pytest_args(name: str, tests: list[str]) -> list[str]:
    if name in REDACTION_MUTATIONS:
        _propagate_to_subprocesses(name)
        return REDACTION_TESTS
    if name in ORPHAN_MUTATIONS:
        _propagate_to_subprocesses(name)
        return ORPHAN_TESTS if tests == TESTS else tests
    return ["-m", "docker", "-k", DESELECT, *tests]
# ---- end of the issue 27 item 4 block ---------------------------------------------------------


# ---- issue 27 item 6: a run's workers never outlive it (``rsigym.runner.orphans``) -------------
# Two lines, each removed alone and then both; the runs the tests start are subprocesses, so the
# mutation reaches them through ``sitecustomize`` as the redaction rows do. Local and docker tests.
def _no_watchdog() -> None:
    from rsigym.runner import orphans

    orphans.WATCHDOG = "import sys\nfor line in sys.stdin:\n    pass\n"  # reads the pids, ends nothing


def _no_parent_watch() -> None:
    from rsigym.runner import orphans

    orphans._start = lambda wait, name: None  # type: ignore[assignment]


def _no_orphan_defence() -> None:
    _no_watchdog()
    _no_parent_watch()


ORPHAN_MUTATIONS: dict[str, Callable[[], None]] = {
    "orphans: the run's watchdog process": _no_watchdog,
    "orphans: each worker's parent watch": _no_parent_watch,
    "orphans: both (workers outlive a killed run)": _no_orphan_defence,
}
ORPHAN_TESTS = ["tests/security/test_orphan_workers.py"]
MUTATIONS.update(ORPHAN_MUTATIONS)


class _Failures:
    """A pytest plugin that collects the ids of failed tests."""

    def __init__(self) -> None:
        self.failed: list[str] = []

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed and report.nodeid not in self.failed:
            self.failed.append(report.nodeid)


def _child(name: str, out_path: str, tests: list[str]) -> int:
    import pytest

    MUTATIONS[name]()
    failures = _Failures()
    code = pytest.main(["-q", "-p", "no:cacheprovider", *_pytest_args(name, tests)], plugins=[failures])
    pathlib.Path(out_path).write_text(json.dumps(failures.failed))
    return int(code)


def main(only: list[str] | None = None, tests: list[str] | None = None) -> dict[str, list[str]]:
    """Run every mutation (or ``only`` these) against ``tests`` (default ``TESTS``); print the
    table; return setting -> failed tests."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    names = only or list(MUTATIONS)
    results: dict[str, list[str]] = {}
    seconds: dict[str, float] = {}
    for name in names:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            started = time.monotonic()
            subprocess.run([sys.executable, __file__, "--child", name, out.name, *(tests or TESTS)], cwd=REPO,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            seconds[name] = time.monotonic() - started
            text = pathlib.Path(out.name).read_text()
            results[name] = json.loads(text) if text else ["<the run did not finish>"]
    table = Table(title="Hardening settings removed one at a time: the tests that fail")
    table.add_column("setting removed")
    table.add_column("failed", justify="right")
    table.add_column("guarded", justify="center")
    table.add_column("failing tests")
    for name in names:
        failed = results[name]
        short = [test.split("::", 1)[-1] for test in failed]
        table.add_row(name, str(len(failed)), "yes" if failed else "NO", escape("\n".join(short)))
    Console(width=200).print(table)
    return results


# ---- issue 38 hole 4: a provider's usage is not trusted (helper i38-providers) -----------------
# The client as it was: the provider's token counts taken as reported (negative, or 0 for a missing
# usage) and LiteLLM's price of them, however negative. ``tests/security/test_provider_walls.py``
# must notice (its cost limit runs are in-process; subprocesses get the mutation all the same).
def _usage_trusted() -> None:
    from rsigym.llm import client as llm

    def reported_tokens(response: Any) -> tuple[int, int]:
        reported = getattr(response, "usage", None)
        return (int(getattr(reported, "prompt_tokens", 0) or 0), int(getattr(reported, "completion_tokens", 0) or 0))

    def cost_usd(litellm: Any, response: Any, model: str) -> float:
        return float((getattr(response, "_hidden_params", None) or {}).get("response_cost") or 0.0)

    llm.reported_tokens, llm.cost_usd = reported_tokens, cost_usd  # type: ignore[assignment]


COST_MUTATIONS: dict[str, Callable[[], None]] = {
    "cost clamp: untrusted usage replaced by a local count": _usage_trusted,
}
COST_TESTS = ["tests/security/test_provider_walls.py"]
MUTATIONS.update(COST_MUTATIONS)


def _cost_rows_first(earlier: Callable[[str, list[str]], list[str]]) -> Callable[[str, list[str]], list[str]]:
    def pytest_args(name: str, tests: list[str]) -> list[str]:
        if name in COST_MUTATIONS:
            _propagate_to_subprocesses(name)
            return COST_TESTS if tests == TESTS else tests
        return earlier(name, tests)

    return pytest_args


_pytest_args = _cost_rows_first(_pytest_args)
# ---- end of the issue 38 block ------------------------------------------------------------------

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=list(MUTATIONS), help="run only these mutations")
    parser.add_argument("--tests", nargs="*", help=f"test paths to run (default: {' '.join(TESTS)})")
    parser.add_argument("--child", nargs="+", metavar="NAME OUT TEST", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.exit(_child(args.child[0], args.child[1], args.child[2:]))
    main(args.only, args.tests)
