"""An execution memo: the outcome of the harness's own run of a job (one program and its tests),
kept so that the same job is not executed again by another seed, agent or worker process.

Why it is safe: the key is a SHA-256 of everything that decides the outcome (the program source,
its entry, every test's source, the prelude, the helpers, the mode and timeout, whether the job ran
as a trusted batch or one fresh interpreter per test, the sandbox kind and image, the sandbox's
limits, the text of the sandbox-side programs that run and judge it, ``MEMO_VERSION``). A program
that differs by one character is another key, so one program's result never stands for another's.
A hit returns the ``JobResult`` a run returned (its tests and load error, under the caller's job
key): the first outcome of a key is kept, later runs of it are never made.

**Rename-invariant keys** (``ExecMemo(rename_invariant=True)``, which the env and the graders set
for the mixture coder): the simulator re-prints each catalogue entry with its locals renamed at
random (``mutation.rewrite``), so the same program comes back under new names in every seed. Such a
job is also kept under the program's canonical form (``mutation.canonical_form``: locals renamed in
order of appearance, docstring dropped), and a later job with the same canonical form is answered
from it only when neither program's renamed locals appear anywhere in the kept outcome (an error
message that names a local would differ between the two); otherwise it runs. So an answered
outcome is, byte for byte, the one a run of the renamed program gives.

Programs whose outcome may vary from run to run (a model-written program that reads the clock or a
random source) would freeze their first outcome: the env memoises by default only the mixture
coder's programs (the simulator's own catalogue, re-printed), see ``CodeRepairEnv(memo=...)``.

Store: an in-process LRU in front of one SQLite file shared by the runner's worker processes
(``$RSIGYM_CACHE/coderepair/exec-memo.sqlite``, or the path in ``RSIGYM_CODEREPAIR_MEMO``; ``off``
there turns every memo off). A store that cannot be read or written is a miss, never an error: the
job then runs as without a memo.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import sqlite3
from collections import OrderedDict
from pathlib import Path
from typing import Any, Collection, Sequence

from rsigym.cache import cache_dir
from rsigym.sandbox import Sandbox

from . import sandbox_program
from .execution import Job, JobResult, run_jobs
from .mutation import canonical_form

__all__ = ["MEMO_VERSION", "ExecMemo", "memo_enabled", "memo_key", "run_jobs_memo"]

MEMO_VERSION = 1
_ENV_VAR = "RSIGYM_CODEREPAIR_MEMO"
_LRU_ENTRIES = 20_000
# The sandbox-side programs decide the shape of every outcome: a change to them is a new memo.
_PROGRAMS_SHA = hashlib.sha256("\0".join(
    getattr(sandbox_program, name) for name in ("COLLECTOR", "RUNNER", "TRUSTED_BATCH", "END_PROGRAM")
).encode()).hexdigest()
_LRU: OrderedDict[str, str] = OrderedDict()
STATS = {"hits": 0, "misses": 0}  # this process's lookups over every memo (the benchmark's hit share)


def memo_enabled(default: bool) -> bool:
    """``default`` unless ``RSIGYM_CODEREPAIR_MEMO=off`` turns every memo off."""
    return default and os.environ.get(_ENV_VAR, "").strip().lower() not in ("off", "0", "false", "no")


def _sandbox_identity(sandbox: Sandbox) -> dict[str, Any]:
    info = sandbox.info or {}
    limits = getattr(sandbox, "limits", None)
    identity: dict[str, Any] = {"provider": info.get("provider"), "image": info.get("image"),
                                "limits": repr(limits)}
    if info.get("provider") != "docker":  # the host's interpreter runs the programs
        identity["python3"] = os.path.realpath(shutil.which("python3") or "python3")
    return identity


def memo_key(job: Job, identity: dict[str, Any], trusted: bool, namespace: str = "env",
             canonical: str | None = None) -> str:
    """SHA-256 of everything that decides ``job``'s outcome (not its batch key, a caller's label),
    and of the memo's namespace; ``canonical``: the program's canonical form stands for its source."""
    fields = job.to_json()
    del fields["key"]
    if canonical is not None:
        fields["source"], fields["canonical"] = canonical, True
    payload = json.dumps([MEMO_VERSION, _PROGRAMS_SHA, namespace, identity, bool(trusted), fields], sort_keys=True,
                         ensure_ascii=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class ExecMemo:
    """The store (see the module docstring); ``path`` None: the default file. ``namespace`` keeps
    one user's outcomes apart from another's: the graders use their own, so that the regrade's
    control (the env's live hidden outcome against ``hidden_tests`` re-executed) still compares two
    executions of each distinct program, never one execution with itself."""

    def __init__(self, path: Path | str | None = None, namespace: str = "env", rename_invariant: bool = False) -> None:
        self.namespace, self.rename_invariant = namespace, bool(rename_invariant)
        configured = os.environ.get(_ENV_VAR, "").strip()
        if path is None and configured and configured.lower() not in ("on", "1", "true", "yes"):
            path = configured
        self.path = Path(path) if path is not None else cache_dir("coderepair") / "exec-memo.sqlite"
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self.hits = self.misses = 0

    def _db(self) -> sqlite3.Connection | None:
        if self._conn is None or self._pid != os.getpid():  # a forked worker opens its own
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("CREATE TABLE IF NOT EXISTS outcomes (key TEXT PRIMARY KEY, result TEXT NOT NULL)")
            except sqlite3.Error:
                return None
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get(self, key: str) -> str | None:
        if key in _LRU:
            _LRU.move_to_end(key)
            return _LRU[key]
        db = self._db()
        try:
            row = db.execute("SELECT result FROM outcomes WHERE key = ?", (key,)).fetchone() if db else None
        except sqlite3.Error:
            row = None
        if row is not None:
            self._remember(key, row[0])
        return row[0] if row else None

    def put(self, key: str, result: str) -> str:
        """Keep ``result`` unless the key already has one; returns the kept one (the first)."""
        db = self._db()
        try:
            if db is not None:
                db.execute("INSERT OR IGNORE INTO outcomes (key, result) VALUES (?, ?)", (key, result))
                row = db.execute("SELECT result FROM outcomes WHERE key = ?", (key,)).fetchone()
                result = row[0] if row else result
        except sqlite3.Error:
            pass
        self._remember(key, result)
        return result

    @staticmethod
    def _remember(key: str, result: str) -> None:
        _LRU[key] = result
        _LRU.move_to_end(key)
        while len(_LRU) > _LRU_ENTRIES:
            _LRU.popitem(last=False)

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None


def _encode(result: JobResult, names: Collection[str] = ()) -> str:
    # insertion order kept: a decoded result is the run's own, key order included
    return json.dumps({"tests": result.tests, "load_error": result.load_error, "names": sorted(names)})


def renamed_locals(source: str, entry: str) -> frozenset[str]:
    """The names ``canonical_form`` renames: every name the entry function (and what it nests)
    assigns, other than its parameters (empty when the program does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry:
            params = {a.arg for a in node.args.args}
            return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                             and n.id not in params)
    return frozenset()


def _names_in(text: str, names: frozenset[str] | set[str]) -> bool:
    """Does any of ``names`` appear in ``text`` as a whole word?"""
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) for name in names)


def _answers(stored: str, names: frozenset[str]) -> bool:
    """A canonical-form entry answers a job when neither program's renamed locals are in its outcome."""
    raw = json.loads(stored)
    outcome = json.dumps([raw["tests"], raw["load_error"]])
    return not _names_in(outcome, names | set(raw.get("names") or ()))


def _decode(key: str, text: str) -> JobResult:
    raw = json.loads(text)
    return JobResult(key, list(raw["tests"]), raw["load_error"])


def run_jobs_memo(sandbox: Sandbox, jobs: Sequence[Job], memo: ExecMemo | None, *, trusted: bool = False
                  ) -> dict[str, JobResult]:
    """``run_jobs`` with ``memo`` in front: known jobs are answered from it, the rest run as one
    batch (as ``run_jobs`` would run them) and are remembered. ``memo`` None: ``run_jobs``."""
    if memo is None or not jobs:
        return run_jobs(sandbox, jobs, trusted=trusted)
    if len({job.key for job in jobs}) != len(jobs):
        raise ValueError("job keys must be unique within a batch")
    identity = _sandbox_identity(sandbox)
    keys = {job.key: memo_key(job, identity, trusted, memo.namespace) for job in jobs}
    forms: dict[str, tuple[str, frozenset[str]]] = {}  # job key -> (canonical key, renamed locals)
    if memo.rename_invariant:
        for job in jobs:
            form = canonical_form(job.source, job.entry)
            if form is not None:
                forms[job.key] = (memo_key(job, identity, trusted, memo.namespace, canonical=form),
                                  renamed_locals(job.source, job.entry))
    out: dict[str, JobResult] = {}
    todo: list[Job] = []
    for job in jobs:
        known = memo.get(keys[job.key])
        if known is None and job.key in forms:
            shared = memo.get(forms[job.key][0])
            known = shared if shared is not None and _answers(shared, forms[job.key][1]) else None
        if known is None:
            todo.append(job)
        else:
            out[job.key] = _decode(job.key, known)
    memo.hits += len(jobs) - len(todo)
    memo.misses += len(todo)
    STATS["hits"] += len(jobs) - len(todo)
    STATS["misses"] += len(todo)
    for key, result in run_jobs(sandbox, todo, trusted=trusted).items():
        # another worker may have stored the key meanwhile: every caller then sees the first outcome
        kept = memo.put(keys[key], _encode(result))
        out[key] = _decode(key, kept)
        if key in forms and _answers(kept, forms[key][1]):  # name-free: it answers the program's renamings
            memo.put(forms[key][0], _encode(_decode(key, kept), forms[key][1]))
    return {job.key: out[job.key] for job in jobs}
