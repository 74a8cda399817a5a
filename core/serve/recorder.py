"""The served run folder: one writer for every session's records, fsynced, as the runner writes.

A server holds its run folder's lock (``rsigym.runner.lock``: one writer per run folder) and one
``RecordWriter`` for as long as it serves. Sessions run on their own threads; each finished
episode's record is graded live (the graders named at start) and appended under one lock, one
fsynced line each, so ``rsigym report``, ``regrade``, ``view`` and ``export`` read a served folder
as they read a run. ``serve.json`` says what was served (env id, kwargs, graders, versions).

A server writes only into a folder it owns (``check_owned``): one without records, or one whose
records ``rsigym serve`` of the same env wrote. A battery's folder (``manifest.json`` or the
scenario copy of ``rsigym run``) or records of unknown origin are refused before anything in the
folder is touched, the lock file included, so a client can never add its episodes to them.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from rsigym.errors import UserError
from rsigym.grader import get_grader, grade_record
from rsigym.records.jsonl import RecordWriter, read_records, remove_stale_temporaries
from rsigym.records import AgentSpec, EnvRef, Trajectory, canonical_json, to_jsonable, utc_now
from rsigym.records.redact import redact
from rsigym.runner import RECORDS_FILE
from rsigym.runner.lock import RunFolderLock
from rsigym.scenario import NamedSpec
from rsigym.scenario.manifest import MANIFEST_FILE, SCENARIO_COPY

__all__ = ["RunRecorder", "SERVE_FILE", "recordable_kwargs", "check_owned"]

SERVE_FILE = "serve.json"


def recordable_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Env kwargs as a record holds them: JSON values as they are, any other object by its type
    (a stand-in injected from Python, e.g. a test's trial runner, is named, not serialised)."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        try:
            out[key] = to_jsonable(value)
        except TypeError:
            out[key] = f"<{type(value).__module__}.{type(value).__qualname__}>"
    return out


def check_owned(run_dir: Path, env_id: str) -> None:
    """Refuse a run folder this server does not own: a battery's, another env's, or one holding
    records without ``serve.json``. Reads only.

    Raises:
        UserError: One line naming the folder and why.
    """
    run_dir = Path(run_dir)
    for name in (MANIFEST_FILE, SCENARIO_COPY):
        if (run_dir / name).exists():
            raise UserError(f"serve: {run_dir} holds a run of rsigym run or regrade ({name}); a server writes only "
                            "into its own folder: use another --out")
    about = run_dir / SERVE_FILE
    if not about.exists():
        if (run_dir / RECORDS_FILE).exists():
            raise UserError(f"serve: {run_dir} holds {RECORDS_FILE} that no rsigym serve wrote (no {SERVE_FILE}); "
                            "use another --out")
        return
    try:
        served = json.loads(about.read_text(encoding="utf-8"))["env"]["id"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"serve: {about} is unreadable ({type(exc).__name__}); use another --out") from None
    if served != env_id:
        raise UserError(f"serve: {run_dir} holds records of rsigym serve {str(served)[:80]}, not {env_id}; "
                        "use another --out")


class RunRecorder:
    """Appends served episodes' records to ``run_dir/records.jsonl``; thread-safe; a context manager.

    Args:
        run_dir: The server's run folder (created; locked while the recorder is open).
        env_id: The served env id.
        env_kwargs: Its kwargs (as recorded: ``recordable_kwargs``).
        graders: Graders that grade each record live, as the runner's do.
        condition: The served condition (``{"name", "params"}``) or None.
        max_steps: The step cap in force (``ServeConfig.step_cap``), written to ``serve.json``.
    """

    def __init__(self, run_dir: str | Path, env_id: str, env_kwargs: dict[str, Any],
                 graders: Sequence[NamedSpec] = (), condition: dict[str, Any] | None = None,
                 max_steps: int | None = None) -> None:
        self.run_dir, self.max_steps = Path(run_dir), max_steps
        self.env_id, self.env_kwargs, self.condition = env_id, recordable_kwargs(env_kwargs), condition
        self.grader_specs = list(graders)
        self._lock = threading.Lock()
        check_owned(self.run_dir, env_id)  # before the lock: taking it rewrites the lock file
        self._folder_lock = RunFolderLock(self.run_dir, command=f"rsigym serve {env_id}").acquire()
        try:
            check_owned(self.run_dir, env_id)  # again, now that no other writer can start in between
            self._write_description()  # before the first record: records.jsonl never exists without it
            path = self.run_dir / RECORDS_FILE
            remove_stale_temporaries(path)
            # repetitions continue from the records already there: a key is never written twice
            self._reps: Counter[str] = Counter(_rep_key(r.env, r.agent, r.seed) for r in read_records(path).records)
            self._graders = [(spec, get_grader(spec.name, **spec.params)) for spec in self.grader_specs]
            self._writer = RecordWriter(path)
        except BaseException:
            self._folder_lock.release()
            raise
        self.written = 0

    def _write_description(self) -> None:
        import rsigym

        about = {"env": {"id": self.env_id, "kwargs": self.env_kwargs, "condition": self.condition},
                 "graders": [{"name": s.name, "params": s.params} for s in self.grader_specs],
                 "max_steps": self.max_steps,
                 "rsigym_version": rsigym.__version__, "started_at": utc_now()}
        path = self.run_dir / SERVE_FILE
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(redact(about), indent=2) + "\n")
        tmp.replace(path)

    def env_ref(self, task_id: str | None) -> EnvRef:
        return EnvRef(self.env_id, dict(self.env_kwargs), task_id, self.condition)

    def next_rep(self, env: EnvRef, agent: AgentSpec, seed: int) -> int:
        """The repetition number of a new episode of (env, agent, seed): 0, 1, ... in this folder."""
        with self._lock:
            key = _rep_key(env, agent, seed)
            rep = self._reps[key]
            self._reps[key] += 1
            return rep

    def finish(self, record: Trajectory) -> None:
        """Grade ``record`` live (not an infra_error) and append it, fsynced."""
        if record.termination != "infra_error":
            for spec, grader in self._graders:
                record.grades.append(grade_record(grader, record))
        with self._lock:
            self._writer.write(record)
            self.written += 1

    def close(self) -> None:
        with self._lock:
            self._writer.close()
        self._folder_lock.release()

    def __enter__(self) -> "RunRecorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rep_key(env: EnvRef, agent: AgentSpec, seed: int) -> str:
    return canonical_json([env.id, env.kwargs, env.task_id, env.condition, agent.id, agent.kind, seed])
