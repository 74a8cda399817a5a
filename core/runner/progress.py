"""Progress of a run: a rich bar in a terminal, plain lines elsewhere (CI logs, pipes, files)."""

from __future__ import annotations

import sys
from typing import Any, Literal, TextIO

from ..records.trajectory import Trajectory

__all__ = ["Progress", "ProgressMode"]

ProgressMode = Literal["bar", "plain", "none"]
PLAIN_LINES = 20  # a plain log gets about this many lines per run, whatever its size


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stream-like object
        return False


class Progress:
    """Counts finished episodes and infra errors; shows them as ``mode`` says.

    ``bar`` becomes ``plain`` when ``stream`` (default stderr) is no terminal. ``plain`` writes ``NAME: 12/40 episodes, 1 infra error`` to ``stream`` every 5% of the run
    (and at its end), one line each, so a log file shows progress without control characters.
    """

    def __init__(self, total: int, name: str, *, mode: ProgressMode | bool = "bar",
                 stream: TextIO | None = None) -> None:
        if mode is True:
            mode = "bar"
        elif mode is False:
            mode = "none"
        if mode == "bar" and not _is_terminal(stream or sys.stderr):
            mode = "plain"  # a bar drawn into a pipe or a file is a wall of control characters
        self.total, self.name, self.mode = total, name, mode if total > 0 else "none"
        self.stream = stream
        self.done = self.errors = 0
        self._every = max(1, -(-total // PLAIN_LINES))

    def __enter__(self) -> "Progress":
        if self.mode == "bar":
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                                       TextColumn, TimeElapsedColumn, TimeRemainingColumn)

            self._bar = RichProgress(TextColumn("[bold]{task.description}"), BarColumn(),
                                     MofNCompleteColumn(), TextColumn("{task.fields[errors]}"),
                                     TimeElapsedColumn(), TimeRemainingColumn(),
                                     console=Console(file=self.stream or sys.stderr))
            self._bar.__enter__()
            self._task = self._bar.add_task(self.name, total=self.total, errors="")
        return self

    def advance(self, record: Trajectory) -> None:
        self.done += 1
        self.errors += record.termination == "infra_error"
        if self.mode == "bar":
            self._bar.update(self._task, advance=1,
                             errors=f"[red]{self.errors} infra errors" if self.errors else "")
        elif self.mode == "plain" and (self.done % self._every == 0 or self.done == self.total):
            stream = self.stream or sys.stderr
            errors = f", {self.errors} infra error{'s' if self.errors != 1 else ''}" if self.errors else ""
            print(f"{self.name}: {self.done}/{self.total} episodes{errors}", file=stream, flush=True)

    def __exit__(self, *exc: Any) -> None:
        if self.mode == "bar":
            self._bar.__exit__(*exc)
