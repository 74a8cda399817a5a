"""Domains by name, and tasks by id (``retail-012`` belongs to the retail domain)."""

from __future__ import annotations

import importlib
from typing import Any

from .domain import Domain, Task, build_tasks

__all__ = ["register_domain", "get_domain", "domain_names", "get_tasks", "load_task"]

# name -> module path with a DOMAIN attribute, or a Domain; modules load on first use.
_DOMAINS: dict[str, Any] = {
    "retail": "rsigym.envs.tooluse.domains.retail",
    "airline": "rsigym.envs.tooluse.domains.airline",
}


def register_domain(domain: Domain) -> None:
    """Add a domain (a third party's, or a test's) under ``domain.name``."""
    _DOMAINS[domain.name] = domain


def domain_names() -> list[str]:
    return sorted(_DOMAINS)


def get_domain(name: str) -> Domain:
    if name not in _DOMAINS:
        raise ValueError(f"unknown tool-use domain {name!r}; known: {', '.join(domain_names())}")
    entry = _DOMAINS[name]
    if isinstance(entry, str):
        entry = _DOMAINS[name] = importlib.import_module(entry).DOMAIN
    assert isinstance(entry, Domain)
    return entry


REPLICATION = "replication"


def get_tasks(domain: str, split: str | None = None) -> list[Task]:
    """The tasks of ``split`` (``all``/None: every task).

    ``replication`` is derived, for replicating a ``controlled`` finding on fresh tasks: the
    ``test`` tasks whose template occurs in the ``controlled`` split (same kinds of task, other
    users, orders and wording; never a controlled task). Their ``split`` field stays ``test``.
    """
    tasks = build_tasks(get_domain(domain))
    if split in (None, "all"):
        return list(tasks)
    if split == REPLICATION:
        templates = {t.template for t in tasks if t.split == "controlled"}
        chosen = [t for t in tasks if t.split == "test" and t.template in templates]
    else:
        chosen = [t for t in tasks if t.split == split]
    if not chosen:
        known = sorted({t.split for t in tasks} | ({REPLICATION} if any(t.split == "controlled" for t in tasks) else set()))
        raise ValueError(f"unknown {domain} split {split!r}; known: all, {', '.join(known)}")
    return chosen


def load_task(task_id: str) -> Task:
    domain, sep, number = task_id.rpartition("-")
    if not sep or not number.isdigit():
        raise ValueError(f"not a tool-use task id: {task_id!r} (expected DOMAIN-NNN)")
    tasks = build_tasks(get_domain(domain))
    index = int(number)
    if index >= len(tasks):
        raise ValueError(f"no task {task_id!r}: {domain} has {len(tasks)} tasks")
    return tasks[index]
