"""Secrets out of a records line that does not parse (``<file>.bad``, ``<file>.torn``).

A line set aside because it is unreadable still holds whatever the record held: an ``api_base``
with a password, an ``extra_headers`` mapping, a provider key. Text rules alone (``redact_text``)
miss a value whose secrecy comes from where it sits (every value under ``headers``, a string under
``params.subscription_code``), so the line is parsed as far as it goes and redacted by structure
(``rsigym.records.redact.redact``) like a record:

* a line that is JSON but not a valid record (a ``NaN`` seed, a wrong field) is parsed and redacted;
* a torn line (a write cut short) is closed first: an open string and every open object and list
  are closed, a dangling key gets ``null``, so the value it was writing is redacted under its key;
* what still does not parse gets the text rules.

A line with nothing to redact is kept byte for byte; one with secrets is written back as compact
JSON (or, unparsed, as the text-redacted line).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .redact import redact, redact_text

__all__ = ["redact_line"]

_ENCODING = ("utf-8", "surrogateescape")  # undecodable bytes go back out as they came
_LITERAL_TAIL = re.compile(r"(?:-?[0-9.eE+-]*|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?)$")


def redact_line(raw: bytes) -> bytes:
    """``raw`` (one line, no newline) with its secrets redacted, by structure where it parses."""
    text = raw.decode(*_ENCODING)
    value, cut_redacted = _parse(text), False
    if value is _UNPARSED:
        closed = _closed(text)
        value, cut_redacted = _parse(closed), _REDACTED_CUT in closed and _REDACTED_CUT not in text
    if value is _UNPARSED:
        return redact_text(text).encode(*_ENCODING)
    redacted = redact(value)
    if not cut_redacted and _dumps(redacted) == _dumps(value):
        return raw  # nothing secret in it: kept byte for byte, as the line was
    return _dumps(redacted).encode(*_ENCODING)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_UNPARSED = object()
_REDACTED_CUT = "[redacted: cut short]"


def _parse(text: str) -> Any:
    try:
        return json.loads(text)  # NaN and Infinity parse: they are why some lines are here
    except (ValueError, RecursionError):
        return _UNPARSED


def _scan(text: str) -> tuple[list[str], bool, bool, int]:
    """Where a JSON text stops: the closers of its open objects and lists (outermost first), whether
    it stops inside a string and right after a backslash there, and where its last string began."""
    stack: list[str] = []
    in_string = escaped = False
    start = -1
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string, start = True, i
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and stack:
            stack.pop()
    return stack, in_string, escaped, start


def _closed(text: str) -> str:
    """A torn JSON text closed where it stopped: the open string, a dangling key or comma, and every
    open object and list (innermost first). Not every cut can be closed; those stay unparsed."""
    stack, in_string, escaped, start = _scan(text)
    if in_string:
        text = text[:start] + _cut_string(text[start:-1] if escaped else text[start:]) + '"'
    else:
        text = _LITERAL_TAIL.sub("", text.rstrip())  # a number or literal cut short: drop it
    text = text.rstrip()
    if text.endswith(","):
        text = text[:-1]
    elif text.endswith(":"):
        text += "null"
    elif stack and stack[-1] == "}" and text.endswith('"') and _dangling_key(text):
        text += ":null"
    return text + "".join(reversed(stack))


def _cut_string(fragment: str) -> str:
    """A string cut short, as written so far. A URL cut inside its authority may be cut inside a
    password before its ``@`` (``https://user:pa``), where no URL rule sees userinfo: the
    authority is redacted."""
    scheme, sep, rest = fragment.partition("://")
    if sep and not any(c in rest for c in "/?#@"):
        return f"{scheme}{sep}{_REDACTED_CUT}"
    return fragment


def _dangling_key(text: str) -> bool:
    """Whether the string that ``text`` ends with is an object key (it follows ``{`` or ``,``)."""
    start = _scan(text[:-1])[3]  # without its closing quote, the text stops inside that string
    return start >= 0 and text[:start].rstrip().endswith(("{", ","))
