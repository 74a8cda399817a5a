"""The results file and README table of a finished ``coderepair_paper`` run, the paper's numbers beside ours.

Reads the run folder's ``records.jsonl`` and computes what ``coderepair_compare`` reports, with the
same functions (``envs/coderepair/analyses.py``): per agent the ``hidden_tests`` pass over (seed,
problem) cells after the warm-up with a two-way bootstrap 95% CI (seeds and problems resampled
together, ``rsigym.report.crossed``); per agent its paired difference against the static verifier on the
same cells with CI, p, Holm p (the non-control agents are one family) and MDD; the online test calls
per problem; the records counted as infra errors or missing a grade. **The unit is the (seed stream x
problem) cell.** Wall time: first record started to last record finished.

Writes ``benchmarks/results/coderepair_paper.json`` (or ``--out``) and prints the markdown table.

Run: ``python benchmarks/coderepair_paper_table.py RUN_DIR [--out PATH]``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from rsigym.report.crossed import crossed_bootstrap
from rsigym.envs.coderepair.analyses import (_calls, _warmup_of, holm_adjusted, paired_rows, per_problem_outcomes,
                                             warmup_cells)
from rsigym.records.jsonl import read_records
from rsigym.records import Trajectory

OUT = Path(__file__).resolve().parent / "results" / "coderepair_paper.json"
# RSI-Anything's HumanEval code repair numbers (hidden pass; the fixed model's gain with its 95% CI)
PAPER = {"static_verifier": {"pass": 0.263},
         "fixed": {"pass": 0.292, "delta": 0.0283, "ci": [0.0017, 0.0550]},
         "adaptive": {"pass": 0.312, "delta_vs_fixed": 0.02}}


def _finite(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)


def _wall_s(records: Sequence[Trajectory]) -> float | None:
    starts = [datetime.fromisoformat(r.started_at) for r in records if r.started_at]
    ends = [datetime.fromisoformat(r.finished_at) for r in records if r.finished_at]
    return (max(ends) - min(starts)).total_seconds() if starts and ends else None


def results(records: Sequence[Trajectory], *, baseline: str = "static_verifier", control: str = "random",
            grader: str = "hidden_tests") -> dict[str, Any]:
    """The results file's content (see the module docstring)."""
    outcomes, missing = per_problem_outcomes(records, grader)
    if baseline not in outcomes:
        raise ValueError(f"no {baseline} record graded by {grader}")
    warmup = _warmup_of(records)
    excluded = warmup_cells(records, warmup)
    agents = sorted({r.agent.id for r in records})
    rows = {agent: paired_rows(outcomes, agent, baseline, excluded) for agent in agents if agent != baseline}
    holm = holm_adjusted({agent: row["p"] for agent, row in rows.items() if agent != control})
    calls = _calls(records)
    out: dict[str, Any] = {"agents": {}}
    for agent in agents:
        cells = {k: v for k, v in outcomes.get(agent, {}).items() if k not in excluded}
        infra = sum(r.agent.id == agent and r.termination == "infra_error" for r in records)
        entry: dict[str, Any] = {"records": sum(r.agent.id == agent for r in records), "infra_errors": infra,
                                 # per_problem_outcomes counts an infra error as missing too: told apart here
                                 "missing_grades": int(missing.get(agent, 0)) - infra,
                                 "online_test_calls_per_problem": _finite(calls.get(agent, float("nan"))),
                                 "cells": len(cells)}
        if cells:
            rate = crossed_bootstrap(cells)
            entry.update(hidden_pass=_finite(rate.estimate), hidden_pass_ci=[_finite(x) for x in rate.ci])
        if agent in rows:
            row = rows[agent]
            entry["vs_" + baseline] = {"delta": _finite(row["delta"]), "ci": [_finite(x) for x in row["ci"]],
                                       "p": _finite(row["p"]), "p_holm": _finite(holm.get(agent, float("nan"))),
                                       "mdd": _finite(row["mdd"]), "cells": row["n_pairs"]}
        out["agents"][agent] = entry
    seeds = sorted({k[0] for cells in outcomes.values() for k in cells})
    problems = sorted({k[1] for cells in outcomes.values() for k in cells})
    out.update(unit="(seed stream x problem) cell; seeds and problems resampled together (two-way bootstrap, 95% CI)",
               grader=grader, baseline=baseline, control=control, seeds=len(seeds), problems=len(problems),
               warmup_problems=warmup, cells_excluded_as_warmup=len(excluded), wall_s=_wall_s(records),
               records=len(records), paper=PAPER)
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, spec: str = ".3g") -> str:
    return "-" if x is None else format(x, spec)


def _pp(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.2f} pp"


def table(res: dict[str, Any]) -> str:
    """The README's markdown table: ours beside the paper's."""
    base = res["baseline"]
    lines = [f"{res['seeds']} seeds x {res['problems']} problems, unit: {res['unit']}; the first "
             f"{res['warmup_problems']} problems of each stream excluded.", "",
             "| agent | hidden pass (95% CI) | paper | vs static (95% CI) | paper | Holm p | MDD | online calls / problem "
             "| infra errors / missing grades |",
             "|---|---|---:|---|---|---:|---:|---:|---:|"]
    paper_delta = {"fixed": "+2.83 pp [0.17, 5.50]", "adaptive": "about +4.9 pp (+2 pp over fixed)"}
    order = sorted(res["agents"], key=lambda a: (a != base, a == res["control"], a))  # baseline first, control last
    for agent in order:
        entry = res["agents"][agent]
        ci = entry.get("hidden_pass_ci") or [None, None]
        vs = entry.get("vs_" + base) or {}
        vci = vs.get("ci") or [None, None]
        paper = PAPER.get(agent, {}).get("pass")
        lines.append(
            f"| {agent} | {_pct(entry.get('hidden_pass'))} [{_pct(ci[0])}, {_pct(ci[1])}] | {_pct(paper) if paper else ''} "
            f"| {_pp(vs.get('delta')) + f' [{_pp(vci[0])}, {_pp(vci[1])}]' if vs else 'baseline'} "
            f"| {paper_delta.get(agent, '')} | {_num(vs.get('p_holm'))} "
            f"| {_num(100 * vs['mdd'], '.2f') + ' pp' if vs.get('mdd') is not None else '-'} | {_num(entry['online_test_calls_per_problem'], '.2f')} "
            f"| {entry['infra_errors']} / {entry['missing_grades']} |")
    wall = res.get("wall_s")
    lines += ["", f"Wall time: {wall / 3600:.2f} h ({res['records']} records)." if wall else "Wall time: not recorded."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    path = args.run_dir / "records.jsonl"
    if not path.is_file():
        print(f"coderepair_paper_table: no records.jsonl in {args.run_dir}", file=sys.stderr)
        return 2
    try:
        res = results(read_records(path).records)
    except ValueError as exc:
        print(f"coderepair_paper_table: {exc}", file=sys.stderr)
        return 2
    res["run_dir"] = str(args.run_dir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2) + "\n")
    print(table(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
