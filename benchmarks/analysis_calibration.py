"""Calibration of the research-decision analyses (HPO, data selection, EvoAlloc, forecasting).

Every analysis that issues a verdict must be able to fail. Each family contributes cases in
``benchmarks/calibration_cases/<family>.py``: a module with ``CASES``, a list of callables that
each run one analysis on a broken, blind or working agent (constructed records or real runs) and
return a :class:`Case`. This script runs them all, prints one table row per case
(analysis, agent, expected, observed, ok) and, as its last line,
``analyses calibrated: K/N``.

Run: ``python benchmarks/analysis_calibration.py [--only hpo,dataselect,evoalloc,workflow]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import traceback
from pathlib import Path

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # so calibration_cases/<family>.py can import calibration_cases.common

from calibration_cases.common import Case  # noqa: E402

FAMILIES = ("hpo", "dataselect", "evoalloc", "forecast", "coderepair", "workflow")


def load_cases(family: str) -> list:
    path = HERE / "calibration_cases" / f"{family}.py"
    if not path.exists():
        return []
    spec = importlib.util.spec_from_file_location(f"calibration_cases.{family}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(getattr(module, "CASES", []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(FAMILIES), help="comma-separated families to run")
    args = parser.parse_args(argv)
    table = Table(title="analysis calibration")
    for column in ("family", "analysis", "agent", "expected", "observed", "ok", "s"):
        table.add_column(column)
    cases: list[Case] = []
    for family in [f.strip() for f in args.only.split(",") if f.strip()]:
        for run_case in load_cases(family):
            started = time.perf_counter()
            try:
                case = run_case()
            except Exception as exc:  # a crashing case is a failed case, never a silent skip
                name = getattr(run_case, "__name__", repr(run_case))
                traceback.print_exc()
                case = Case(name, "?", "runs", f"crashed: {type(exc).__name__}: {exc}"[:120], False)
            case.family = family
            case.seconds = time.perf_counter() - started
            cases.append(case)
            table.add_row(family, case.analysis, case.agent, case.expected, case.observed,
                          "yes" if case.ok else "NO", f"{case.seconds:.1f}")
    Console(width=200).print(table)
    good = sum(case.ok for case in cases)
    print(f"analyses calibrated: {good}/{len(cases)}")
    return 0 if cases and good == len(cases) else 1


if __name__ == "__main__":
    raise SystemExit(main())
