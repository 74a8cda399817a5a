"""Fuzz every registered env id with hostile and valid-shaped actions: exceptions must be 0.

For each env id (and each of its test variants: ToolUse in retail and airline), ``--actions``
hypothesis-drawn actions (default 2,000) are stepped through one env, which is reset whenever an
episode ends: valid-shaped actions from the env's ``action_schema``, typed ones from its
``action_space``, those with one part broken, and hostile values (unhashable parts, null and
unknown kinds, missing keys, nesting 1,000 deep, strings of megabytes, integers of thousands of
digits, NaN). After every step the observation must lie in its space and ``info`` and
``snapshot()`` must serialise as JSON; anything raised counts as an exception. The envs run in
their small test settings (``tests/security/env_fuzz_support.py``: local sandbox, tiny pools, an
analytic trial runner for HyperparamSearch). The reference column is the same count of
``env.step`` calls with the env's own example action, timed in the same run, so the ratio shows
what hostile input costs against ordinary steps (median of 3 runs of 200 steps). "seconds" is the
wall time of the fuzz, drawing the actions included; "ms/step fuzzed" counts only the time inside
``env.step`` and ``env.reset`` (a step that checks a 2 MB string is dearer than an ordinary one;
one that refuses an action before running a trial or a sandbox is cheaper).

Run from the repository root: ``python benchmarks/env_fuzz.py [--actions 2000] [--only ToolUse]``.
Exit status 1 when any env raised.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared strategies live in tests/

from tests.security.env_fuzz_support import Episodes, env_variants, fuzz_env, make_env  # noqa: E402


def example_steps_s(env_id: str, label: str, steps: int) -> float:
    """Seconds for ``steps`` steps of the env's first example action (reset when an episode ends)."""
    env = make_env(env_id, label)
    example = env.unwrapped.example_actions[0]  # type: ignore[attr-defined]
    episodes = Episodes(env)
    started = time.perf_counter()
    try:
        for _ in range(steps):
            episodes.step(example)
    finally:
        env.close()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=2000, help="actions per env id (default 2000)")
    parser.add_argument("--only", default="", help="only env ids containing this text")
    args = parser.parse_args(argv)

    table = Table(title=f"Env fuzz: {args.actions} actions per env id")
    for column in ("env id", "variant", "actions", "exceptions", "error observations", "resets",
                   "seconds", "ms/step fuzzed", "ms/step example", "ratio"):
        table.add_column(column, justify="left" if column in ("env id", "variant") else "right")
    failures = []
    for env_id, label in env_variants():
        if args.only not in env_id:
            continue
        result = fuzz_env(env_id, label, args.actions)
        reference_s = statistics.median(example_steps_s(env_id, label, min(args.actions, 200)) for _ in range(3))
        per_action = 1000 * result.step_seconds / max(result.actions, 1)
        per_example = 1000 * reference_s / min(args.actions, 200)
        table.add_row(env_id, label, str(result.actions), str(result.exceptions), str(result.error_observations),
                      str(result.resets), f"{result.seconds:.1f}", f"{per_action:.2f}", f"{per_example:.2f}",
                      f"{per_action / per_example:.2f}" if per_example else "-")
        failures += [f"{env_id} {label}: {f}" for f in result.failures]
    Console(width=200).print(table)
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
