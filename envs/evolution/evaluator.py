"""Running one candidate evaluation in a sandbox and turning what happened into an EvalResult.

A candidate that loops, forks, allocates without bound, floods its output, reaches for the
network or the host's files, fails to import or does not parse is **scored as failed with a
reason**; the run goes on. Only the sandbox itself failing (a dead container) raises, as
``SandboxError``, which the runner records as an infra error, never as the candidate's fault.

What each evaluation is guaranteed (docker provider; see docs/families/evolution.md for the local one):

* a fresh start: each evaluation starts a fresh runner process, which clears everything the
  user owns in the work dir, ``/tmp``, ``/dev/shm``, ``/dev/mqueue`` and its System V IPC objects
  before the candidate loads, and every process of the user is killed when the runner ends, so
  nothing of one candidate reaches the next. After each evaluation a clearing program
  (``harness.CLEAR``, no recursion: a directory thousands deep goes too) removes the same again;
  if anything is left, the sandbox is reset before the next candidate and the evaluation that
  left it fails with the reason ("the sandbox could not be cleared of this candidate's files"). On docker the runner is spawned by the sandbox's exec
  server (one engine exec per episode, not per evaluation; the server is non-dumpable, so a
  candidate cannot read or write its stream, and a candidate that kills or stops it only fails
  its own evaluation, uncached: see ``rsigym.sandbox.exec_server``);
* nothing to tamper with: the runner and harness programs are passed inline and run with
  ``python3 -I`` (no file on disk, no planted module imported); bin-packing instances reach only
  the harness process, over its stdin, and that process runs as the harness identity, which the
  candidate cannot ptrace, signal or read;
* nothing taken on trust: the host checks the packing or the assignment and computes the score.

Results are cached only where all of that holds (the docker provider).
"""

from __future__ import annotations

import ast
import hashlib
import json
import secrets
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rsigym.cache import atomic_write_bytes, cache_dir, cache_key
from rsigym.sandbox import ExecResult, Sandbox

from .harness import CLEAR, parse_result
from .tasks import EvalResult, EvolutionTask

__all__ = ["SandboxEvaluator", "CACHE_VERSION", "GUARDED_PROVIDERS"]

# 2: a fresh runner per evaluation, online bin packing in a harness process; results of version 1
# may have been forged by an earlier candidate of their episode and are never read.
CACHE_VERSION = 2
# Providers whose evaluations carry the guarantees above (two identities, private shared dirs).
GUARDED_PROVIDERS = ("docker",)
# Shared dirs of the docker provider the runner clears (what the user owns there).
_DOCKER_SHARED_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")
# Outcomes that depend on the machine's load or the provider's mechanics, never cached.
_UNCACHED = ("timed out", "killed for exceeding", "the candidate's output exceeded", "no result",
             "the sandbox could not be cleared", "the candidate process")
# Clearing after an evaluation: its time limit, and the reason charged to a candidate whose files
# could not be cleared (it starts like _UNCACHED's clearing entry: never cached).
_CLEAR_TIMEOUT_S = 30.0
_LEFT_FILES = "the sandbox could not be cleared of this candidate's files"
# Slack of the harness process over the candidate's timeout: it outlives the candidate to report.
_HARNESS_SLACK_S = 5.0


class SandboxEvaluator:
    """Evaluates candidates of one task in one sandbox (which it does not close).

    Args:
        task: The task.
        sandbox: An open sandbox; each evaluation starts fresh processes in it.
        timeout_s: Overrides the task's per-kind timeout when given.
        cache: Keep results on disk (``$RSIGYM_CACHE/evolution``) keyed by a hash of the task, its
            programs, the code, the kind, the provider and the image, so reruns and baselines
            never evaluate the same program twice. Only on a guarded provider (docker; see the
            module docstring); timeouts, memory kills, output floods and crashes without a result
            are never cached: they depend on the machine, not only on the program.
    """

    def __init__(self, task: EvolutionTask, sandbox: Sandbox, timeout_s: float | None = None,
                 cache: bool = False) -> None:
        self.task, self.sandbox, self.timeout_override = task, sandbox, timeout_s
        self.cache = cache
        self.cache_hits = 0
        self._setup_key: str | None = None
        # docker: the runner goes through one exec server (a spawn, not an engine exec, per
        # evaluation; see rsigym.sandbox.exec_server); elsewhere through sandbox.exec.
        self._server: Any = None

    @property
    def guarded(self) -> bool:
        """True when the sandbox provides the guarantees the cache needs (the docker provider)."""
        return self.sandbox.provider in GUARDED_PROVIDERS

    def cache_path(self, code: str, kind: str, version: int = CACHE_VERSION) -> Path:
        """Where the result of ``code`` evaluated as ``kind`` is cached."""
        if self._setup_key is None:  # what the sandbox runs besides the candidate, hashed once
            programs = [hashlib.sha256((text or "").encode()).hexdigest()
                        for text in (self.task.candidate_program, self.task.harness_program)]
            spec = {k: v for k, v in self.task.spec().items() if k != "timeout_s"}
            self._setup_key = cache_key("evolution-setup", spec, programs, self.sandbox.provider,
                                        self.sandbox.info.get("image"))
        key = cache_key("evolution-eval", version, self._setup_key, code, kind)
        return cache_dir("evolution") / f"{key}.json"

    def evaluate(self, code: str, kind: str) -> EvalResult:
        """Evaluate ``code`` as ``kind`` (``full``, ``partial`` or ``rest``); see the class docstring."""
        self.task.check_kind(kind)
        if not (self.cache and self.guarded):
            return self._evaluate(code, kind)
        path = self.cache_path(code, kind)
        try:
            with open(path) as fh:
                cached = EvalResult(**json.load(fh))
            self.cache_hits += 1
            return cached
        except (OSError, ValueError, TypeError):
            pass  # missing or unreadable: evaluate
        result = self._evaluate(code, kind)
        if not result.reason.startswith(_UNCACHED):
            atomic_write_bytes(path, json.dumps(asdict(result)).encode())
        return result

    def _evaluate(self, code: str, kind: str) -> EvalResult:
        cost = self.task.cost(kind)
        try:
            ast.parse(code)
        except SyntaxError as exc:  # no need to start a sandbox process for this
            return EvalResult(kind, None, f"syntax error: {exc.msg} (line {exc.lineno})", cost)
        timeout = self.timeout_override or self.task.timeout_s(kind)
        docker = self.sandbox.provider == "docker"
        session: dict[str, Any] = {"shared_dirs": list(_DOCKER_SHARED_DIRS) if docker else [], "sysv_ipc": docker}
        runner = ["python3", "-I", "-c", self.task.candidate_program]
        run_runner = self._runner_exec()
        if self.task.harness_program is None:
            run = run_runner(runner, stdin=_stdin(session, code), timeout=timeout)
            return self._cleared(kind, cost, session, self._result(kind, cost, timeout, run, run))
        session.update(socket="rsigym-eval-" + secrets.token_hex(16), connect_timeout_s=timeout)
        harness_input = (json.dumps({"socket": session["socket"], "timeout_s": timeout + 2.0}).encode() + b"\n"
                         + self.task.harness_input(kind))
        outcome: dict[str, Any] = {}

        def run_harness() -> None:
            try:
                outcome["run"] = self.sandbox.exec(["python3", "-I", "-c", self.task.harness_program or ""],
                                                   stdin=harness_input, timeout=timeout + _HARNESS_SLACK_S,
                                                   as_user="harness")
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                outcome["error"] = exc

        thread = threading.Thread(target=run_harness, name="rsigym-evolution-harness", daemon=True)
        thread.start()
        try:
            run = run_runner(runner, stdin=_stdin(session, code), timeout=timeout)
        finally:
            thread.join()
        if "error" in outcome:
            raise outcome["error"]
        return self._cleared(kind, cost, session, self._result(kind, cost, timeout, run, outcome["run"]))

    def _cleared(self, kind: str, cost: float, session: dict[str, Any], result: EvalResult) -> EvalResult:
        """Clear what the candidate left (its processes are gone already); when that fails, reset
        the sandbox before the next candidate and charge the failure to this one."""
        argv = ["python3", "-I", "-S", "-c", CLEAR, "1" if session["sysv_ipc"] else "0", *session["shared_dirs"]]
        run = self._runner_exec()(argv, timeout=_CLEAR_TIMEOUT_S)
        left = run.stdout.strip()
        if run.exit_code == 0 and not left:
            return result
        detail = left.replace("\n", ", ") if run.exit_code == 0 else f"exit {run.exit_code}, timed out {run.timed_out}"
        reset = getattr(self.sandbox, "reset", None)
        if callable(reset):
            self._server = None  # the reset closes it; the next evaluation opens a new one
            reset()  # a reset that fails raises SandboxError: an infra error, never a score
        return EvalResult(kind, None, f"{_LEFT_FILES}: {detail[:300]}; the sandbox was reset before the next candidate",
                          cost)

    def _runner_exec(self) -> Any:
        """How the candidate's runner is started: the sandbox's exec server when it has one."""
        if self._server is None and callable(getattr(self.sandbox, "exec_server", None)):
            self._server = self.sandbox.exec_server()  # type: ignore[attr-defined]
        return self._server.exec if self._server is not None else self.sandbox.exec

    def _result(self, kind: str, cost: float, timeout: float, run: ExecResult, result_run: ExecResult) -> EvalResult:
        """``run``: the candidate's process; ``result_run``: the one whose output is the result."""
        if run.timed_out or result_run.timed_out:
            return EvalResult(kind, None, f"timed out after {timeout:g} s", cost)
        if run.oom_killed or result_run.oom_killed:
            return EvalResult(kind, None, "killed for exceeding the memory limit", cost)
        if run.output_truncated:
            return EvalResult(kind, None, "the candidate's output exceeded the sandbox's output cap", cost)
        payload = parse_result(result_run.stdout)
        if payload is None:
            tail = " ".join((result_run.stderr or run.stderr).strip().splitlines()[-2:])[-300:]
            detail = f": {tail}" if tail else ""
            return EvalResult(kind, None, f"no result (exit status {result_run.exit_code}){detail}", cost)
        if "error" in payload:
            return EvalResult(kind, None, str(payload["error"])[:500], cost)
        return self.task.score(kind, payload)


def _stdin(session: dict[str, Any], code: str) -> bytes:
    """The runner's stdin: one JSON header line, then the candidate's source."""
    return json.dumps(session).encode() + b"\n" + code.encode("utf-8", "surrogatepass")
