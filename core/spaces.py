"""Shared space helpers: wide text spaces and JSON-schema validation of LLM actions."""

from __future__ import annotations

import re
from typing import Any

from gymnasium import spaces

from rsigym.records.action_limits import ActionLimits, DEFAULT_ACTION_LIMITS, action_limit_error
from rsigym.records.trajectory import to_jsonable

__all__ = ["TEXT_CHARSET", "INVALID_ACTION_KEY", "FastText", "text_space", "clean_text", "invalid_action", "JsonActions",
           "split_task_ids"]


def split_task_ids(family: str, prefix: str, splits: dict[str, range], split: str | None) -> list[str]:
    """Task ids ``PREFIX-NNN`` of a split (``None``/``"all"``: every split, in order)."""
    if split in (None, "all"):
        indices = [i for r in splits.values() for i in r]
    elif split in splits:
        indices = list(splits[split])
    else:
        raise ValueError(f"unknown {family} split {split!r}; known: all, {', '.join(splits)}")
    return [f"{prefix}-{i:03d}" for i in indices]

# An agent that could not produce a valid action says so explicitly with this key, so the env
# records "no valid action" (with the agent's reason) rather than a confusing schema error.
INVALID_ACTION_KEY = "rsigym_invalid_action"


def invalid_action(reason: str, raw: str = "") -> dict[str, Any]:
    """The explicit invalid action an agent returns when it has no valid one."""
    return {INVALID_ACTION_KEY: {"error": reason, "raw": raw}}

# Printable ASCII with whitespace, Latin-1, general punctuation, arrows and box drawing: what an
# env's prompt text uses. Gymnasium's default Text charset is alphanumeric only.
TEXT_CHARSET = frozenset(
    "\n\t"
    + "".join(chr(c) for c in range(0x20, 0x7F))
    + "".join(chr(c) for c in range(0xA0, 0x180))
    + "".join(chr(c) for c in range(0x2010, 0x2070))
    + "".join(chr(c) for c in range(0x2190, 0x2200))
    + "".join(chr(c) for c in range(0x2500, 0x2580))
)


# Everything outside TEXT_CHARSET, as one compiled class: agents' bytes and emoji come back quoted
# in error messages, and an observation must stay inside its Text space.
def _ranges(chars: frozenset[str]) -> str:
    codes, parts = sorted(ord(c) for c in chars), []
    start = prev = codes[0]
    for code in [*codes[1:], -1]:
        if code != prev + 1:
            parts.append(re.escape(chr(start)) + ("-" + re.escape(chr(prev)) if prev > start else ""))
            start = code
        prev = code
    return "".join(parts)


_OUTSIDE_CHARSET = re.compile(f"[^{_ranges(TEXT_CHARSET)}]")


def clean_text(text: str, max_length: int | None = None) -> str:
    """``text`` with every character outside ``TEXT_CHARSET`` replaced by ``?``, cut to ``max_length``."""
    text = _OUTSIDE_CHARSET.sub("?", text)
    return text if max_length is None else text[:max_length]


class FastText(spaces.Text):
    """Gymnasium's Text space with the same ``contains`` done as one set comparison.

    ``spaces.Text.contains`` tests each character in a Python loop (a property call per character):
    the env checker's test of a 50,000-character observation took 26 ms, most of a forecasting
    episode's CPU. Same answer: the length bounds, then every character in the charset.
    """

    def contains(self, x: Any) -> bool:
        return (isinstance(x, str) and self.min_length <= len(x) <= self.max_length
                and set(x) <= self.character_set)


def text_space(max_length: int = 8192) -> spaces.Text:
    """A Text space wide enough for prompt-ready observation text."""
    return FastText(max_length=max_length, min_length=0, charset=TEXT_CHARSET)


class JsonActions:
    """Validates JSON actions against an env's ``action_schema``.

    ``parse`` never raises for a bad action: it returns ``(None, message)`` so the env can turn
    the mistake into an error observation (a bad agent output is an observation, not a crash).
    Size limits (``rsigym.records.action_limits``) are checked first, so no action can make the schema
    check recurse without bound; messages are cut to ``MESSAGE_CHARS``, since they quote the action.
    """

    MESSAGE_CHARS = 1000

    def __init__(self, schema: dict[str, Any], limits: ActionLimits = DEFAULT_ACTION_LIMITS) -> None:
        import jsonschema  # loads with the first space, not with `import rsigym.envs`

        jsonschema.Draft202012Validator.check_schema(schema)
        self.schema = schema
        self.limits = limits
        self._validator = jsonschema.Draft202012Validator(schema)

    def parse(self, action: Any) -> tuple[dict[str, Any] | None, str | None]:
        value, error = self._parse(action)
        if error is not None and len(error) > self.MESSAGE_CHARS:
            error = error[:self.MESSAGE_CHARS - 20] + " ... (message cut)"
        return value, error

    def _parse(self, action: Any) -> tuple[dict[str, Any] | None, str | None]:
        limit_error = action_limit_error(action, self.limits)
        if limit_error is not None:
            return None, f"invalid action: {limit_error}"
        try:
            value = to_jsonable(action)
        except TypeError as exc:
            return None, f"invalid action: {exc}"
        if isinstance(value, dict) and INVALID_ACTION_KEY in value:
            reason = value[INVALID_ACTION_KEY]
            reason = reason.get("error") if isinstance(reason, dict) else reason
            return None, f"the agent produced no valid action: {reason}"
        errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            error = errors[0]
            # For oneOf/anyOf, the deepest sub-error names what the agent most likely got wrong
            # (a misspelt tool name rather than "not valid under any of the given schemas").
            while error.validator in ("oneOf", "anyOf") and error.context:
                deepest = max(error.context, key=lambda e: len(e.absolute_path))
                if len(deepest.absolute_path) <= len(error.absolute_path):
                    break
                error = deepest
            where = "/".join(str(p) for p in error.absolute_path) or "action"
            return None, f"invalid action at {where}: {error.message}"
        return value, None
