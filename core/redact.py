"""Secrets out of every message and record: keys by name, and key-shaped strings by their look.

Two rules, both applied everywhere rsigym writes text a user or a file will keep (CLI messages,
records, manifests, scenario copies, reports):

* a value under a secret-looking key (``api_key``, ``token``, ``secret``, ``password``,
  ``authorization``, ``*_api_key``, ``*_token``; not ``max_tokens`` or ``prompt_tokens``) becomes
  ``"[redacted]"``;
* inside any text, strings shaped like provider keys (``sk-...``, ``sk-ant-...``, ``ghp_...``,
  ``xoxb-...``, ``AKIA...``, ``hf_...``, ``Bearer <token>``) and the values of registered secrets
  (``register_secret``: the CLI registers the values of secret-named environment variables) are
  replaced too, so a key echoed inside an error message is caught as well.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "redact", "redact_text", "is_secret_key", "register_secret"]

REDACTED = "[redacted]"

_SECRET_KEY = re.compile(
    r"^(?:.*[_-])?(?:api[_-]?key|apikey|token|access[_-]?token|secret|secret[_-]?key|password|passwd|"
    r"authorization|auth|credentials?|private[_-]?key)$", re.IGNORECASE)
_KEY_SHAPES = re.compile(
    r"(?:\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{12,}"
    r"|\b(?:ghp|gho|ghs|github_pat|hf|xox[abpr])_[A-Za-z0-9_\-]{12,}"
    r"|\bxox[abpr]-[A-Za-z0-9\-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_\-]{30,}"
    r"|(?<=Bearer )[A-Za-z0-9._\-]{12,})")
_SECRETS: set[str] = set()
_MIN_SECRET_CHARS = 8  # shorter values ("1", "true") would redact ordinary text


def is_secret_key(name: str) -> bool:
    """Whether a mapping key (a param, a header, a variable name) names a secret."""
    return bool(_SECRET_KEY.match(name)) or name.upper().endswith(("_API_KEY", "_TOKEN", "_SECRET"))


def register_secret(value: str | None) -> None:
    """Redact this exact value from all text from now on (values under 8 characters are ignored)."""
    if value and len(value) >= _MIN_SECRET_CHARS:
        _SECRETS.add(value)


def redact_text(text: str) -> str:
    """``text`` with key-shaped strings and registered secret values replaced by ``[redacted]``."""
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _KEY_SHAPES.sub(REDACTED, text)


def redact(value: Any) -> Any:
    """A copy of a JSON-like value with secrets replaced; other values are returned as they are.

    Walks with an explicit stack so that a value nested thousands deep cannot overflow it.
    """
    if isinstance(value, str):
        return redact_text(value)
    if not isinstance(value, (dict, list, tuple)):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (source, parent container, slot)
    while stack:
        source, parent, slot = stack.pop()
        if isinstance(source, dict):
            copy: Any = {}
            for key, item in source.items():
                if isinstance(key, str) and is_secret_key(key) and item not in (None, ""):
                    copy[key] = REDACTED
                else:
                    copy[key] = None
                    stack.append((item, copy, key))
        elif isinstance(source, (list, tuple)):
            copy = [None] * len(source)
            stack.extend((item, copy, i) for i, item in enumerate(source))
        elif isinstance(source, str):
            copy = redact_text(source)
        else:
            copy = source
        parent[slot] = copy
    return root[0]
