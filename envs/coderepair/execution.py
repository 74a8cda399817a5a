"""Host side of a test run: a harness-side collector per batch, a fresh runner per test (``sandbox_program``)."""

from __future__ import annotations

import ast
import functools
import json
import marshal
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Sequence

from rsigym.errors import InfraError
from rsigym.sandbox import ExecResult, Sandbox, SandboxLimits

from .sandbox_program import COLLECTOR, END_PROGRAM, RUNNER, TRUSTED_BATCH, parse_batch

__all__ = ["CODEREPAIR_LIMITS", "Job", "JobResult", "run_jobs"]

# A runner's allowance for starting, on top of loading and its test; and how long it waits for
# the collector to listen (the collector itself may still be starting: one engine exec).
_STARTUP_S = 1.0
_CONNECT_WAIT_S = 10.0
_COLLECTOR_GRACE_S = 2.0

# Standard-library modules the exec server imports once, so that a test's runner (a fork of it)
# finds them loaded: most candidates start with ``from typing import List``, whose import costs
# more than the fork. None of them keeps state from its import that a fork would share (``random``,
# seeded at import, is left out).
PRELOADED_MODULES = ("typing", "math", "string", "copy", "heapq", "bisect")

# Candidates are small pure functions; each test runs in its own interpreter.
CODEREPAIR_LIMITS = SandboxLimits(memory_mb=512, pids=64, file_size_mb=8, output_bytes=8_000_000)


@dataclass(frozen=True)
class Job:
    """One program and its tests; each test runs in a fresh interpreter. See ``sandbox_program``.

    A test runs in the checker namespace: builtins, ``helpers`` and ``prelude`` (trusted text, run
    on the harness side; ``helpers`` is the problem's own helper functions, ``Problem.helpers``)
    and, of the program, only ``program_names``: its entry function.
    """

    key: str
    source: str
    entry: str
    tests: Sequence[str]
    prelude: str = ""
    mode: str = "check"
    timeout_s: float = 3.0
    helpers: str = ""

    @property
    def program_names(self) -> tuple[str, ...]:
        """The names a test may take from the program: its entry, as ``candidate`` and by name."""
        return ("candidate", self.entry)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "source": self.source, "entry": self.entry, "tests": list(self.tests),
                "prelude": self.prelude, "mode": self.mode, "timeout_s": float(self.timeout_s),
                "helpers": self.helpers}


@dataclass(frozen=True)
class JobResult:
    """Per-test outcomes of one job: ``status`` pass | fail | error | timeout (check mode), ok (eval)."""

    key: str
    tests: list[dict[str, Any]] = field(default_factory=list)
    load_error: str | None = None

    @property
    def passed(self) -> list[bool]:
        return [t.get("status") == "pass" for t in self.tests]

    @property
    def all_pass(self) -> bool:
        return bool(self.tests) and all(self.passed)

    def failure_type(self) -> str | None:
        """None when every test passed; else ``load``, ``timeout``, ``error:<Type>`` or ``wrong``."""
        if self.load_error is not None:
            return "load"
        for test in self.tests:
            status = test.get("status")
            if status == "timeout":
                return "timeout"
            if status == "error":
                return f"error:{test.get('type')}"
        return None if self.all_pass else "wrong"


def run_jobs(sandbox: Sandbox, jobs: Sequence[Job], *, trusted: bool = False) -> dict[str, JobResult]:
    """Run every test of ``jobs``, each in a fresh interpreter, judged by a harness-side collector.

    ``trusted=True`` is for programs the simulator generated itself (reference solutions and the
    mixture coder's catalogue, labelled once and cached): the whole batch runs in one harness
    process, each job in a forked child (``TRUSTED_BATCH``), which is 20 times faster. Never for
    a program an agent chose or a model wrote.

    See ``sandbox_program`` for the two sides. The host starts the collector (as the harness
    identity, in a thread) with the tests, then one runner per test as the user (docker: a fork of
    the user's exec server, ``ExecServer.run_python_many``, with ``PRELOADED_MODULES`` loaded),
    one after another, each after the previous one and everything it left were killed, each with
    its job on its stdin (its one-time token and the program; never the test); the runner's own
    output and exit status are ignored. In check mode a test whose runner ran past the test's timeout ends its job: the
    rest read ``timeout`` unrun (one endless loop costs one timeout, as a forked child did).

    Raises:
        InfraError: the collector returned no result (the sandbox failed, not a program).
    """
    if not jobs:
        return {}
    if len({job.key for job in jobs}) != len(jobs):
        raise ValueError("job keys must be unique within a batch")
    if trusted:
        return _run_trusted(sandbox, jobs)
    socket_name = "rsigym-coderepair-" + secrets.token_hex(16)
    units: dict[str, dict[str, Any]] = {}  # token -> what the collector needs for the test
    plan: list[list[str]] = []  # per job, the tokens of its tests in order
    stdins: list[list[bytes]] = []  # per job, each runner's job: the program, never the test
    for job in jobs:
        tokens, runner_jobs = [], []
        for test in job.tests:
            token = secrets.token_hex(16)
            units[token] = {"prelude": job.prelude, "helpers": job.helpers, "program_names": list(job.program_names),
                            "mode": job.mode, "timeout_s": float(job.timeout_s), "test": test}
            tokens.append(token)
            runner_jobs.append(marshal.dumps({
                "socket": socket_name, "token": token, "wait_s": _CONNECT_WAIT_S, "source": job.source,
                "entry": job.entry, "prelude": job.prelude, "timeout_s": float(job.timeout_s),
                "names": names_read(test, job.program_names)}, 4))
        plan.append(tokens)
        stdins.append(runner_jobs)
    end_token = secrets.token_hex(16)
    budget_s = sum(_runner_timeout_s(job) + 0.5 for job in jobs for _ in job.tests) + 30.0
    # marshal version 4: read alike by every Python 3 from 3.4 on (the sandbox's may differ from ours)
    config = marshal.dumps({"socket": socket_name, "end_token": end_token, "budget_s": budget_s, "units": units}, 4)
    outcome: dict[str, Any] = {}

    run_harness = _harness_exec(sandbox)

    def collect() -> None:
        try:
            outcome["run"] = run_harness(COLLECTOR, stdin=config, timeout=budget_s + 10.0)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=collect, name="rsigym-coderepair-collector", daemon=True)
    thread.start()
    run_user, run_job = _user_exec(sandbox), _job_runner(sandbox)
    skipped: set[str] = set()
    try:
        for job, tokens, runner_jobs in zip(jobs, plan, stdins):
            # check mode: a test whose runner ran past the test's timeout ends its job
            runs = run_job(RUNNER, runner_jobs, timeout=_runner_timeout_s(job),
                           stop_after_s=job.timeout_s if job.mode == "check" else None)
            skipped.update(token for token, run in zip(tokens, runs) if run is None)
    finally:
        # The collector ends by itself once every test reported; when one did not (skipped, or its
        # runner never connected), the end token tells it to print what it has.
        thread.join(timeout=0.0 if skipped else _COLLECTOR_GRACE_S)
        if thread.is_alive():
            end = f"{socket_name} {end_token} {_COLLECTOR_GRACE_S}"
            run_user(END_PROGRAM, stdin=end, timeout=30.0)
            thread.join()
    if "error" in outcome:
        raise outcome["error"]
    run = outcome["run"]
    results = parse_batch(run.stdout)
    if results is None:
        tail = " ".join(run.stderr.strip().splitlines()[-2:])[-300:]
        raise InfraError(f"coderepair test collector returned no result (exit {run.exit_code}, timed out "
                         f"{run.timed_out}, {len(jobs)} jobs): {tail}")
    return {job.key: _job_result(job, tokens, results, skipped) for job, tokens in zip(jobs, plan)}


def _run_trusted(sandbox: Sandbox, jobs: Sequence[Job]) -> dict[str, JobResult]:
    budget_s = sum(job.timeout_s * (len(job.tests) + 1) + 1.5 for job in jobs) + 10.0
    payload = json.dumps({"jobs": [job.to_json() for job in jobs]}).encode("utf-8", "surrogatepass")
    run = sandbox.exec(["python3", "-I", "-c", TRUSTED_BATCH], stdin=payload, timeout=budget_s, as_user="harness")
    results = parse_batch(run.stdout)
    if results is None:
        tail = " ".join(run.stderr.strip().splitlines()[-2:])[-300:]
        raise InfraError(f"coderepair trusted batch returned no result (exit {run.exit_code}, timed out "
                         f"{run.timed_out}, {len(jobs)} jobs): {tail}")
    out = {}
    for job in jobs:
        raw = results.get(job.key) or {}
        load = raw.get("load") or {}
        load_error = None if load.get("load") == "ok" else f"{load.get('load')}: {load.get('detail', '')}".strip()
        out[job.key] = JobResult(job.key, list(raw.get("tests") or []), load_error)
    return out


def _runner_timeout_s(job: Job) -> float:
    """One runner's wall-clock limit: loading, the test, start-up and connecting."""
    return 2.0 * job.timeout_s + _STARTUP_S + _CONNECT_WAIT_S


def _harness_exec(sandbox: Sandbox) -> Callable[..., ExecResult]:
    """Runs a Python program (``python3 -I -S -c``) as the harness identity: see ``_user_exec``."""
    return _python_runner(sandbox, "harness")


def _user_exec(sandbox: Sandbox) -> Callable[..., ExecResult]:
    """Runs a Python program (``python3 -I -S -c``) as the user: a fork of the sandbox's pristine
    exec server when it has one (no interpreter start, no engine exec), else a fresh interpreter."""
    return _python_runner(sandbox, "user")


def _job_runner(sandbox: Sandbox) -> Callable[..., list[ExecResult | None]]:
    """Runs one job's runners as the user, one after another: one request to the exec server
    (``run_python_many``: each a fork that gets only its own stdin) when the sandbox has one."""
    server = getattr(sandbox, "exec_server", None)
    if callable(server):
        return functools.partial(server().run_python_many, preload=PRELOADED_MODULES)
    run_user = _user_exec(sandbox)

    def run(program: str, stdins: Sequence[bytes], *, timeout: float, stop_after_s: float | None) -> list[ExecResult | None]:
        results: list[ExecResult | None] = []
        for stdin in stdins:
            if results and stop_after_s is not None and _stopped(results[-1], stop_after_s):
                results.append(None)
                continue
            results.append(run_user(program, stdin=stdin, timeout=timeout))
        return results

    return run


def names_read(test: str, program_names: Collection[str] | None = None) -> list[str]:
    """The names ``test`` reads and does not bind itself, and ``candidate``; with
    ``program_names``, only those of them (the names the runner reports: the host's copy of the
    collector's ``read_names``, which binds no other name of the program). A test that does not
    parse gets ``["candidate"]``: the collector reports its syntax error."""
    try:
        tree = ast.parse(test, "test.py")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ["candidate"]
    loads: set[str] = set()
    stores: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stores.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            stores.add(node.name)
    names = (loads - stores) | {"candidate"}
    return sorted(names if program_names is None else names & {"candidate", *program_names})


def _stopped(run: ExecResult | None, stop_after_s: float) -> bool:
    return run is None or run.timed_out or run.duration_s >= stop_after_s


def _python_runner(sandbox: Sandbox, identity: str) -> Callable[..., ExecResult]:
    server = getattr(sandbox, "exec_server", None)
    if callable(server):
        return server(identity).run_python

    def run(program: str, **kwargs: Any) -> ExecResult:
        return sandbox.exec(["python3", "-I", "-S", "-c", program], as_user=identity, **kwargs)  # type: ignore[arg-type]

    return run


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _job_result(job: Job, tokens: list[str], results: dict[str, Any], skipped: set[str]) -> JobResult:
    """The job's outcome in the shape a forked child gave it: a load failure of its first test
    fails every test; in check mode a timeout ends the job."""
    if not tokens:
        return JobResult(job.key, [], None)
    load = _as_dict(_as_dict(results.get(tokens[0])).get("load")) or {"load": "crashed"}
    if load.get("load") != "ok":
        detail = str(load.get("detail", ""))
        failed = [{"status": "error", "type": "load_" + str(load.get("load")), "detail": detail} for _ in tokens]
        return JobResult(job.key, failed, f"{load.get('load')}: {detail}".strip())
    tests: list[dict[str, Any]] = []
    for token in tokens:
        if job.mode == "check" and any(t.get("status") == "timeout" for t in tests):
            tests.append({"status": "timeout", "detail": "not run after an earlier test timed out"})
            continue
        if token in skipped:
            tests.append({"status": "timeout", "detail": "not run: the previous test's process ran past its timeout"})
            continue
        raw = _as_dict(results.get(token))
        unit_load = _as_dict(raw.get("load")) or {"load": "crashed"}
        if unit_load.get("load") != "ok":
            tests.append({"status": "error", "type": "load_" + str(unit_load.get("load")),
                          "detail": str(unit_load.get("detail", ""))})
        elif isinstance(raw.get("test"), dict):
            tests.append(dict(raw["test"]))
        else:
            tests.append({"status": "error", "type": "crashed"})
    return JobResult(job.key, tests, None)
