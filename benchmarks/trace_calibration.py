"""TRACE verdicts against constructed ground truth.

Each case builds ToolUse-like records whose truth is known by construction (which tasks drop,
whether the agent's actions and end state changed, what the fixed ruler says, how much identical
reruns vary), runs the verdict code on them and compares the label with the truth. The last line
is ``verdicts matching constructed truth: K/N``.

Run: ``python benchmarks/trace_calibration.py`` (``--datasets N`` per family, ``--only TEXT`` for
the families whose name contains TEXT, ``--results FILE`` to write the label counts as JSON, ``--power
FILE`` to print the power table of docs/families/tooluse.md from such a file; the page's rates come from
``benchmarks/results/trace_calibration_*.json``). The noisy-agent families (``trace_noisy``) are
the power table: ``--datasets 200 --only "noisy agent" --results
benchmarks/results/trace_calibration_noisy.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from rich.console import Console
from rich.table import Table

from rsigym.records import Trajectory

sys.path.insert(0, str(Path(__file__).resolve().parent))  # trace_families beside this script
from trace_families import (ATTRIBUTIONS, FAMILIES, HIDE, MISLEAD, PARAPHRASE, RENAME, DataSet, Family,  # noqa: E402
                            record)
from trace_noisy import NOISY_FAMILIES  # noqa: E402

ALL_FAMILIES = FAMILIES + NOISY_FAMILIES  # indices seed the data sets: new families go last

@dataclass
class Case:
    name: str
    truth: str
    records: list[Trajectory]
    treatment: str
    grader: str = "reward"
    regrade: str | None = None
    positive_control: bool = False
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _paired(tasks: int, reps: int, condition: dict[str, Any], outcome: Callable[[int, int], tuple[Any, ...]]
            ) -> list[Trajectory]:
    """Records of ``tasks`` x ``reps``; ``outcome(task, rep)`` gives (baseline grades, treatment
    grades, baseline path, treatment path, treatment db[, baseline db])."""
    records = []
    for i in range(tasks):
        for rep in range(reps):
            base, treat, base_path, treat_path, db, *base_db = outcome(i, rep)
            records.append(record(f"t{i:03d}", None, base, rep=rep, path=base_path, db=(base_db or ["db-gold"])[0]))
            records.append(record(f"t{i:03d}", condition, treat, rep=rep, path=treat_path, db=db))
    return records


def _am(old: float | None, mapped: float | None) -> dict[str, float | None]:
    return {"action_match": old, "action_match_mapped": mapped}


def cases() -> list[Case]:
    """The constructed cases, each with its true label."""
    out = []
    # Grader artifact: 12 of 20 tasks use a renamed tool; the name-bound ruler fails them, the
    # agent does exactly the same, the mapped ruler sees no change.
    out.append(Case("pure grader artifact", "measurement artifact", _paired(
        20, 2, RENAME, lambda i, r: (_am(1, 1), _am(0 if i < 12 else 1, 1), 0, 0, "db-gold")),
        "rename_tools", "action_match", "action_match_mapped"))
    # Behaviour change: 10 of 20 tasks stop early (other actions, other end state).
    out.append(Case("pure behaviour change", "behaviour change", _paired(
        20, 2, HIDE, lambda i, r: ({"reward": 1, "reward_v2": 1},
                                   {"reward": 0 if i < 10 else 1, "reward_v2": 0 if i < 10 else 1},
                                   0, 1 if i < 10 else 0, "db-x" if i < 10 else "db-gold")),
        "hide_cancel", "reward", "reward_v2"))
    # Mixed: 8 of 25 tasks fail only under the name-bound ruler, 8 more really fail.
    out.append(Case("mixed (grader -0.32, behaviour -0.32)", "mixed", _paired(
        25, 2, RENAME, lambda i, r: (_am(1, 1), _am(0 if i < 16 else 1, 0 if 8 <= i < 16 else 1),
                                     0, 1 if 8 <= i < 16 else 0, "db-x" if 8 <= i < 16 else "db-gold")),
        "rename_tools", "action_match", "action_match_mapped"))
    # A 0.02 drop on 300 tasks (6 tasks fail, behaviour changed there): within the margin.
    out.append(Case("no effect: 300 tasks, 0.02 drop", "no effect", _paired(
        300, 1, PARAPHRASE, lambda i, r: ({"reward": 1}, {"reward": 0 if i < 6 else 1}, 0,
                                          1 if i < 6 else 0, "db-x" if i < 6 else "db-gold")),
        "paraphrase_descriptions"))
    # A real 0.15 drop on 200 tasks: 30 tasks fail with other actions.
    # (two identical reruns per arm: without a rerun reference or a regrade it is not attributed)
    out.append(Case("real 0.15 drop, 200 tasks x 2", "behaviour change", _paired(
        200, 2, HIDE, lambda i, r: ({"reward": 1}, {"reward": 0 if i < 30 else 1}, 0,
                                    1 if i < 30 else 0, "db-x" if i < 30 else "db-gold")),
        "hide_cancel"))
    out.append(Case("1 pair", "insufficient data", _paired(
        1, 1, RENAME, lambda i, r: (_am(1, 1), _am(0, 1), 0, 0, "db-gold")),
        "rename_tools", "action_match", "action_match_mapped"))
    out.append(Case("3 identical pairs", "insufficient data", _paired(
        3, 1, PARAPHRASE, lambda i, r: ({"reward": 1}, {"reward": 1}, 0, 0, "db-gold")),
        "paraphrase_descriptions"))
    # 12 tasks x 3 reruns, 3 tasks drop in every rerun (other actions): 9 discordant pairs look
    # like p = 0.004, but only 3 of 12 tasks moved (sign test p = 0.25).
    out.append(Case("reruns that inflate n (12 tasks x 3)", "indistinguishable from noise", _paired(
        12, 3, HIDE, lambda i, r: ({"reward": 1}, {"reward": 0 if i < 3 else 1}, 0, 1 if i < 3 else 0,
                                   "db-x" if i < 3 else "db-gold")), "hide_cancel"))
    # The same grader flips 3 of 12 tasks while the agent does exactly the same everywhere: a
    # certain artifact, whatever the size.
    out.append(Case("grader flips 3 of 12 tasks, identical behaviour", "measurement artifact", _paired(
        12, 3, RENAME, lambda i, r: (_am(1, 1), _am(0 if i < 3 else 1, 1), 0, 0, "db-gold")),
        "rename_tools", "action_match", "action_match_mapped"))
    # A real drop on 8 of 50 tasks, and the grader errors on exactly those failing records.
    out.append(Case("missing grades hide a drop", "withheld", _paired(
        50, 1, HIDE, lambda i, r: ({"reward": 1}, {"reward": None if i < 8 else 1}, 0,
                                   1 if i < 8 else 0, "db-x" if i < 8 else "db-gold")),
        "hide_cancel"))
    # 10 of 40 treatment records broke (infra error): the 30 left look equivalent.
    infra = _paired(40, 1, PARAPHRASE, lambda i, r: ({"reward": 1}, {"reward": 1}, 0, 0, "db-gold"))
    for rec in infra:
        if rec.env.condition and int(str(rec.env.task_id)[1:]) < 10:
            rec.termination, rec.grades = "infra_error", []
    out.append(Case("infra errors hide 10 of 40 tasks", "withheld", infra, "paraphrase_descriptions"))
    out += _llm_like_cases()
    # The regrade that does not close the drop: -0.08 with a CI reaching -0.2, while 60% of the
    # tasks behave differently (identical reruns agree). The grader part (-0.40) is clear; the
    # behaviour part's score is not shown on 25 tasks, but the behaviour itself changes beyond
    # the baseline's reruns in 15 of 25 tasks: both parts are established, mixed (true by
    # construction: 2 tasks really fail, 12 only under the name-bound ruler).
    out.append(Case("regrade -0.08, 60% behave differently", "mixed", _paired(
        25, 2, RENAME, lambda i, r: (_am(1, 1), _am(0 if i < 12 else 1, 0 if 10 <= i < 12 else 1),
                                     0, 1 if i >= 10 else 0, "db-x" if 10 <= i < 12 else "db-gold")),
        "rename_tools", "action_match", "action_match_mapped"))
    out.append(Case("positive control, 18 of 25 tasks", "detected", _paired(
        25, 1, MISLEAD, lambda i, r: ({"reward": 1}, {"reward": 0 if i < 18 else 1}, 0,
                                      1 if i < 18 else 0, "db-x" if i < 18 else "db-gold")),
        "misleading_names", positive_control=True))
    out.append(Case("positive control on 4 tasks", "insufficient data", _paired(
        4, 1, MISLEAD, lambda i, r: ({"reward": 1}, {"reward": 0}, 0, 1, "db-x")),
        "misleading_names", positive_control=True))
    return out


def _llm_like_cases() -> list[Case]:
    """An agent whose path and outcome vary between identical reruns (pass probability per
    task, one of three paths at random), 400 tasks x 3 reruns: a 0.1 margin is then 4 standard
    errors from 0."""
    rng = random.Random(16)
    tasks = 400
    p_pass = [rng.uniform(0.3, 0.9) for _ in range(tasks)]
    draws: dict[tuple[str, int, int], tuple[int, int]] = {}

    def draw(arm: str, i: int, r: int, shift: float, paths: int) -> tuple[int, int]:
        key = (arm, i, r)
        if key not in draws:
            draws[key] = (int(rng.random() < p_pass[i] - shift), rng.randrange(paths) + 1)
        return draws[key]

    def plain(i: int, r: int):  # the treatment draws from the baseline's distribution
        (x, a), (y, b) = draw("base", i, r, 0, 3), draw("plain", i, r, 0, 3)
        return {"reward": x}, {"reward": y}, a, b, "db-gold" if y else "db-x", "db-gold" if x else "db-x"

    def worse(i: int, r: int):  # 0.3 less likely to pass, and more paths to take
        (x, a), (y, b) = draw("base", i, r, 0, 3), draw("worse", i, r, 0.3, 6)
        return ({"reward": x, "reward_v2": x}, {"reward": y, "reward_v2": y}, a, b,
                "db-gold" if y else "db-x", "db-gold" if x else "db-x")

    def renamed(i: int, r: int):  # half the tasks use a renamed tool: the name-bound ruler fails them
        (x, a), (y, b) = draw("base", i, r, 0, 3), draw("renamed", i, r, 0, 3)
        return _am(x, x), _am(0 if i % 2 else y, y), a, b, "db-gold" if y else "db-x", "db-gold" if x else "db-x"

    return [Case("LLM-like noise, no change", "no effect", _paired(tasks, 3, PARAPHRASE, plain),
                 "paraphrase_descriptions"),
            Case("LLM-like noise, real -0.3", "behaviour change", _paired(tasks, 3, HIDE, worse),
                 "hide_cancel", "reward", "reward_v2"),
            Case("LLM-like noise, grader artifact", "measurement artifact", _paired(tasks, 3, RENAME, renamed),
                 "rename_tools", "action_match", "action_match_mapped")]


def judge(case: Case | DataSet) -> str:
    """The verdict of the TRACE code on a case: one agent, rerun noise from the records of both arms."""
    from rsigym.graders.trace import pair_records, rerun_behaviour
    from rsigym.graders.trace_verdict import attribute

    treatment = case.treatment
    pairs = pair_records(case.records, "identity", treatment)
    return attribute(pairs, case.grader, agent="agent", regrade_grader=case.regrade,
                     noise=rerun_behaviour(case.records, "identity", "agent"),
                     treatment_noise=rerun_behaviour(case.records, treatment, "agent"),
                     positive_control=getattr(case, "positive_control", False)).verdict.label


def simulate(family: Family, datasets: int, seed: int = 0) -> Counter[str]:
    """Labels of ``datasets`` data sets drawn from ``family`` (seeded per family and data set)."""
    labels: Counter[str] = Counter()
    for k in range(datasets):
        rng = np.random.default_rng([seed, ALL_FAMILIES.index(family), k])
        labels[judge(family.draw(rng))] += 1
    return labels


def family_table(datasets: int, seed: int = 0, console: Console | None = None,
                 families: list[Family] | None = None) -> tuple[int, int]:
    """Print the label rates of every family (or of ``families``); return (families on target,
    families with a target)."""
    chosen = FAMILIES if families is None else families
    return print_families({f.name: simulate(f, datasets, seed) for f in chosen}, datasets, console)


def print_families(counts: dict[str, Counter[str]], datasets: int, console: Console | None = None) -> tuple[int, int]:
    """Print the label rates of the families in ``counts`` (family name -> label counts over
    ``datasets`` data sets); return (families on target, families with a target)."""
    console = console or Console(width=160)
    table = Table(title=f"TRACE verdicts on simulated data sets ({datasets} per family)")
    for column in ("family", "truth", "label rates", "right", "target", "met"):
        table.add_column(column)
    met = targeted = 0
    for family in (f for f in ALL_FAMILIES if f.name in counts):
        labels = counts[family.name]
        right = sum(labels[g] for g in family.good) / datasets
        ok = right >= family.target
        if family.target > 0:
            targeted += 1
            met += ok
        rates = ", ".join(f"{label} {n / datasets:.0%}" for label, n in labels.most_common())
        table.add_row(family.name, family.truth, rates, f"{right:.0%}",
                      f">= {family.target:.0%}" + (f" ({family.note})" if family.note else "") if family.target
                      else family.note, ("yes" if ok else "NO") if family.target else "-")
    console.print(table)
    console.print(f"simulated families on target: {met}/{targeted}", highlight=False)
    return met, targeted


POWER_BEGIN = "<!-- trace-power:begin (rendered from benchmarks/results/trace_calibration_noisy.json) -->"
POWER_END = "<!-- trace-power:end -->"


def _exact(k: int, n: int) -> str:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"[{ci.low:.1%}, {ci.high:.1%}]"


def power_table(results: dict[str, Any]) -> str:
    """The power table (docs/families/tooluse.md) of the noisy-agent families, rendered from a results file written
    by ``--only "noisy agent" --results FILE``: per family the verdicts that count, k of n data
    sets, the rate with its exact (Clopper-Pearson) 95% CI, the target and whether the rate meets it.
    The data set is the unit: each is a fresh 50-task battery."""
    n, counts = results["datasets_per_family"], results["families"]
    lines = [POWER_BEGIN, "",
             "| family (noisy agent, 50 tasks) | truth | counted | k / n | rate | 95% CI (exact) | target | met |",
             "|---|---|---|---:|---:|---|---|---|"]
    for family in (f for f in NOISY_FAMILIES if f.name in counts):
        labels = counts[family.name]
        rows: list[tuple[str, int, str, bool | None]] = []
        if family.truth == "no effect":
            k = sum(labels.get(label, 0) for label in ATTRIBUTIONS)
            rows.append(("an attribution (false)", k, "<= 5%", k / n <= 0.05))
        elif len(family.good) > 1:  # the truth or no attribution: count the wrong attributions
            k = sum(labels.get(label, 0) for label in ATTRIBUTIONS if label != family.truth)
            rows.append(("another attribution (false)", k, "<= 5%", k / n <= 0.05))
            rows.append((family.truth, labels.get(family.truth, 0), "reported", None))
        else:
            k = sum(labels.get(label, 0) for label in family.good)
            target = f">= {family.target:.0%}" if family.target else "reported"
            rows.append((" or ".join(family.good), k, target, k / n >= family.target if family.target else None))
        if family.truth == "mixed":  # the rule's cost
            rows.append(("measurement artifact (the cost)", labels.get("measurement artifact", 0), "reported", None))
        for counted, k, target, met in rows:
            lines.append(f"| {family.name.removeprefix('noisy agent, ')} | {family.truth} | {counted} | {k} / {n} "
                         f"| {k / n:.1%} | {_exact(k, n)} | {target} | {'-' if met is None else 'yes' if met else 'NO'} |")
    return "\n".join(lines + ["", POWER_END])


def readme_power_block(readme: str) -> str:
    """The power table as the docs page holds it (between the markers, markers included)."""
    start, end = readme.index(POWER_BEGIN), readme.index(POWER_END) + len(POWER_END)
    return readme[start:end]


def main(argv: list[str] | None = None) -> tuple[int, int]:
    """Print the simulated families' label rates, the constructed cases' table and the K/N line;
    return (K, N) of the constructed cases."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=50, help="simulated data sets per family (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="only the simulated families whose name contains TEXT (repeatable)")
    parser.add_argument("--results", type=Path, help="write the label counts and the K/N line to this JSON file")
    parser.add_argument("--power", type=Path, metavar="RESULTS",
                        help="print the power table of docs/families/tooluse.md rendered from this results file, and stop")
    args = parser.parse_args(argv)
    if args.power:
        print(power_table(json.loads(args.power.read_text())))
        return 0, 0
    if args.datasets < 0:
        parser.error(f"--datasets must be >= 0, got {args.datasets}")
    chosen = [f for f in ALL_FAMILIES if not args.only or any(t in f.name for t in args.only)]
    if not chosen:
        parser.error(f"no simulated family's name contains any of {args.only}")
    console = Console(width=160)
    counts: dict[str, Counter[str]] = {}
    started = time.process_time()
    if args.datasets > 0:
        counts = {f.name: simulate(f, args.datasets, args.seed) for f in chosen}
        print_families(counts, args.datasets, console)
    family_seconds = time.process_time() - started
    table = Table(title="TRACE verdicts on constructed records")
    for column in ("case", "truth", "verdict", "match"):
        table.add_column(column)
    matched = 0
    all_cases = cases()
    for case in all_cases:
        label = judge(case)
        ok = label == case.truth
        matched += ok
        table.add_row(case.name, case.truth, label, "yes" if ok else "NO")
    console.print(table)
    console.print(f"verdicts matching constructed truth: {matched}/{len(all_cases)}", highlight=False)
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps({
            "datasets_per_family": args.datasets, "seed": args.seed, "family_cpu_seconds": round(family_seconds, 1),
            "families": {name: dict(sorted(c.items())) for name, c in counts.items()},
            "constructed": {"matched": matched, "total": len(all_cases)}}, indent=1) + "\n")
        console.print(f"results: {args.results}", highlight=False)
    return matched, len(all_cases)


if __name__ == "__main__":
    main()
