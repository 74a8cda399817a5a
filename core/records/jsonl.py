"""Append-only JSONL storage of trajectory records that survives a crash mid-write.

``RecordWriter`` appends one record per line and flushes and fsyncs after each, so a record
that was reported written is on disk. A process killed mid-write can leave a torn last line;
``read_records`` skips it and says so, and ``RecordWriter`` moves it aside (to
``<file>.torn``) before appending, so the next record never fuses with a fragment.

Any other unreadable line (not JSON, not a JSON object, not a record) is never dropped:
``move_bad_lines`` moves it to ``<file>.bad`` with its line number, and ``run``, ``report`` and
``regrade`` do that first and say how many lines they moved. ``rewrite_records`` replaces a file
atomically and keeps a hard-linked backup (``<file>.bak``) until the replacement is on disk;
``remove_stale_temporaries`` cleans what a process killed mid-rewrite left behind. Writers hold a
shared lock on ``<file>.lock`` and rewriters an exclusive one, so no rewrite can swap the file
under a run that is still appending to it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import UserError
from .trajectory import Trajectory, non_finite_marker, utc_now
from .redact import redact
from .redact_lines import redact_line
from .shared_text import SharedText

__all__ = ["RecordWriter", "ReadResult", "read_records", "rewrite_records", "move_bad_lines",
           "remove_stale_temporaries"]

log = logging.getLogger(__name__)


@dataclass
class ReadResult:
    """Records read from a file, and what could not be read."""

    records: list[Trajectory] = field(default_factory=list)
    torn_tail: bool = False  # the last line had no newline and did not parse: a crash mid-write
    size_bytes: int = 0      # the file's size when read: a rewrite checks that nothing was appended since
    bad_lines: list[int] = field(default_factory=list)  # 1-based numbers of other unreadable lines

    @property
    def duplicate_keys(self) -> int:
        """Records whose episode key an earlier record of the file already has."""
        counts = Counter(r.episode_key for r in self.records)
        return sum(n - 1 for n in counts.values())

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
    result.size_bytes = len(data)
    lines = data.split(b"\n")
    ends_clean = data.endswith(b"\n") or not data
    shared = SharedText.beside(path)
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last = number == len(lines)
        try:
            result.records.append(_parse_line(raw, shared))
        except _UNREADABLE as exc:
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


# What a malformed line raises: bad JSON or UTF-8 (ValueError), a missing field (KeyError), a
# field of the wrong shape (TypeError, AttributeError), JSON nested too deep (RecursionError).
_UNREADABLE = (ValueError, KeyError, TypeError, AttributeError, RecursionError)


def _parse_line(raw: bytes, shared: SharedText) -> Trajectory:
    data = json.loads(raw, parse_constant=non_finite_marker)  # a bare NaN is read as the marker
    if not isinstance(data, dict):  # "null", "[1,2]", "5": JSON, but no record
        raise ValueError(f"not a JSON object but {type(data).__name__}")
    if b'"rsigym:' in raw:  # a compact record: resolve its references to shared.jsonl
        data = shared.expand(data)
    return Trajectory.from_dict(data)


def _record_line(record: Trajectory, shared: SharedText) -> bytes:
    """The record's line on disk: its JSON, secrets redacted (``rsigym.records.redact``), with what the run
    shares moved to ``shared.jsonl``."""
    compact = shared.compact(redact(record.to_dict()))
    return json.dumps(compact, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class RecordWriter:
    """Appends records to a JSONL file, one fsynced line each. Use as a context manager."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = open(_lock_path(self.path), "ab")
        fcntl.flock(self._lock, fcntl.LOCK_SH)  # writers share; a rewrite waits for none of them
        self._set_aside_torn_tail()
        self._shared = SharedText.beside(self.path)
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
                torn.write(redact_line(data[cut:]) + b"\n")  # kept for forensics, secrets out
            f.truncate(cut)
            f.flush()
            os.fsync(f.fileno())
        log.warning("%s: moved a torn last line (%d bytes) to %s.torn before appending",
                    self.path, len(data) - cut, self.path.name)

    def write(self, record: Trajectory) -> None:
        line = _record_line(record, self._shared)  # its shared chunks are on disk first
        self._file.write(line)
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        self._shared.close()
        if not self._lock.closed:
            self._lock.close()  # releases the shared lock

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of ``path``: no ``RecordWriter`` is appending to it meanwhile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(_lock_path(path), "ab") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{path} is in use by another rsigym process (a run appending, or a "
                            "rewrite); try again when it has finished") from None
        yield


def _fsync_dir(path: Path) -> None:
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[str]:
    """Clean what a rewrite killed midway left: ``<file>.tmp`` (never the data: the rename had
    not happened) and ``<file>.bak`` (a copy of the file before or during the rename; restored
    only if the file itself is gone). Returns what it did, one phrase per file; nothing while
    another process holds the file (a live rewrite's temporaries are not stale)."""
    path = Path(path)
    try:
        with _exclusive(path):
            return _remove_stale(path)
    except UserError:
        return []


def _remove_stale(path: Path) -> list[str]:
    done = []
    tmp, backup = path.with_name(path.name + ".tmp"), path.with_name(path.name + ".bak")
    if tmp.exists():
        tmp.unlink()
        done.append(f"removed the stale {tmp.name}")
    if backup.exists():
        if path.exists():
            backup.unlink()
            done.append(f"removed the stale {backup.name}")
        else:
            os.replace(backup, path)
            done.append(f"restored {path.name} from {backup.name}")
    for phrase in done:
        log.warning("%s: %s, left by an interrupted rewrite", path, phrase)
    return done


def rewrite_records(path: str | os.PathLike[str], records: list[Trajectory], *,
                    expected_size: int | None = None) -> None:
    """Replace a records file atomically: write ``<file>.tmp``, fsync, rename over the file.

    Until the rename is on disk the old file also lives on as ``<file>.bak`` (a hard link, or a
    copy where links are not possible), so a process killed at any point loses nothing. Raises
    ``UserError`` while a ``RecordWriter`` (a run) is appending to the file, and when
    ``expected_size`` (``ReadResult.size_bytes`` of the read the records came from) no longer
    matches: records appended since then would be lost.
    """
    path = Path(path)
    with _exclusive(path):
        _remove_stale(path)
        size = path.stat().st_size if path.exists() else 0
        if expected_size is not None and size != expected_size:
            raise UserError(f"{path} changed since it was read ({expected_size} -> {size} bytes: a run "
                            "wrote to it); nothing was rewritten, run the command again")
        shared = SharedText.beside(path)
        try:
            _replace(path, (_record_line(record, shared) for record in records))
        finally:
            shared.close()


def _replace(path: Path, lines: Iterable[bytes]) -> None:
    """Write ``lines`` to ``<file>.tmp`` and rename it over ``path``, a backup kept meanwhile.
    The caller holds the exclusive lock."""
    tmp, backup = path.with_name(path.name + ".tmp"), path.with_name(path.name + ".bak")
    if path.exists():
        try:
            os.link(path, backup)
        except OSError:  # a filesystem without hard links
            shutil.copy2(path, backup)
    with open(tmp, "wb") as f:
        for line in lines:
            f.write(line)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path)
    if backup.exists():
        backup.unlink()


def move_bad_lines(path: str | os.PathLike[str]) -> int:
    """Move every unreadable line of a records file to ``<file>.bad``; returns how many.

    Each moved line is written as its line number, a tab, and the line with its secrets redacted by
    structure (``rsigym.records.redact_lines``), under a header that
    names the file and the time; the records file is then rewritten without them (atomically,
    other lines byte for byte). A torn last line counts as unreadable here: call this when no run
    is writing (``run`` does, before it starts appending; ``RecordWriter`` holds the lock).
    """
    path = Path(path)
    with _exclusive(path):
        _remove_stale(path)
        if not path.exists():
            return 0
        lines = path.read_bytes().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        keep: list[bytes] = []
        bad: list[tuple[int, bytes]] = []
        shared = SharedText.beside(path)
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                _parse_line(raw, shared)
            except _UNREADABLE:
                bad.append((number, raw))
                continue
            keep.append(raw)
        if not bad:
            return 0
        bad_path = path.with_name(path.name + ".bad")
        with open(bad_path, "ab") as f:  # first: until the rewrite, a line is in both files
            f.write(f"# {utc_now()} {path.name}: {len(bad)} unreadable lines moved here; each line "
                    "below is '<line number><TAB><the line, secrets redacted>'\n".encode())
            for number, raw in bad:
                f.write(f"{number}\t".encode() + redact_line(raw) + b"\n")
            f.flush()
            os.fsync(f.fileno())
        _replace(path, (raw + b"\n" for raw in keep))
    log.warning("%s: moved %d unreadable lines (%s) to %s", path, len(bad),
                ", ".join(str(n) for n, _ in bad[:10]) + (" ..." if len(bad) > 10 else ""), bad_path.name)
    return len(bad)
