"""The viewer's full-text index over transcripts, built when ``rsigym view`` writes the page.

Every word of an episode (observations, actions, info, errors, the end state, grade details, the
episode key) is a token: lower-cased runs of letters, digits and ``_``, plus the parts of a token
split at ``_`` (``get_order_details`` is found by ``order``). The index maps each token to the
sorted episodes holding it; the page's script finds a query word by prefix among the sorted
tokens and intersects the words' episode sets.

Transcripts arrive compacted (``rsigym.records.shared_text``): a text many episodes share (a policy, a
tool list) is tokenised once per chunk, not once per episode. Chunks are cut at line ends, so no
token spans two of them.

A posting list is stored as whichever is shorter: ``"d"`` and the gaps between episode numbers in
base 36, comma-separated (rare tokens), or ``"b"`` and a base64 bitmap of all episodes (tokens in
most episodes, such as a policy's words).
"""

from __future__ import annotations

import base64
import re
from typing import Any, Iterable, Sequence

__all__ = ["tokens_of", "build_search_index", "decode_postings", "episodes_matching", "MAX_TOKEN_CHARS"]

MAX_TOKEN_CHARS = 40  # longer runs (hashes, base64) are cut: a prefix of them still finds them
_WORD = re.compile(r"\w+", re.UNICODE)


def tokens_of(text: str) -> set[str]:
    out: set[str] = set()
    for word in _WORD.findall(text.lower()):
        out.add(word[:MAX_TOKEN_CHARS])
        if "_" in word:
            out.update(part[:MAX_TOKEN_CHARS] for part in word.split("_") if part)
    out.discard("")
    return out


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if n == 0:
        return "0"
    out = []
    while n:
        n, r = divmod(n, 36)
        out.append(digits[r])
    return "".join(reversed(out))


def _encode(episodes: list[int], total: int) -> str:
    gaps, previous = [], -1
    for episode in episodes:
        gaps.append(_base36(episode - previous - 1))
        previous = episode
    listed = "d" + ",".join(gaps)
    bitmap_chars = 1 + 4 * ((total + 7) // 8 + 2) // 3
    if len(listed) <= bitmap_chars:
        return listed
    bits = bytearray((total + 7) // 8)
    for episode in episodes:
        bits[episode >> 3] |= 1 << (episode & 7)
    return "b" + base64.b64encode(bytes(bits)).decode()


def decode_postings(encoded: str) -> list[int]:
    """The episode numbers of an encoded posting list (the page's script does the same)."""
    if encoded.startswith("b"):
        bits = base64.b64decode(encoded[1:])
        return [i for i in range(len(bits) * 8) if bits[i >> 3] >> (i & 7) & 1]
    episodes, previous = [], -1
    for gap in encoded[1:].split(","):
        if gap:
            previous += int(gap, 36) + 1
            episodes.append(previous)
    return episodes


class _Tokeniser:
    """Tokens of a compacted value; a shared chunk's tokens computed once."""

    def __init__(self, chunks: dict[str, Any]) -> None:
        self.chunks, self._cache = chunks, {}  # type: dict[str, Any], dict[str, frozenset[str]]

    def chunk(self, chunk_id: str) -> frozenset[str]:
        if chunk_id not in self._cache:
            found: set[str] = set()
            self.walk(self.chunks.get(chunk_id, ""), found)
            self._cache[chunk_id] = frozenset(found)
        return self._cache[chunk_id]

    def walk(self, value: Any, out: set[str]) -> None:
        if isinstance(value, str):
            out |= tokens_of(value)
        elif isinstance(value, list):
            for item in value:
                self.walk(item, out)
        elif isinstance(value, dict):
            if len(value) == 1 and "rsigym:shared" in value and isinstance(value["rsigym:shared"], list):
                for piece in value["rsigym:shared"]:
                    if isinstance(piece, list) and piece:
                        out |= self.chunk(str(piece[0]))
                    else:
                        self.walk(piece, out)
                return
            if len(value) == 1 and "rsigym:value" in value:
                out |= self.chunk(str(value["rsigym:value"]))
                return
            for key, item in value.items():
                if key not in ("usage", "computed_at", "started_at", "finished_at", "rsigym_version", "schema"):
                    self.walk(item, out)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out |= tokens_of(str(value))


def build_search_index(transcripts: Sequence[Any], chunks: dict[str, Any]) -> dict[str, str]:
    """{token: encoded postings} over the compacted ``transcripts`` (episode number = position)."""
    tokeniser = _Tokeniser(chunks)
    postings: dict[str, list[int]] = {}
    for episode, transcript in enumerate(transcripts):
        found: set[str] = set()
        tokeniser.walk(transcript, found)
        for token in found:
            postings.setdefault(token, []).append(episode)
    total = len(transcripts)
    return {token: _encode(postings[token], total) for token in sorted(postings)}


def episodes_matching(index: dict[str, str], words: Iterable[str]) -> set[int]:
    """Episodes holding every word by prefix (what the page's search does; used by tests)."""
    result: set[int] | None = None
    for word in words:
        hits: set[int] = set()
        for token, encoded in index.items():
            if token.startswith(word):
                hits.update(decode_postings(encoded))
        result = hits if result is None else result & hits
    return result or set()
