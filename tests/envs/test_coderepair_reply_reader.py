"""The collector's reader of reply frames (``reply_reader``): every honest repr reads back, the
token count bounds what ``compile`` gets, and anything but a literal display is refused before it."""

from __future__ import annotations

import io
import tokenize

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsigym.envs.coderepair.reply_reader import MAX_REPLY_TOKENS, Oversized, count_tokens, read_literal

TEXT = st.text(st.characters(blacklist_categories=()), max_size=8)  # surrogates and controls too
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), TEXT)
KEYS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(KEYS, inner, max_size=3) | st.sets(KEYS, min_size=1, max_size=3),
    max_leaves=25)


@settings(max_examples=200, deadline=None)
@given(VALUES)
def test_every_literal_display_reads_back_equal_and_of_its_type(value):
    back = read_literal(repr(value).encode("utf-8", "surrogatepass"), limit=100_000)
    assert back == value and type(back) is type(value)


def test_a_frame_of_the_token_cap_reads_and_one_token_more_is_oversized():
    at_cap = b"(" + b"0," * (MAX_REPLY_TOKENS // 2 - 1) + b")"
    assert count_tokens(at_cap)[1] == MAX_REPLY_TOKENS
    assert read_literal(at_cap) == (0,) * (MAX_REPLY_TOKENS // 2 - 1)
    with pytest.raises(Oversized):
        read_literal(at_cap[:-1] + b"0)")


@pytest.mark.parametrize("frame", [
    b"1<1", b"1 + 1", b"1-1", b"True-True", b"--1", b"1 and 1", b"1if 1else 1", b"a", b"a.b", b"1 .real",
    b"x[0]", b"(0)[0]", b"f()", b"()()", b"'a' 'b'", b"'''a'''", b"f'{1}'", b"b'x'", b"0x1f", b"1j+1j",
    b"lambda: 1", b"[x for x in ()]", b"None+None", b"Nonee+Nonee", b"1_0", b"(1)(2)", b"[1] [2]", b"{**{}}", b"(a:=1)", b"1 # c", b"(1,\n2)", b"'\\\n'", b"\\", b"\xc3\xa9",
])
def test_anything_but_a_literal_display_is_refused_before_compile(frame, monkeypatch):
    import builtins

    def no_compile(*args, **kwargs):
        raise AssertionError("compile ran")

    monkeypatch.setattr(builtins, "compile", no_compile)
    with pytest.raises(ValueError) as refused:
        read_literal(frame)
    assert not isinstance(refused.value, Oversized)


PIECES = ["1", "0", "e", "j", "x", "_", "True", "if", "'a'", "\"b'\"", "'\\''", "''", "'", "(", ")", "[", "]", "{",
          "}", ",", ":", " ", ".", "+", "-", "<", "*", "#", "\\", "f", "=", "\n", "\t"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_python_makes_at_most_twice_the_counted_tokens_of_a_frame_that_reaches_compile(text):
    data = text.encode()
    residue, counted = count_tokens(data)
    try:
        read_literal(data)
    except Oversized:
        raise AssertionError("a short frame counted over the cap")
    except ValueError as exc:
        if str(exc) == "not a literal":
            return  # refused before compile: its tokens never reach the parser
    except (SyntaxError, TypeError, MemoryError, RecursionError):
        pass  # compile ran: its tokens are what the parser read (a syntax error stops it earlier)
    try:
        python_tokens = [t for t in tokenize.tokenize(io.BytesIO(data).readline)
                         if t.type not in (tokenize.ENCODING, tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER,
                                           tokenize.INDENT, tokenize.DEDENT)]  # eval mode has no blocks
    except (tokenize.TokenError, SyntaxError):
        return
    if any(t.type == tokenize.ERRORTOKEN for t in python_tokens):
        return  # compile's tokenizer stops at the first error (an unterminated string)
    assert len(python_tokens) <= 2 * counted, (text, python_tokens)
