"""Reads a runner's reply frame as data, at a cost bounded before ``compile`` sees a byte of it.

This module's text is inlined into the collector program (``sandbox_program.COLLECTOR``, after the
wire code, whose ``recv_frame`` then raises this ``Oversized``), which runs under ``python3 -I -S``
in the sandbox: it imports only ``_ast`` and ``re`` and has no ``from __future__`` line.

``compile`` costs 300 to 450 bytes and tens of microseconds per token, whatever the tokens build,
in C code no alarm interrupts (a 1 MB frame of ``1<1<...`` is one comparison of 520,000 operands:
430 MB), so a frame is judged on its bytes first, in passes at C speed:

1. strings are cut out as ``repr`` writes them (a scan from a quote always matches, so no byte is
   scanned twice);
2. the tokens are counted: each string, each run of word characters, each other visible byte.
   Python makes at most 2 tokens of one such run (a number, then a name: ``1if``) and one of any
   other piece, and a tree has about one node per token, so ``MAX_REPLY_TOKENS`` bounds the
   parser's tokens and the tree's nodes by about twice the cap;
3. what is left must read as a literal display: brackets, commas, colons, strings, numbers,
   True/False/None and a sign that starts a value or an exponent; no operator, name, attribute,
   call, subscript, prefixed or adjacent string. Then each counted piece is one token, and nothing
   nests but brackets, which the tokenizer stops at 200: the costliest frame under the cap costs
   ``compile`` about 20 MB (``tests/security/test_coderepair_costly_frame.py``).
"""

import _ast
import re

__all__ = ["MAX_REPLY_BYTES", "MAX_REPLY_TOKENS", "Oversized", "count_tokens", "read_literal"]

# The largest honest reply of the 164 references and their catalogue mutants is 1.5 kB (so at most
# 1,500 tokens); an opaque value's repr is cut at 20 kB (one string token). The token cap keeps the
# room the earlier cap of 20,000 items gave (an item is a value and its comma: 2 tokens), and
# bounds what one frame may cost the collector to about 20 MB and a fraction of a second.
MAX_REPLY_BYTES = 1024 * 1024
MAX_REPLY_TOKENS = 40_000

# A string literal as repr writes it. The closing quote is optional so that a scan never fails
# (an unterminated string runs to the end of its line, where Python's tokenizer stops too), and the
# repeats are possessive (Python 3.11, the package's and the image's floor): no backtracking state
# is kept per byte (a plain repeat keeps about 100 bytes per byte of a 1 MB string).
_STRING = re.compile(rb"'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'?|\"[^\"\\\n]*+(?:\\.[^\"\\\n]*+)*+\"?")
_WORD_BYTES = bytes(range(48, 58)) + bytes(range(65, 91)) + bytes(range(97, 123)) + b"_"
# word bytes -> "w", every other byte -> " ": a run of words starts at each " w"
_WORD_MAP = bytes(119 if byte in _WORD_BYTES else 32 for byte in range(256))
_SPACES = re.compile(rb"  +")
# The first byte a literal display's repr never holds where it is, on the frame with each string
# cut to one "'", each run of spaces to one space and True, False, None to "e". A match starts with
# the byte it blames, so the search skips digits, spaces and the "e"/"j" of 1e+16 or 1j at C speed.
_NOT_LITERAL = re.compile(
    rb"[^0-9 eEjJ)\]}{,:]"
    rb"(?:(?<=[^0-9 eEjJ'()\[\]{},:+\-.])"  # a name, "_", an operator, "#", "\", a control or non-ASCII byte
    rb"|(?<=[\w']')|(?<=[\w'] ')"  # a prefixed string (f-strings hold code) or adjacent ones (a "'''")
    rb"|(?<=\.)(?!\d)|(?<![0-9]\.)(?<=\.)"  # a dot that is no decimal point (an attribute)
    rb"|(?<=[\])}'\w][(\[])|(?<=[\])}'\w] [(\[])"  # a call or a subscript
    rb"|(?<=[)\]}'.+\-][+\-])|(?<=[)\]}'.+\-] [+\-])|(?<=\w [+\-])"  # a binary operator or a sign chain
    rb"|(?<=\w[+\-])(?<![0-9][eE][+\-]))"  # a sign after a word, but an exponent's
)
_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")


class Oversized(ValueError):
    """A frame over a cap: its test fails as ``oversized``."""


def count_tokens(data: bytes) -> tuple[bytes, int]:
    """``data`` with each string cut to one ``'``, and its tokens counted on the bytes.

    Where ``data`` passes ``_NOT_LITERAL``, Python's tokenizer makes at most twice as many.
    """
    # a cap on the cuts bounds the list of pieces ``subn`` builds
    residue, strings = _STRING.subn(b"'", data, MAX_REPLY_TOKENS + 1)
    others = len(residue.translate(None, _WORD_BYTES + b" '"))
    words = (b" " + residue.translate(_WORD_MAP)).count(b" w")
    return residue, strings + others + words


def read_literal(data: bytes, limit: int = 200) -> object:
    """The runner's repr text as data: tuples, lists, sets, dicts, strings, numbers, True/False/None.

    Raises:
        Oversized: more than ``MAX_REPLY_TOKENS`` tokens.
        ValueError: anything that is not such a literal, or nested deeper than ``limit``.
    """
    residue, tokens = count_tokens(data)
    if tokens > MAX_REPLY_TOKENS:
        raise Oversized("a frame of %d tokens" % tokens)
    # True, False and None read as a bare "e": a word, never a digit before an exponent's sign
    shape = _SPACES.sub(b" ", residue).replace(b"True", b"e").replace(b"False", b"e").replace(b"None", b"e")
    if _CONTROL.search(data) is not None or _NOT_LITERAL.search(shape) is not None:
        raise ValueError("not a literal")

    def value(node: object, depth: int) -> object:
        if depth > limit:
            raise ValueError("nested too deep")
        if isinstance(node, _ast.Constant) and type(node.value) in (str, int, float, bool, type(None)):
            return node.value
        if isinstance(node, _ast.Tuple):
            return tuple(value(x, depth + 1) for x in node.elts)
        if isinstance(node, _ast.List):
            return [value(x, depth + 1) for x in node.elts]
        if isinstance(node, _ast.Set):
            return {value(x, depth + 1) for x in node.elts}
        if isinstance(node, _ast.Dict) and None not in node.keys:
            return {value(k, depth + 1): value(v, depth + 1) for k, v in zip(node.keys, node.values)}
        if isinstance(node, _ast.UnaryOp) and isinstance(node.op, _ast.USub) and isinstance(node.operand, _ast.Constant):
            number = node.operand.value
            if isinstance(number, (int, float)) and type(number) is not bool:
                return -number
        raise ValueError("not a literal (%s)" % type(node).__name__)

    tree = compile(data.decode("utf-8", "surrogatepass"), "<reply>", "eval", _ast.PyCF_ONLY_AST)
    if not isinstance(tree, _ast.Expression):
        raise ValueError("not an expression")
    return value(tree.body, 0)
