"""Fast paths that skip work must give the answers of the slow path they skip.

``redact_text`` runs its header and key-shape regexes only on text that could match them
(substring tests first); ``FastText.contains`` tests a string's characters as one set comparison.
Each is checked here against the unconditional version on generated text built from the pieces
that matter (header names, quotes, whitespace, colons, key prefixes, case and non-ASCII look-alikes).
"""

from __future__ import annotations


from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from rsigym.records import redact as R
from rsigym.spaces import TEXT_CHARSET, FastText, text_space

PIECES = ["Cookie", "set-cookie", ":", " ", "\t", "\n", "'", '"', "token", "Token", "KEY", "x-api-key", "apikey",
          "Authorization", "authorisation", "passwd", "password", "secret", "signature", "credentials", "credential",
          "abc", "=", ",", "}", "{", "[", "Bearer ", "Basic ", "sk-", "sk-proj-", "ghp_", "hf_", "xoxb-", "AKIA",
          "AIza", "ABCDEFGHIJKLMNOP0123", "-", "_", "tokens", "keys", "\u212a", "\u017f", "\u0130", "é", "://",
          "https://u:p@h/v1?code=x"]
texts = st.lists(st.sampled_from(PIECES), min_size=1, max_size=14).map("".join)


def unconditional(text: str) -> str:
    """``redact_text`` with every regex run on every text (no substring shortcuts)."""
    for secret in sorted(R._SECRETS, key=len, reverse=True):
        text = text.replace(secret, R.REDACTED)
    text = R._URL.sub(R._redact_url, text)
    text = R._HEADER_TEXT.sub(R._redact_header, text)
    return R._KEY_SHAPES.sub(R.REDACTED, text)


@settings(max_examples=3000, deadline=None)
@given(texts)
def test_redact_text_with_its_shortcuts_equals_every_regex_on_every_text(text):
    assert R.redact_text(text) == unconditional(text)
    if R._HEADER_TEXT.search(text):
        assert R._may_name_a_header(text)
    if R._KEY_SHAPES.search(text):
        assert any(anchor in text for anchor in R._KEY_SHAPE_ANCHORS)


def test_the_header_shortcut_sees_a_colon_far_behind_its_name():
    text = "Authorization" + " " * 500 + ": hunter2-secret-value"
    assert R._HEADER_TEXT.search(text) and R._may_name_a_header(text)
    assert "hunter2" not in R.redact_text(text)


def test_a_long_text_that_only_mentions_header_words_skips_the_regex_and_changes_nothing():
    text = '{"tokens": 30720, "keys": [1, 2], "secretary": "x"}' * 2000  # 100 KB, no header shape
    assert not R._may_name_a_header(text)
    assert R.redact_text(text) == unconditional(text)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.sampled_from(sorted(TEXT_CHARSET)[:40] + ["\x00", "\u2603", "é", "\U0001f600"]),
               max_size=40), st.integers(0, 5), st.integers(5, 40))
def test_fast_text_contains_answers_as_gymnasium_text(value, low, high):
    fast = FastText(max_length=high, min_length=low, charset=TEXT_CHARSET)
    slow = spaces.Text(max_length=high, min_length=low, charset=TEXT_CHARSET)
    assert fast.contains(value) == slow.contains(value)
    assert not fast.contains(b"bytes") and not fast.contains(None)


def test_text_space_is_the_fast_one_and_samples_what_it_contains():
    space = text_space(64)
    assert isinstance(space, FastText) and isinstance(space, spaces.Text)
    space.seed(0)
    assert all(space.contains(space.sample()) for _ in range(50))
