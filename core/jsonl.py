"""Append-only JSONL storage of trajectory records that survives a crash mid-write.

``RecordWriter`` appends one record per line and flushes and fsyncs after each, so a record
that was reported written is on disk. A process killed mid-write can leave a torn last line;
``read_records`` skips it and says so, and ``RecordWriter`` moves it aside (to
``<file>.torn``) before appending, so the next record never fuses with a fragment.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .errors import UserError
from .records import Trajectory

__all__ = ["RecordWriter", "ReadResult", "read_records", "rewrite_records"]

log = logging.getLogger(__name__)


@dataclass
class ReadResult:
    """Records read from a file, and what could not be read."""

    records: list[Trajectory] = field(default_factory=list)
    torn_tail: bool = False  # the last line had no newline and did not parse: a crash mid-write
    bad_lines: list[int] = field(default_factory=list)  # 1-based numbers of other unreadable lines

    def __iter__(self) -> Iterator[Trajectory]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)


def read_records(path: str | os.PathLike[str], *, strict: bool = False) -> ReadResult:
    """Read every record of a JSONL file.

    A torn last line (no trailing newline, not valid JSON) is expected after a crash: it is
    skipped with a warning. Any other unreadable line is a corrupt file: with ``strict`` it
    raises ``UserError``; otherwise it is skipped, logged and listed in ``bad_lines``.
    """
    path = Path(path)
    result = ReadResult()
    if not path.exists():
        return result
    data = path.read_bytes()
    lines = data.split(b"\n")
    ends_clean = data.endswith(b"\n") or not data
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last = number == len(lines)
        try:
            result.records.append(Trajectory.from_dict(json.loads(raw)))
        except (ValueError, KeyError, TypeError) as exc:
            if is_last and not ends_clean:
                result.torn_tail = True
                log.warning("%s: skipped a torn last line (%d bytes), left by an interrupted write",
                            path, len(raw))
                continue
            if strict:
                raise UserError(f"{path}:{number}: not a valid record: {exc}") from exc
            log.warning("%s:%d: skipped an unreadable record: %s", path, number, exc)
            result.bad_lines.append(number)
    return result


class RecordWriter:
    """Appends records to a JSONL file, one fsynced line each. Use as a context manager."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._set_aside_torn_tail()
        self._file = open(self.path, "ab")

    def _set_aside_torn_tail(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as f:
            data = f.read()
            if data.endswith(b"\n"):
                return
            cut = data.rfind(b"\n") + 1
            with open(self.path.with_name(self.path.name + ".torn"), "ab") as torn:
                torn.write(data[cut:] + b"\n")
            f.truncate(cut)
            f.flush()
            os.fsync(f.fileno())
        log.warning("%s: moved a torn last line (%d bytes) to %s.torn before appending",
                    self.path, len(data) - cut, self.path.name)

    def write(self, record: Trajectory) -> None:
        line = record.to_json().encode("utf-8") + b"\n"
        self._file.write(line)
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def rewrite_records(path: str | os.PathLike[str], records: list[Trajectory]) -> None:
    """Replace a records file atomically (write a temporary file, fsync, rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        for record in records:
            f.write(record.to_json().encode("utf-8") + b"\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
