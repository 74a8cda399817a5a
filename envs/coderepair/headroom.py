"""The headroom table: how much better than the static verifier could a world model pick at all?

On the first round of every (seed, problem) cell all agents see the same 4 candidates (same seed,
problem, round and empty feedback), and the env's final state holds every candidate's features and
whether it passes the public tests (the simulator's label, for graders only). So on those rounds
any scorer's greedy pick can be scored, not just the executed one:

* ``static``: the hand-set verifier's greedy pick;
* ``oracle:<class>``: a model of that class (logistic, torch MLP, boosted trees) fitted **in-sample**
  on every labelled candidate of the phase and picking greedily: an upper bound for any world model
  of that class on these features (it has seen the answers);
* each agent's **actual** first-round pick (fixed, adaptive, with their audits): what they reach;
* ``random``: the mean label of the round (a uniform pick).

Rates are the share of cells whose pick passes the public tests, before and after the coder's
drift; each is compared with ``static`` on the same cells by the two-way (seed x problem)
bootstrap (``rsigym.report.crossed``) with its MDD. Warm-up cells are kept: the table is about the
simulator and features, not about learning speed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rsigym.report.crossed import crossed_bootstrap
from rsigym.records import Trajectory
from rsigym.report import ReportSection, md_text, register_analysis

from .predictors import PREDICTOR_KINDS, StaticPredictor, make_predictor

__all__ = ["FirstRound", "first_rounds", "headroom_rows", "coderepair_headroom"]


@dataclass(frozen=True)
class FirstRound:
    seed: int
    problem_id: str
    drifted: bool
    features: np.ndarray          # (C, F)
    labels: np.ndarray            # (C,) 1.0: passes the public tests
    picks: dict[str, int]         # agent id -> its actual first-round pick


def _state(record: Trajectory) -> dict[str, Any] | None:
    state = record.final.state if record.final else None
    return state if isinstance(state, dict) and state.get("family") == "code-repair" else None


def first_rounds(records: Sequence[Trajectory]) -> list[FirstRound]:
    """Every (seed, problem) cell's first round with labelled candidates, and each agent's pick there."""
    cells: dict[tuple[int, str], dict[str, Any]] = {}
    picks: dict[tuple[int, str], dict[str, int]] = defaultdict(dict)
    for record in sorted(records, key=lambda r: (r.seed, r.agent.id)):
        for row in (_state(record) or {}).get("problems", []):
            rounds = row.get("rounds") or []
            if not rounds or "features" not in rounds[0] or None in (rounds[0].get("labels") or [None]):
                continue
            key = (record.seed, row["problem_id"])
            labels = [float(x) for x in rounds[0]["labels"]]
            cell = cells.setdefault(key, {"features": np.asarray(rounds[0]["features"], dtype=float),
                                          "labels": labels, "drifted": bool(row.get("drifted"))})
            if cell["labels"] == labels:  # the same candidate set (it always is for the mixture coder)
                picks[key][record.agent.id] = int(rounds[0]["chosen"])
    return [FirstRound(seed, pid, c["drifted"], c["features"], np.asarray(c["labels"]), picks[(seed, pid)])
            for (seed, pid), c in sorted(cells.items(), key=lambda kv: (repr(kv[0][0]), kv[0][1]))]


def _oracle_picks(rounds: list[FirstRound], kind: str) -> list[int]:
    X = np.concatenate([r.features for r in rounds])                  # (N*C, F)
    y = np.concatenate([r.labels for r in rounds])                    # (N*C,)
    model = make_predictor(kind, seed=0).fit(X, y, np.ones_like(y))
    return [int(np.argmax(model.predict(r.features))) for r in rounds]


def headroom_rows(rounds: list[FirstRound], agents: Sequence[str], baseline: str = "static",
                  oracles: Sequence[str] = PREDICTOR_KINDS) -> dict[str, list[dict[str, Any]]]:
    """Per phase (``before drift``, ``after drift``): one row per method with its rate, its delta
    against ``static`` on the same cells, the two-way CI and MDD."""
    out: dict[str, list[dict[str, Any]]] = {}
    static = StaticPredictor()
    for phase, drifted in (("before drift", False), ("after drift", True)):
        part = [r for r in rounds if r.drifted == drifted]
        if len({r.problem_id for r in part}) < 2:
            continue
        values: dict[str, dict[tuple[int, str], float]] = {
            "static": {(r.seed, r.problem_id): float(r.labels[int(np.argmax(static.predict(r.features)))]) for r in part}}
        for kind in oracles:
            chosen = _oracle_picks(part, kind)
            values[f"oracle:{kind}"] = {(r.seed, r.problem_id): float(r.labels[c]) for r, c in zip(part, chosen)}
        for agent in agents:
            values[agent] = {(r.seed, r.problem_id): float(r.labels[r.picks[agent]]) for r in part if agent in r.picks}
        values["random"] = {(r.seed, r.problem_id): float(np.mean(r.labels)) for r in part}
        rows = []
        for name, cells in values.items():
            shared = {k: v - values["static"][k] for k, v in cells.items() if k in values["static"]}
            row: dict[str, Any] = {"method": name, "rate": float(np.mean(list(cells.values()))), "cells": len(cells)}
            if name != "static" and len(shared) > 1:
                result = crossed_bootstrap(shared)
                row.update(delta=result.estimate, ci=result.ci, mdd=result.mdd)
            rows.append(row)
        out[phase] = rows
    return out


@register_analysis("coderepair_headroom")
def coderepair_headroom(records: Sequence[Trajectory], out_dir: Path, *, baseline: str = "static_verifier",
                        control: str = "random") -> ReportSection:
    """The headroom table (see the module docstring), printed before any comparison."""
    rounds = first_rounds(records)
    agents = sorted({a for r in rounds for a in r.picks} - {baseline, control})
    table = headroom_rows(rounds, agents)
    if not table:
        return ReportSection("Code repair: headroom", "No first rounds with labelled candidates.", "insufficient data")
    lines = ["First round of each (seed, problem) cell (all agents see the same 4 candidates): share of cells whose "
             "pick passes the public tests. `static`: the hand-set verifier's greedy pick; `oracle:<class>`: that "
             "model class fitted in-sample on every labelled candidate of the phase (an upper bound for the "
             "class); agents: their actual pick (audits included); `random`: a uniform pick. Deltas against "
             "`static` on the same cells, two-way (seed x problem) bootstrap 95% CI and MDD.", ""]
    best: dict[str, tuple[str, float, tuple[float, float]]] = {}
    for phase, rows in table.items():
        lines += [f"**{phase}**", "", "| method | cells | public-pass pick rate | delta vs static | 95% CI | MDD |",
                  "|---|---:|---:|---:|---|---:|"]
        for row in rows:
            if "delta" in row:
                low, high = row["ci"]
                lines.append(f"| {md_text(row['method'])} | {row['cells']} | {row['rate']:.3f} | {row['delta']:+.3f} "
                             f"| [{low:+.3f}, {high:+.3f}] | {row['mdd']:.3f} |")
            else:
                lines.append(f"| {md_text(row['method'])} | {row['cells']} | {row['rate']:.3f} | | | |")
            if row["method"].startswith("oracle:") and "delta" in row and row["delta"] > best.get(phase, ("", -1.0, (0, 0)))[1]:
                best[phase] = (row["method"], row["delta"], row["ci"])
        lines.append("")
    parts = []
    for phase, rows in table.items():
        by = {row["method"]: row for row in rows}
        text = f"{phase}: " + (f"best in-sample {md_text(best[phase][0])} {best[phase][1]:+.3f} over static "
                               f"[{best[phase][2][0]:+.3f}, {best[phase][2][1]:+.3f}]" if phase in best else "no oracle")
        text += "".join(f", {md_text(a)} {by[a]['delta']:+.3f}" for a in agents if a in by and "delta" in by[a])
        if "random" in by and "delta" in by["random"]:
            text += f", random {by['random']['delta']:+.3f}"
        parts.append(text)
    return ReportSection("Code repair: headroom", "\n".join(lines), "; ".join(parts))
