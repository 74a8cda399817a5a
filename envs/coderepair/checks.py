"""Cheap checks of a round's candidates in the sandbox, before the one online test execution.

Each candidate is loaded and **called** on the public inputs (the argument lists of the public
test calls, never their expected outputs) and on boundary inputs derived from them (each argument
emptied, reversed, zeroed or negated in turn, ``problems.edge_variants``); what comes back is
whether it loads, which calls raise or time out, the type and a digest of each return value. From
those the features compare candidates with each other (do their outputs agree?), which is what a
real verifier can see without the answer key. All candidates of a round run in one sandbox exec.

Nothing here reads an expected output or a hidden test: the checks are the agent's own probes,
shown to it in the observation; whether a candidate passes stays unknown until it is executed.
The mixture coder's candidates are the simulator's own programs and run as one trusted batch; a
model's candidates run one call per fresh interpreter, as every untrusted program does.
"""

from __future__ import annotations

import ast
import hashlib
from typing import Any, Sequence

from rsigym.sandbox import Sandbox

from .execution import Job
from .memo import ExecMemo, run_jobs_memo
from .problems import Problem, edge_variants

__all__ = ["probe_inputs", "run_checks", "run_checks_many", "CHECK_TIMEOUT_S"]

CHECK_TIMEOUT_S = 0.2  # an endless loop costs one alarm per probe call
_MAX_PUBLIC = 3
_MAX_BOUNDARY = 2


def _call_args(call: str) -> list[str] | None:
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    args = [ast.unparse(a) for a in node.args]
    try:
        for a in args:
            ast.literal_eval(a)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return args


def probe_inputs(problem: Problem) -> tuple[list[str], list[str]]:
    """(public call expressions, boundary call expressions) on which candidates are probed."""
    public = list(problem.public_calls)[:_MAX_PUBLIC]
    boundary: list[str] = []
    for call in public:
        args = _call_args(call)
        if args is None:
            continue
        for variant in edge_variants(args):
            expr = f"{problem.entry}({', '.join(variant)})"
            if expr not in public and expr not in boundary:
                boundary.append(expr)
    return public, boundary[:_MAX_BOUNDARY]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _summary(tests: list[dict[str, Any]], n_public: int, loads: bool) -> dict[str, Any]:
    public, boundary = tests[:n_public], tests[n_public:]
    def outcome(t: dict[str, Any]) -> str:
        if t.get("status") == "ok":
            return "ok"
        return "timeout" if t.get("status") == "timeout" else "raise"
    return {"loads": loads,
            "public": [outcome(t) for t in public],
            "types": [(t.get("repr") and _type_of(t["repr"])) if t.get("status") == "ok" else None for t in public],
            "outputs": [_digest(t["repr"]) if t.get("status") == "ok" else None for t in public],
            "boundary": [outcome(t) for t in boundary]}


def _type_of(text: str) -> str:
    try:
        return type(ast.literal_eval(text)).__name__
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return "other"


def run_checks(sandbox: Sandbox, problem: Problem, codes: Sequence[str], *, trusted: bool = False,
               memo: ExecMemo | None = None) -> list[dict[str, Any]]:
    """Per candidate: ``loads``, per public input ``ok | raise | timeout``, return ``types`` and
    output ``digests``, and per boundary input ``ok | raise | timeout``.

    ``trusted`` only for programs the simulator generated (the mixture coder's catalogue
    re-printed): one harness batch; otherwise each call runs in a fresh interpreter
    (``execution.run_jobs``). ``memo``: answer known (program, inputs) pairs from it (``memo``)."""
    return run_checks_many(sandbox, [(problem, codes)], trusted=trusted, memo=memo)[0]


def run_checks_many(sandbox: Sandbox, rounds: Sequence[tuple[Problem, Sequence[str]]], *, trusted: bool = False,
                    memo: ExecMemo | None = None) -> list[list[dict[str, Any]]]:
    """``run_checks`` for many rounds in one batch (the headroom replay's)."""
    jobs, layout = [], []
    for r, (problem, codes) in enumerate(rounds):
        public, boundary = probe_inputs(problem)
        layout.append(len(public))
        calls = public + boundary
        jobs += [Job(f"r{r}c{i}", code, problem.entry, calls, mode="eval", timeout_s=CHECK_TIMEOUT_S,
                     helpers=problem.helpers)
                 for i, code in enumerate(codes) if calls]
    results = run_jobs_memo(sandbox, jobs, memo, trusted=trusted)
    out = []
    for r, (problem, codes) in enumerate(rounds):
        if f"r{r}c0" not in results:  # no probe input: the checks see nothing
            out.append([{"loads": True, "public": [], "types": [], "outputs": [], "boundary": []} for _ in codes])
            continue
        out.append([_summary(results[f"r{r}c{i}"].tests, layout[r], results[f"r{r}c{i}"].load_error is None)
                    for i in range(len(codes))])
    return out
