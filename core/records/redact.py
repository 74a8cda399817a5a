"""Secrets out of every message and record: by name, by structure, by shape and by value.

Applied everywhere rsigym writes text a user or a file will keep (CLI messages and the limits
line, records and ``shared.jsonl``, manifests, scenario copies, reports, the viewer, exports):

* **by name**: a value under a secret-looking key (``api_key``, ``token``, ``secret``,
  ``password``, ``authorization``, ``cookie``, ``signature``, ``Ocp-Apim-Subscription-Key``,
  ``X-Api-Key``; not ``max_tokens``, ``prompt_tokens`` or ``episode_key``) becomes ``"[redacted]"``;
* **by structure**: every value of a header mapping (``headers``, ``extra_headers``,
  ``*_headers``), whatever its name; inside provider configuration (``params``, ``*_kwargs``) also
  string values under any key containing ``key``, ``token`` or ``code``; and in any text, the
  userinfo and the query and fragment values of every URL (``http://[redacted]@host/v1?code=[redacted]``)
  and the values of header lines (``Cookie: [redacted]``);
* **by shape**: strings shaped like provider keys (``sk-...``, ``ghp_...``, ``AKIA...``,
  ``Bearer <token>``, ``Basic <credentials>``);
* **by value**: the values of registered secrets (``register_secret``). The CLI registers the
  values of secret-named environment variables, and loading a scenario registers every value the
  structural rules find in it, so the same value echoed by a provider's error message or a tool's
  output is caught too.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

__all__ = ["REDACTED", "redact", "redact_text", "redacted_excerpt", "is_secret_key", "register_secret",
           "secrets_in", "register_secrets_in"]

REDACTED = "[redacted]"

_SECRET_KEY = re.compile(
    r"^(?:.*[_-])?(?:api[_-]?key|apikey|token|access[_-]?token|secret|secret[_-]?key|password|passwd|"
    r"authorization|auth|credentials?|private[_-]?key)$", re.IGNORECASE)
# Words that name a secret wherever they appear in a key (``Cookie``, ``Proxy-Authorization``,
# ``x-amz-signature``, ``db_password``); none of them names a count or an id.
_SECRET_WORD = re.compile(r"cookie|authori[sz]ation|password|passwd|secret|signature|credential", re.IGNORECASE)
# A key whose last word is ``key`` or ``token`` after another word (``Ocp-Apim-Subscription-Key``,
# ``X-Api-Key``, ``session_token``); ``episode_key`` is the record's join key, not a secret.
_KEY_SUFFIX = re.compile(r"^[\w.-]*[_.-](?:key|token)$", re.IGNORECASE)
_NOT_SECRET = frozenset({"episode_key"})
# ``api_key_env: MY_KEY_VAR`` names the variable that holds the secret, never the secret itself.
_NAMES_A_VARIABLE = re.compile(r"_env$", re.IGNORECASE)
_HEADERS_KEY = re.compile(r"^(?:.*[_-])?headers$", re.IGNORECASE)
# Provider configuration: here any key that mentions key, token or code with a string value is a
# credential (``subscription_key``, ``auth_code``); elsewhere ``code`` is a program's text.
_CONFIG_KEY = re.compile(r"^(?:params|kwargs|.*_params|.*_kwargs)$", re.IGNORECASE)
_CONFIG_WORD = re.compile(r"key|token|code", re.IGNORECASE)
_NOT_CONFIG_SECRET = re.compile(r"^(?:max_|min_)?(?:completion_|prompt_|input_|output_)?tokens?$|_tokens$",
                                re.IGNORECASE)

_KEY_SHAPES = re.compile(
    r"(?:\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{12,}"
    r"|\b(?:ghp|gho|ghs|github_pat|hf|xox[abpr])_[A-Za-z0-9_\-]{12,}"
    r"|\bxox[abpr]-[A-Za-z0-9\-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_\-]{30,}"
    r"|(?<=Bearer )[A-Za-z0-9._\-~+/=]{8,}"
    r"|(?<=Basic )[A-Za-z0-9+/=]{8,})")
# Every shape above contains one of these literally (the pattern is case-sensitive): text that holds
# none of them cannot match, and a substring test costs ~1/100 of the regex's scan of every position.
_KEY_SHAPE_ANCHORS = ("sk-", "ghp_", "gho_", "ghs_", "github_pat_", "hf_", "xox", "AKIA", "AIza", "Bearer ", "Basic ")
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>`]+")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#@]*@)")
_PAIR_VALUE = re.compile(r"((?:^|&|;)[^=&;#]*=)([^&;#]*)")
# A header line or a quoted header pair in text: ``Cookie: a=1; b=2``, ``'X-Api-Key': 'v'``,
# ``"Ocp-Apim-Subscription-Key": "v"``. A name ends with its secret word (``secret-test: ...``, a
# model name, is no header); the value runs to its quote, or to a comma, brace or line end.
# "credentials" alone is prose ("needs credentials: set OPENAI_API_KEY"), not a header: only a joined
# name (``x-credentials``, ``aws_credentials``) counts.
_HEADER_NAME = (r"(?:set-cookie|cookie|proxy-authori[sz]ation|authori[sz]ation|[\w-]*(?:password|passwd|secret|"
                r"signature)|[\w-]+[_-]credentials?|[\w-]+[_-](?:key|token)|api[_-]?key|apikey|token)")
_HEADER_TEXT = re.compile(
    r"(?P<name>(?P<q>['\"]?)\b" + _HEADER_NAME + r"(?P=q)\s*:\s*)"
    r"(?:(?P<vq>['\"])(?P<quoted>(?:(?!(?P=vq)).)*)(?P=vq)|(?P<bare>[^\s'\",}{\]\[][^\n\r'\",}]*))",
    re.IGNORECASE)
_HEADER_WORDS = ("cookie", "authori", "password", "passwd", "secret", "signature", "credential", "key", "token")
# Headers whose values are no secret and common words ("application/json"): not registered.
_PLAIN_HEADERS = frozenset({"content-type", "accept", "accept-encoding", "accept-language", "user-agent",
                            "content-length", "connection", "cache-control", "host"})
_SECRETS: set[str] = set()
_MIN_SECRET_CHARS = 8  # shorter values ("1", "true") would redact ordinary text


def is_secret_key(name: str) -> bool:
    """Whether a mapping key (a param, a header, a variable name) names a secret."""
    if name in _NOT_SECRET or _NAMES_A_VARIABLE.search(name):
        return False
    return (bool(_SECRET_KEY.match(name)) or bool(_SECRET_WORD.search(name)) or bool(_KEY_SUFFIX.match(name))
            or name.upper().endswith(("_API_KEY", "_TOKEN", "_SECRET")))


def _is_config_secret(name: str, value: Any) -> bool:
    return (isinstance(value, str) and bool(_CONFIG_WORD.search(name)) and name not in _NOT_SECRET
            and not _NOT_CONFIG_SECRET.search(name) and not _NAMES_A_VARIABLE.search(name))


def register_secret(value: str | None) -> None:
    """Redact this exact value from all text from now on (values under 8 characters are ignored)."""
    if value and len(value) >= _MIN_SECRET_CHARS:
        _SECRETS.add(value)


def _redact_url(match: re.Match[str]) -> str:
    url = _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", match.group(0))
    base, hash_mark, fragment = url.partition("#")
    base, question, query = base.partition("?")
    if question and "=" not in query:  # ?TOKEN: the whole query is the value
        base += "?" + (REDACTED if query else "")
    elif question:
        base += "?" + _PAIR_VALUE.sub(lambda m: m.group(1) + (REDACTED if m.group(2) else ""), query)
    if hash_mark and "=" in fragment:  # OAuth-style fragments (#access_token=...) hold values too
        fragment = _PAIR_VALUE.sub(lambda m: m.group(1) + (REDACTED if m.group(2) else ""), fragment)
    return base + hash_mark + fragment


def _redact_header(match: re.Match[str]) -> str:
    if match.group("vq"):
        return match.group("name") + match.group("vq") + REDACTED + match.group("vq")
    return match.group("name") + REDACTED


# Every name ``_HEADER_TEXT`` matches ends with one of these (in any case), right before its
# optional quote, spaces and colon.
_HEADER_ENDS = ("cookie", "authorization", "authorisation", "password", "passwd", "secret", "signature",
                "credential", "credentials", "key", "token")


def _may_name_a_header(text: str) -> bool:
    """Whether ``_HEADER_TEXT`` could match in ``text``: the regex costs ~0.3 ms per KB, and a
    200 KB observation that merely mentions "tokens" paid it in full.

    ASCII text: whether a header name's end is followed by an optional quote, whitespace and a
    colon (the regex's necessary condition), found with substring searches; ASCII ``lower`` maps
    one character to one, as the regex's case-insensitive match does. Other text: whether it
    mentions a header word at all (non-ASCII letters such as the Kelvin sign match ``k`` in the
    regex: the plain test is kept there).
    """
    lowered = text.lower()
    if not text.isascii():
        return any(word in lowered for word in _HEADER_WORDS)
    n = len(lowered)
    for word in _HEADER_ENDS:
        at = lowered.find(word)
        while at != -1:
            j = at + len(word)
            if j < n and lowered[j] in "'\"":
                j += 1
            while j < n and lowered[j].isspace():
                j += 1
            if j < n and lowered[j] == ":":
                return True
            at = lowered.find(word, at + 1)
    return False


def redact_text(text: str) -> str:
    """``text`` with registered secret values, URL userinfo and query values, header values and
    key-shaped strings replaced by ``[redacted]``."""
    for secret in sorted(_SECRETS, key=len, reverse=True):  # longest first: no half-replaced value
        if secret in text:
            text = text.replace(secret, REDACTED)
    if "://" in text:
        text = _URL.sub(_redact_url, text)
    if ":" in text and _may_name_a_header(text):  # most text names no header: skip the regex
        text = _HEADER_TEXT.sub(_redact_header, text)
    if any(anchor in text for anchor in _KEY_SHAPE_ANCHORS):
        text = _KEY_SHAPES.sub(REDACTED, text)
    return text


def redacted_excerpt(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text`` redacted: redaction first, then the cut.

    Cut first, a secret the cut splits is no longer the registered value nor a key's shape, and its
    first part stays ("15 of 23 characters"). Only a window is redacted (a 10 MB reply costs no
    more than its head): the cut plus the longest registered secret, so a value that starts before
    the cut ends inside the window; the shapes and URL rules also hide a value cut at its end.
    """
    window = chars + max((len(s) for s in _SECRETS), default=0) + 64
    return redact_text(text[:window])[:chars]


def _hide_all(value: Any) -> Any:
    """A header mapping's values all hidden, its names kept (they say what was configured)."""
    if isinstance(value, dict):
        return {k: (REDACTED if v not in (None, "") else v) for k, v in value.items()}
    return REDACTED if value not in (None, "", [], {}) else value


def redact(value: Any) -> Any:
    """A copy of a JSON-like value with secrets replaced; other values are returned as they are.

    Walks with an explicit stack so that a value nested thousands deep cannot overflow it.
    """
    if isinstance(value, str):
        return redact_text(value)
    if not isinstance(value, (dict, list, tuple)):
        return value
    root: list[Any] = [None]
    # (source, parent container, slot, inside provider configuration)
    stack: list[tuple[Any, Any, Any, bool]] = [(value, root, 0, False)]
    while stack:
        source, parent, slot, config = stack.pop()
        if isinstance(source, dict):
            copy: Any = {}
            for key, item in source.items():
                name = key if isinstance(key, str) else ""
                if name and _HEADERS_KEY.match(name):
                    copy[key] = _hide_all(item)
                elif name and item not in (None, "") and (
                        is_secret_key(name) or (config and _is_config_secret(name, item))):
                    copy[key] = REDACTED
                else:
                    copy[key] = None
                    stack.append((item, copy, key, config or bool(name and _CONFIG_KEY.match(name))))
        elif isinstance(source, (list, tuple)):
            copy = [None] * len(source)
            stack.extend((item, copy, i, config) for i, item in enumerate(source))
        elif isinstance(source, str):
            copy = redact_text(source)
        else:
            copy = source
        parent[slot] = copy
    return root[0]


def secrets_in(value: Any) -> Iterator[str]:
    """Every secret value the structural rules find in a JSON-like value (a scenario, params):
    values under secret keys and header mappings, URL userinfo parts and query values."""
    stack: list[tuple[Any, bool, bool]] = [(value, False, False)]  # (value, under a secret, config)
    while stack:
        item, hidden, config = stack.pop()
        if isinstance(item, dict):
            for key, sub in item.items():
                name = key if isinstance(key, str) else ""
                if name and _HEADERS_KEY.match(name) and isinstance(sub, dict):
                    # hidden in files all the same; only their values are not hunted in all text
                    sub = {k: v for k, v in sub.items() if str(k).lower() not in _PLAIN_HEADERS}
                secret = hidden or bool(name and (_HEADERS_KEY.match(name) or is_secret_key(name)
                                                  or (config and _is_config_secret(name, sub))))
                stack.append((sub, secret, config or bool(name and _CONFIG_KEY.match(name))))
        elif isinstance(item, (list, tuple)):
            stack.extend((sub, hidden, config) for sub in item)
        elif isinstance(item, str):
            if hidden:
                yield item
                yield from (part for part in re.split(r"[\s;,]+", item) if "=" not in part)
                yield from (part.partition("=")[2] for part in re.split(r"[\s;,]+", item) if "=" in part)
            for url in _URL.findall(item):
                yield from _url_secrets(url)


def _url_secrets(url: str) -> Iterator[str]:
    userinfo = _USERINFO.match(url)
    if userinfo:
        credentials = userinfo.group(2)[:-1]
        yield credentials
        yield from credentials.split(":")
    _, _, rest = url.partition("?")
    for match in _PAIR_VALUE.finditer(rest.replace("#", "&")):
        yield match.group(2)


def register_secrets_in(value: Any) -> None:
    """``register_secret`` every value ``secrets_in`` finds (those of 8 characters or more)."""
    for secret in secrets_in(value):
        register_secret(secret)
