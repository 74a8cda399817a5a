"""What a provider said when a call failed, in one line, and whether waiting could help.

LiteLLM wraps a provider's answer in two or three layers of prefixes
(``litellm.AuthenticationError: AuthenticationError: OpenAIException - <the provider's words>``),
and a connection failure surfaces as "Connection error." with the reason (refused, no such host,
not a URL) three exceptions down the chain. ``provider_message`` digs out the provider's own
words (or the socket's reason) so that a one-line error ends with what the user needs to read.
"""

from __future__ import annotations

import ast
import re

__all__ = ["provider_message", "root_cause", "error_kind", "UNRECOVERABLE_KINDS", "is_unrecoverable_text",
           "NOT_RETRIED"]

NOT_RETRIED = "(not retried)"  # in every LLMError message of a failure that cannot pass
UNRECOVERABLE_KINDS = frozenset({"auth", "not_found", "bad_request", "bad_url", "too_large"})

_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+(?:Error|Exception):\s*)?(?:\w+Exception\s*-\s*)?")
_BODY = re.compile(r"Error code: \d+ - (\{.*\})\s*$", re.S)
# exceptions of the transport under LiteLLM whose text names the reason of a failed connection
_URL_ERRORS = frozenset({"UnsupportedProtocol", "InvalidURL", "LocalProtocolError"})


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of ``exc``'s cause chain (cycles cut)."""
    seen = {id(exc)}
    while True:
        nxt = exc.__cause__ or exc.__context__
        if nxt is None or id(nxt) in seen:
            return exc
        seen.add(id(nxt))
        exc = nxt


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def provider_message(exc: BaseException) -> str:
    """The provider's own message of a failed call (or the transport's reason), one line."""
    text = _PREFIX.sub("", _first_line(str(getattr(exc, "message", None) or exc)))
    body = _BODY.search(text)
    if body:  # OpenAI's SDK: "Error code: 401 - {'error': {'message': ...}}"
        try:
            data = ast.literal_eval(body.group(1))
            message = (data.get("error") or {}).get("message") if isinstance(data, dict) else None
            if message:
                text = str(message)
        except (ValueError, SyntaxError, AttributeError):
            pass
    if "connection error" in text.lower() or not text:
        reason = _first_line(str(root_cause(exc)))
        if reason and reason.lower() not in text.lower():
            text = f"{text.rstrip('.')}: {reason}" if text else reason
    return " ".join(text.split())


def error_kind(exc: BaseException) -> str:
    """``auth``, ``not_found``, ``bad_request``, ``bad_url``, ``too_large`` (a reply over the cap of
    ``rsigym.llm.http_guard``), ``connection``, ``rate_limit``, ``server`` or ``other``: what kind of
    failure a provider call met."""
    cause = type(root_cause(exc)).__name__
    if cause in _URL_ERRORS:
        return "bad_url"
    if cause == "ReplyTooLarge":
        return "too_large"
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    if status in (401, 403) or name in ("AuthenticationError", "PermissionDeniedError"):
        return "auth"
    if status == 404 or name == "NotFoundError":
        return "not_found"
    if status == 429 or name == "RateLimitError":
        return "rate_limit"
    if status in (400, 422) or name in ("BadRequestError", "UnprocessableEntityError"):
        return "bad_request"
    if "connection" in str(exc).lower() or name in ("APIConnectionError", "Timeout"):
        return "connection"
    if isinstance(status, int) and status >= 500:
        return "server"
    return "other"


def is_unrecoverable_text(error: str | None) -> bool:
    """Whether a recorded error is an LLM failure that cannot pass by retrying (a bad key, an
    unknown model, a rejected request, missing credentials)."""
    return bool(error) and (NOT_RETRIED in error or "no credentials; set" in error)  # type: ignore[operator]
