"""The served run folder: one writer for every session's records, fsynced, as the runner writes.

A server holds its run folder's lock (``rsigym.runner.lock``: one writer per run folder) and one
``RecordWriter`` for as long as it serves. Sessions run on their own threads; each finished
episode's record is graded live (the graders named at start) and appended under one lock, one
fsynced line each, so ``rsigym report``, ``regrade``, ``view`` and ``export`` read a served folder
as they read a run. ``serve.json`` says what was served (env id, kwargs, graders, versions).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from rsigym.grader import get_grader, grade_record
from rsigym.records.jsonl import RecordWriter, read_records, remove_stale_temporaries
from rsigym.records import AgentSpec, EnvRef, Trajectory, canonical_json, to_jsonable, utc_now
from rsigym.records.redact import redact
from rsigym.runner import RECORDS_FILE
from rsigym.runner.lock import RunFolderLock
from rsigym.scenario import NamedSpec

__all__ = ["RunRecorder", "SERVE_FILE", "recordable_kwargs"]

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


class RunRecorder:
    """Appends served episodes' records to ``run_dir/records.jsonl``; thread-safe; a context manager.

    Args:
        run_dir: The server's run folder (created; locked while the recorder is open).
        env_id: The served env id.
        env_kwargs: Its kwargs (as recorded: ``recordable_kwargs``).
        graders: Graders that grade each record live, as the runner's do.
        condition: The served condition (``{"name", "params"}``) or None.
    """

    def __init__(self, run_dir: str | Path, env_id: str, env_kwargs: dict[str, Any],
                 graders: Sequence[NamedSpec] = (), condition: dict[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.env_id, self.env_kwargs, self.condition = env_id, recordable_kwargs(env_kwargs), condition
        self.grader_specs = list(graders)
        self._lock = threading.Lock()
        self._folder_lock = RunFolderLock(self.run_dir, command=f"rsigym serve {env_id}").acquire()
        try:
            path = self.run_dir / RECORDS_FILE
            remove_stale_temporaries(path)
            # repetitions continue from the records already there: a key is never written twice
            self._reps: Counter[str] = Counter(_rep_key(r.env, r.agent, r.seed) for r in read_records(path).records)
            self._graders = [(spec, get_grader(spec.name, **spec.params)) for spec in self.grader_specs]
            self._writer = RecordWriter(path)
            self._write_description()
        except BaseException:
            self._folder_lock.release()
            raise
        self.written = 0

    def _write_description(self) -> None:
        import rsigym

        about = {"env": {"id": self.env_id, "kwargs": self.env_kwargs, "condition": self.condition},
                 "graders": [{"name": s.name, "params": s.params} for s in self.grader_specs],
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
