"""YAML from users, read with bounds: no alias bomb, no huge integer, no nesting that overflows.

``yaml.safe_load`` shares an aliased node instead of copying it, so a 1.3 KB "billion laughs"
parses at once; it is every later walk (schema validation, redaction, ``json.dumps``) that visits
its 10**9 nodes. PyYAML's composer and constructor recurse per nesting level, and Python's ``int``
refuses more than 4,300 digits: both end in a traceback. Here the document is first read as
events (no recursion) to bound its depth, then composed, and its node graph is measured with
memoised sizes (linear in the text, whatever the aliases) before anything is built: its values and
its characters (a 1 MB string aliased 100,000 times is few values but 100 GB to every later walk).
A mapping that names one key twice is refused too (PyYAML keeps the last value silently, so
``seeds: [0]`` followed later by ``seeds: [1, 2]`` would run something the reader did not see).
Each refusal is a ``UserError`` of one line.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..errors import UserError

__all__ = ["load_yaml", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "MAX_YAML_CHARS", "MAX_INT_DIGITS"]

MAX_YAML_DEPTH = 64          # a scenario nests 5 or 6 levels; agent params a few more
MAX_YAML_NODES = 200_000     # nodes after alias expansion; the largest bundled scenario has < 500
MAX_YAML_CHARS = 10_000_000  # characters of every scalar after alias expansion; bundled scenarios: < 20,000
MAX_INT_DIGITS = 100         # seeds and sizes; nothing in a scenario needs a longer integer
_INT_TAG = "tag:yaml.org,2002:int"


def load_yaml(text: str, source: str) -> Any:
    """Parse ``text`` (from ``source``, named in errors) as YAML within the bounds above.

    Raises:
        UserError: invalid YAML, nested deeper than ``MAX_YAML_DEPTH``, more than
            ``MAX_YAML_NODES`` nodes or ``MAX_YAML_CHARS`` characters once aliases are expanded, an integer of more than
            ``MAX_INT_DIGITS`` digits, or a mapping with the same key twice.
    """
    try:
        _check_depth(text, source)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            return None
        _check_size(node, source)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["(no message)"])[0]
        raise UserError(f"{source}{where}: not valid YAML: {problem}") from None
    except (RecursionError, ValueError) as exc:  # a last line of defence behind the checks above
        raise UserError(f"{source}: cannot read this YAML: {type(exc).__name__}: {str(exc)[:120]}") from None


def _check_depth(text: str, source: str) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                mark = event.start_mark
                raise UserError(f"{source}:{mark.line + 1}:{mark.column + 1}: YAML nested deeper than "
                                f"{MAX_YAML_DEPTH} levels; a scenario needs far fewer")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _check_size(root: yaml.Node, source: str) -> None:
    """Count nodes and characters as if every alias were copied; each distinct node is visited once."""
    size: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes, characters) of its expanded tree
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in size:
            continue
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _INT_TAG and sum(c.isdigit() for c in node.value) > MAX_INT_DIGITS:
                mark = node.start_mark
                raise UserError(f"{source}:{mark.line + 1}:{mark.column + 1}: an integer of "
                                f"{sum(c.isdigit() for c in node.value)} digits; at most {MAX_INT_DIGITS} are read")
            size[id(node)] = (1, len(node.value))
            continue
        if isinstance(node, yaml.MappingNode) and not children_done:
            _check_unique_keys(node, source)
        children = _children(node)
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in size)
            continue
        total = 1 + sum(size[id(child)][0] for child in children)
        chars = sum(size[id(child)][1] for child in children)
        mark = node.start_mark
        if total > MAX_YAML_NODES:
            raise UserError(f"{source}:{mark.line + 1}:{mark.column + 1}: YAML expands to more than "
                            f"{MAX_YAML_NODES:,} values (aliases repeated inside aliases?); refused")
        if chars > MAX_YAML_CHARS:
            raise UserError(f"{source}:{mark.line + 1}:{mark.column + 1}: YAML expands to more than "
                            f"{MAX_YAML_CHARS:,} characters of values (a long value repeated through aliases?); refused")
        size[id(node)] = (total, chars)


def _check_unique_keys(node: yaml.MappingNode, source: str) -> None:
    """Refuse a mapping that names a scalar key twice (``<<`` merge keys may repeat)."""
    seen: dict[tuple[str, str], yaml.Node] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
            continue
        first = seen.setdefault((key.tag, key.value), key)  # 1 and "1" are two keys
        if first is not key:
            mark, was = key.start_mark, first.start_mark
            raise UserError(f"{source}:{mark.line + 1}:{mark.column + 1}: duplicate key {key.value[:80]!r} "
                            f"(first at line {was.line + 1}); YAML would keep only the last value")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
