"""Memoised execution for search benchmarks: a program run keyed by its workspace, a run keyed by its inputs.

A search benchmark runs the same workflows on the same task instances many times (each arm's
candidates, the incumbent, held-out checks); most of the time goes into running the same
analysis program on the same data. ``ExecutionMemo`` keeps two maps:

* ``programs``: sha256 of (every workspace file's name and text, the program's path) -> the
  observation the run returned and the files it left. A program's output is a function of the
  files it can read, so a second run of the same program on the same workspace is answered from
  the map (the offline analysis programs are deterministic: they seed their own generators). A
  run that timed out is never stored (its outcome depends on the machine's load).
* ``runs``: (spec behaviour hash, task id, salt, role model, role seed, max steps) -> the
  ``Execution``: a whole run of the scripted roles is a function of these.

Hits and misses are counted so a benchmark can print what the memo saved. The memo never sees
a score it could hand to an agent: it stores what the run would have returned anyway.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ExecutionMemo", "workspace_key"]


def workspace_key(files: dict[str, str], path: str) -> str:
    """sha256 over the workspace's files (sorted by name) and the program's path."""
    digest = hashlib.sha256()
    for name in sorted(files):
        for part in (name, files[name]):
            data = part.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "big") + data)
    digest.update(b"\x00run:" + path.encode())
    return digest.hexdigest()


@dataclass
class ExecutionMemo:
    """Program results by workspace hash and whole executions by their inputs; see the module docstring."""

    programs: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)
    runs: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    program_hits: int = 0
    program_misses: int = 0
    run_hits: int = 0
    run_misses: int = 0

    def program(self, key: str) -> tuple[str, dict[str, str]] | None:
        found = self.programs.get(key)
        if found is None:
            self.program_misses += 1
            return None
        self.program_hits += 1
        return found[0], dict(found[1])

    def store_program(self, key: str, observation: str, files: dict[str, str]) -> None:
        self.programs[key] = (observation, dict(files))

    def run(self, key: tuple[Any, ...]) -> Any:
        found = self.runs.get(key)
        if found is None:
            self.run_misses += 1
            return None
        self.run_hits += 1
        return copy.deepcopy(found)

    def store_run(self, key: tuple[Any, ...], execution: Any) -> None:
        self.runs[key] = copy.deepcopy(execution)

    def summary(self) -> str:
        return (f"program runs {self.program_hits} from the memo / {self.program_misses} executed; "
                f"workflow runs {self.run_hits} from the memo / {self.run_misses} executed")
