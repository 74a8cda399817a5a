"""Compact records: what many episodes of a run share is stored once per run folder.

Every first observation of a tool-use episode repeats the policy and the tool list (13 KB of a
21 KB record); tool results, tool tables and whole end states repeat across agents, conditions and
repetitions. On disk, beside ``records.jsonl``, ``shared.jsonl`` holds each such piece once, keyed
by (the first 128 bits of) its sha256, and the record line holds a reference in its place:

- a string of at least ``MIN_STRING_CHARS`` is cut into chunks at line ends chosen by the content
  (a line whose hash is 0 mod 8 closes a chunk; the first and last lines stand alone), so two texts
  that differ in a title or a closing question still share every chunk in between; chunks of at
  least ``MIN_CHUNK_CHARS`` go to the side file, shorter pieces stay inline;
- a list or dict of at least ``MIN_VALUE_CHARS`` (as compact JSON) that this store has seen before
  is stored once; its first occurrence stays inline, so a value no other record has costs nothing.

Reading resolves references, so a loaded ``Trajectory`` is exactly what was written: graders and
regrades never see a reference. A line with no reference (every record written before this
existed) reads as before. Chunks reach disk (flushed, fsynced) before any record that uses them.

On disk a compacted string is ``{"rsigym:shared": [piece, ...]}`` (a piece is a literal string or a
one-element list holding a chunk id), a shared value ``{"rsigym:value": id}``. A record value that
already has one of these shapes is written as ``{"rsigym:literal": value}``, so no value of a
record can be mistaken for a reference.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["SharedText", "SHARED_FILE", "MissingSharedText", "MIN_STRING_CHARS", "MIN_CHUNK_CHARS"]

log = logging.getLogger(__name__)

SHARED_FILE = "shared.jsonl"
MIN_STRING_CHARS = 512    # shorter strings stay inline: a reference costs ~50 bytes
MIN_CHUNK_CHARS = 128     # shorter pieces stay inline as literals
MAX_CHUNK_CHARS = 16384   # a chunk closes here even without a content-chosen boundary
MIN_VALUE_CHARS = 256    # a list or dict this long (as compact JSON) is shared from its second sighting
_REF, _VALUE_REF, _LITERAL = "rsigym:shared", "rsigym:value", "rsigym:literal"
_MARKERS = (_REF, _VALUE_REF, _LITERAL)
_MAX_SEEN = 200_000
_LINES = re.compile(r"(?<=\n)")  # split after each newline, keeping the text intact


class MissingSharedText(ValueError):
    """A record references a chunk that ``shared.jsonl`` does not hold."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _content_id(content: Any) -> str:
    """The chunk id of a text (its sha256) or of a JSON value (the sha256 of its compact JSON)."""
    return _sha(content if isinstance(content, str) else _dumps(content))


def _closes_chunk(line: str) -> bool:
    return hashlib.sha256(line.encode("utf-8", "surrogatepass")).digest()[0] % 8 == 0


def _chunks(text: str) -> list[str]:
    lines = _LINES.split(text)
    closing = [i for i, line in enumerate(lines) if _closes_chunk(line)]
    if not closing:
        return lines
    # The first and the last line are pieces of their own: a text's own title or closing question
    # then spoils no chunk of what it shares with others.
    head = lines[:closing[0] + 1]
    chunks = [head[0], "".join(head[1:])]
    current: list[str] = []
    size = 0
    for line in lines[closing[0] + 1:closing[-1] + 1]:
        current.append(line)
        size += len(line)
        if size >= MAX_CHUNK_CHARS or (size >= MIN_CHUNK_CHARS and _closes_chunk(line)):
            chunks.append("".join(current))
            current, size = [], 0
    if current:
        chunks.append("".join(current))
    tail = lines[closing[-1] + 1:]
    return [c for c in chunks + ["".join(tail[:-1]), *tail[-1:]] if c]


class SharedText:
    """The chunk store of one run folder (``<folder>/shared.jsonl``): compacts and expands records.

    Args:
        path: the ``shared.jsonl`` file (need not exist; it is created on the first chunk), or
            None for a store that lives in memory only (``chunks`` holds what it collected).
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else Path(path)
        self._chunks: dict[str, Any] | None = None  # chunk id -> text or JSON value; loaded on first use
        self._seen: set[str] = set()  # containers written once, inline: the second sighting shares them
        self._file: Any = None

    @classmethod
    def beside(cls, records_path: str | os.PathLike[str]) -> "SharedText":
        """The store of the run folder that holds ``records_path``."""
        return cls(Path(records_path).with_name(SHARED_FILE))

    # -- reading -------------------------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        if self._chunks is None:
            self._chunks = {}
            if self.path is not None and self.path.exists():
                for number, raw in enumerate(self.path.read_bytes().split(b"\n"), start=1):
                    if not raw.strip():
                        continue
                    try:
                        entry = json.loads(raw)
                        chunk_id = entry["sha256"]
                        content = entry["text"] if "text" in entry else entry["value"]
                        if _content_id(content) != chunk_id:
                            raise ValueError("content does not match its sha256")
                    except (ValueError, KeyError, TypeError) as exc:  # a torn or damaged line
                        log.warning("%s:%d: skipped an unreadable chunk: %s", self.path, number, exc)
                        continue
                    self._chunks[chunk_id] = content
        return self._chunks

    @property
    def chunks(self) -> dict[str, Any]:
        """Every chunk this store holds: chunk id -> text or (compacted) JSON value."""
        return self._load()

    def _chunk(self, chunk_id: Any) -> Any:
        try:
            return self._load()[chunk_id]
        except (KeyError, TypeError):
            raise MissingSharedText(f"shared chunk {chunk_id!r} is missing from {self.path}") from None

    def expand(self, value: Any) -> Any:
        """``value`` (a record as read from its line) with every reference resolved."""
        if isinstance(value, dict):
            if len(value) == 1:
                if _REF in value:
                    return "".join(p if isinstance(p, str) else self._chunk(p[0]) for p in value[_REF])
                if _VALUE_REF in value:
                    return self.expand(self._chunk(value[_VALUE_REF]))
                if _LITERAL in value:
                    return value[_LITERAL]
            return {k: self.expand(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.expand(v) for v in value]
        return value

    # -- writing -------------------------------------------------------------------------------

    def compact(self, value: Any) -> Any:
        """``value`` (a record's JSON dict) with shared text and values replaced by references.

        New chunks are appended to ``shared.jsonl`` and fsynced before this returns.
        """
        new: dict[str, Any] = {}
        compacted = self._compact(value, new, top=True)
        if new:
            try:
                self._append(new)
            except BaseException:  # not on disk: no later record may reference them either
                for chunk_id in new:
                    self._load().pop(chunk_id, None)
                raise
        return compacted

    def _compact(self, value: Any, new: dict[str, Any], top: bool = False) -> Any:
        if isinstance(value, str):
            return self._compact_string(value, new) if len(value) >= MIN_STRING_CHARS else value
        if isinstance(value, dict):
            if len(value) == 1 and next(iter(value)) in _MARKERS:
                return {_LITERAL: value}  # a record value shaped like a reference stays a value
            out: Any = {k: self._compact(v, new) for k, v in value.items()}
        elif isinstance(value, list):
            out = [self._compact(v, new) for v in value]
        else:
            return value
        if top:
            return out
        # A container seen before in this run (a tool table, an end state two reps share) is
        # stored once; its first occurrence stays inline, so a value no other record has costs nothing.
        text = _dumps(out)
        if len(text) < MIN_VALUE_CHARS:
            return out
        chunk_id = _sha(text)
        known = self._load()
        if chunk_id in known:
            return {_VALUE_REF: chunk_id}
        if chunk_id in self._seen:
            new[chunk_id] = known[chunk_id] = out
            return {_VALUE_REF: chunk_id}
        if len(self._seen) >= _MAX_SEEN:  # a long run: forget, rather than grow without bound
            self._seen.clear()
        self._seen.add(chunk_id)
        return out

    def _compact_string(self, text: str, new: dict[str, Any]) -> Any:
        known = self._load()
        pieces: list[Any] = []
        for chunk in _chunks(text):
            if len(chunk) < MIN_CHUNK_CHARS:
                if pieces and isinstance(pieces[-1], str):
                    pieces[-1] += chunk
                else:
                    pieces.append(chunk)
                continue
            chunk_id = _content_id(chunk)
            if chunk_id not in known:
                new[chunk_id] = known[chunk_id] = chunk
            pieces.append([chunk_id])
        return {_REF: pieces}

    def _append(self, chunks: dict[str, Any]) -> None:
        if self.path is None:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "ab")
            if self._file.tell() > 0:
                with open(self.path, "rb") as f:
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":  # a torn last chunk: keep the next line whole
                        self._file.write(b"\n")
        for chunk_id, content in chunks.items():
            kind = "text" if isinstance(content, str) else "value"
            self._file.write(_dumps({"sha256": chunk_id, kind: content}).encode("utf-8", "surrogatepass") + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the chunk file (chunks already written stay; the store can be used again)."""
        if self._file is not None:
            self._file.close()
            self._file = None
