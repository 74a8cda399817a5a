"""What a tool-use domain is, and the machinery every domain shares: database copies, state
hashes, gold replays and validated task catalogues.

A domain (``domains/retail``, ``domains/airline``) provides a ``Domain``: a deterministic SQLite
database builder, a policy document, typed tools (``toolkit.tool``) and a task generator that
emits ``TaskDraft``s. ``build_tasks`` turns drafts into ``Task``s: it replays each draft's gold
actions on a fresh database (any tool error means the draft is invalid, including a gold action
that breaks the policy) and stores the hash of the resulting end state.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

from .toolkit import Tool, call_tool

__all__ = ["Domain", "TaskDraft", "Task", "InvalidTask", "copy_db", "db_sha256", "db_rows",
           "open_episode_db", "state_sha256", "template_db", "replay", "build_tasks", "SPLIT_SIZES"]


@dataclass(frozen=True)
class TaskDraft:
    """A task as a domain's generator writes it, before validation.

    Attributes:
        template: The template that made it (``return_delivered_item``, ``refuse_cancel_shipped``).
        instructions: What the simulated user knows and wants: ``request`` (the opening message),
            ``identity`` (facts to authenticate with), ``answers`` (replies to expected questions,
            keyed by a keyword the agent's question contains), ``intent`` (one line).
        gold_actions: The correct tool calls, in order: ``{"tool": canonical name, "arguments": {...}}``.
        required_outputs: Facts the agent must tell the user (amounts, ids, dates), as strings.
        must_refuse: The policy requires refusing the request (gold actions are then reads only).
    """

    template: str
    instructions: dict[str, Any]
    gold_actions: tuple[dict[str, Any], ...]
    required_outputs: tuple[str, ...] = ()
    must_refuse: bool = False


@dataclass(frozen=True)
class Task:
    """A validated task: a draft plus its id, split and the hash of its gold end state."""

    task_id: str
    domain: str
    split: str
    template: str
    instructions: dict[str, Any]
    gold_actions: tuple[dict[str, Any], ...]
    required_outputs: tuple[str, ...]
    must_refuse: bool
    gold_db_sha256: str


@dataclass(frozen=True, eq=False)  # identity hash: domains are module-level singletons
class Domain:
    """One customer-service domain.

    Attributes:
        name: ``retail`` or ``airline``.
        policy: The policy document (Markdown) the agent reads.
        tools: The domain's tools, READ and WRITE.
        build_db: ``seed -> connection``: a new in-memory database, deterministic in the seed.
        generate_tasks: ``(db, seed) -> drafts``: task drafts for the database of ``DB_SEED``.
        default_renames: ``rename_tools``' default mapping {canonical name: new name}.
        paraphrases: ``paraphrase_descriptions``' text per canonical tool name.
        controlled: How many leading tasks form the ``controlled`` split (0: none).
    """

    name: str
    policy: str
    tools: tuple[Tool, ...]
    build_db: Callable[[int], sqlite3.Connection]
    generate_tasks: Callable[[sqlite3.Connection, int], list[TaskDraft]]
    default_renames: dict[str, str] = field(default_factory=dict)
    paraphrases: dict[str, str] = field(default_factory=dict)
    controlled: int = 0

    def tool(self, name: str) -> Tool:
        for candidate in self.tools:
            if candidate.name == name:
                return candidate
        raise KeyError(name)


class InvalidTask(ValueError):
    """A draft whose gold actions do not replay cleanly."""


DB_SEED = 7       # every task of a domain refers to the database built from this seed
TASK_SEED = 11
SPLIT_SIZES = {"train": 0.5}  # after the controlled tasks: first half train, the rest test


def copy_db(db: sqlite3.Connection) -> sqlite3.Connection:
    """A private in-memory copy (SQLite's backup API: a page copy, about a millisecond)."""
    fresh = sqlite3.connect(":memory:", check_same_thread=False)
    db.backup(fresh)
    return fresh


def db_rows(db: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows in rowid order: the database's state as data."""
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        if r[0] != _CHANGES]
    return {t: db.execute(f'SELECT * FROM "{t}" ORDER BY rowid').fetchall() for t in tables}


_CHANGES = "_rsigym_changes"


def _install_change_log(db: sqlite3.Connection) -> None:
    """Triggers that log the table and rowid of every insert, update and delete.

    They live in the template's main schema, so every copy made by the backup API has them at
    no cost (creating triggers per episode costs milliseconds of schema parsing). The log table
    is left out of every state hash.
    """
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
    db.execute(f"CREATE TABLE {_CHANGES} (tbl TEXT, rid INTEGER)")
    for table in tables:
        for op, rows in (("INSERT", ["NEW"]), ("DELETE", ["OLD"]), ("UPDATE", ["OLD", "NEW"])):
            log = " ".join(f"INSERT INTO {_CHANGES} VALUES ('{table}', {r}.rowid);" for r in rows)
            db.execute(f'CREATE TRIGGER "_rsigym_{table}_{op}" AFTER {op} ON "{table}" BEGIN {log} END')
    db.commit()


def open_episode_db(domain: "Domain") -> sqlite3.Connection:
    """A private copy of the domain's database whose changed rows are logged (see
    ``state_sha256``): an end-state hash in time proportional to the changes."""
    return copy_db(template_db(domain))


def state_sha256(domain: "Domain", db: sqlite3.Connection) -> str:
    """Hash of an episode database (from ``open_episode_db``): the template's hash plus the rows
    that now differ from the template. Equal end states give equal hashes, whatever the path."""
    template = template_db(domain)
    diff = []
    for table, rowid in db.execute(f"SELECT DISTINCT tbl, rid FROM {_CHANGES} ORDER BY tbl, rid").fetchall():
        now = db.execute(f'SELECT * FROM "{table}" WHERE rowid = ?', (rowid,)).fetchone()
        before = template.execute(f'SELECT * FROM "{table}" WHERE rowid = ?', (rowid,)).fetchone()
        if now != before:
            diff.append((table, rowid, now))
    return hashlib.sha256((template_sha256(domain) + repr(diff)).encode()).hexdigest()


def db_sha256(db: sqlite3.Connection) -> str:
    """Hash of the full database state; equal states give equal hashes."""
    digest = hashlib.sha256()
    for table, rows in db_rows(db).items():
        digest.update(table.encode())
        for row in rows:
            digest.update(repr(row).encode())
    return digest.hexdigest()


def replay(domain: Domain, db: sqlite3.Connection, actions: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> list[Any]:
    """Run actions in order on ``db``; raises ``InvalidTask`` at the first tool error."""
    results = []
    for i, action in enumerate(actions):
        try:
            tool_ = domain.tool(action["tool"])
        except KeyError:
            raise InvalidTask(f"gold action {i} calls unknown tool {action['tool']!r}") from None
        result, error = call_tool(tool_, db, action["arguments"])
        if error is not None:
            raise InvalidTask(f"gold action {i} ({action['tool']}) failed: {error}")
        results.append(result)
    return results


@lru_cache(maxsize=8)
def template_db(domain: Domain) -> sqlite3.Connection:
    """The domain's database of ``DB_SEED``, built once per process; episodes use copies."""
    db = domain.build_db(DB_SEED)
    _install_change_log(db)
    return db


@lru_cache(maxsize=8)
def template_sha256(domain: Domain) -> str:
    return db_sha256(template_db(domain))


@lru_cache(maxsize=8)
def build_tasks(domain: Domain) -> tuple[Task, ...]:
    """The domain's validated task catalogue (deterministic: same code, same tasks)."""
    base = template_db(domain)
    drafts = domain.generate_tasks(copy_db(base), TASK_SEED)
    rest = len(drafts) - domain.controlled
    n_train = domain.controlled + int(rest * SPLIT_SIZES["train"])
    tasks = []
    for i, draft in enumerate(drafts):
        db = open_episode_db(domain)
        try:
            replay(domain, db, draft.gold_actions)
        except InvalidTask as exc:
            raise InvalidTask(f"{domain.name} task {i} ({draft.template}): {exc}") from None
        split = "controlled" if i < domain.controlled else "train" if i < n_train else "test"
        tasks.append(Task(f"{domain.name}-{i:03d}", domain.name, split, draft.template,
                          draft.instructions, draft.gold_actions, draft.required_outputs,
                          draft.must_refuse, state_sha256(domain, db)))
    return tuple(tasks)
