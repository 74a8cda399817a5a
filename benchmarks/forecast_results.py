"""The README's experiment-forecasting statements, generated from the forecast_quick and forecast_paper runs.

    python benchmarks/forecast_results.py --run runs/forecast_quick --name forecast_quick --wall-s 900
    python benchmarks/forecast_results.py --write        # README block from benchmarks/results/forecast_*.json

``--run`` reads a run folder's records with the ``forecast`` analysis's own functions (target-
clustered verdicts against ``zero``, the within-agent experience effects, saturation and noisy
rounds) and writes ``benchmarks/results/NAME.json``; ``--write`` renders every results file present
into the block between the ``forecast-results`` markers of README.md. A test checks that the block
equals what the results files render, so the README's numbers cannot drift from the runs.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NAMES = ("forecast_quick", "forecast_paper")
BEGIN, END = "<!-- forecast-results:begin -->", "<!-- forecast-results:end -->"
AGENTS = ("knn", "ridge", "group_prior", "heuristic", "llm", "random", "oracle", "zero")


def summarise(run_dir: Path) -> dict[str, Any]:
    """Every number the README states about one run, computed from its records."""
    from rsigym.envs.forecast.analyses import advantage_over, episode_rows
    from rsigym.envs.forecast.experience_effect import experience_effects
    from rsigym.records.jsonl import read_records

    rows, unscored = episode_rows(read_records(run_dir / "records.jsonl").records)
    zero = [r for r in rows if r["agent"] == "zero"]
    noise = [n for r in zero for n in r["round_noise"]]
    versus = {}
    for condition in sorted({r["condition"] for r in rows}):
        for agent in sorted({r["agent"] for r in rows} - {"zero"}):
            mean, (low, high), pairs, targets = advantage_over(rows, agent, "zero", condition)
            if pairs:
                versus[f"{agent}|{condition}"] = {"mean": mean, "low": low, "high": high, "pairs": pairs,
                                                  "targets": targets}
    effects = {f"{e['agent']}|{e['condition']}|{e['reading']}": {
        k: e[k] for k in ("mean", "low", "high", "pairs", "targets", "mdd", "verdict", "per_target_raw")}
        for e in experience_effects(rows)}
    return {"episodes": len(rows), "unscored": unscored, "seeds": len({r["seed"] for r in rows}),
            "targets": len({r["task"] for r in rows}),
            "zero_found_pool_best": [sum(r["found_pool_best"] for r in zero), len(zero)],
            "noisy_rounds": [sum(noise), len(noise)], "versus_zero": versus, "experience": effects}


def _f(value: float | None) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:+.2f}"


def _ci(entry: dict[str, Any]) -> str:
    return f"{_f(entry['mean'])} [{_f(entry['low'])}, {_f(entry['high'])}]"


def render_one(name: str, result: dict[str, Any]) -> str:
    """The README paragraph and tables of one run."""
    found, episodes = result["zero_found_pool_best"]
    noisy, rounds = result["noisy_rounds"]
    head = (f"**`{name}`** ({result['episodes']} episodes, {result['targets']} targets x {result['seeds']} seeds"
            f"{', ' + result['wall'] if result.get('wall') else ''}; {result['unscored']} unscored). "
            f"`zero` found the pool's best in {found}/{episodes} episodes; {noisy}/{rounds} of its rounds had "
            f"a noise best (placebo or not significant).")
    effects = result["experience"]
    conditions = sorted({k.split("|")[1] for k in effects})
    agents = [a for a in AGENTS if any(k.startswith(a + "|") for k in effects) and a != "zero"]
    lines = [head, "", "Experience, same agent (condition - `no_experience`, Regret@3 / `zero`'s, 95% CI over "
             "targets; round 1 | curve):", "", "| agent | " + " | ".join(conditions) + " |",
             "|---|" + "---|" * len(conditions)]
    for agent in agents:
        cells = []
        for condition in conditions:
            one, curve = effects.get(f"{agent}|{condition}|round1"), effects.get(f"{agent}|{condition}|curve")
            cells.append("n/a" if one is None or curve is None else
                         f"{_ci(one)} {_short(one['verdict'])} \\| {_ci(curve)} {_short(curve['verdict'])}")
        lines.append(f"| {agent} | " + " | ".join(cells) + " |")
    called = [f"{k.replace('|', ' ')} {v['verdict']}" for k, v in sorted(effects.items())
              if v["verdict"] not in ("no detectable effect", "insufficient data") and not k.startswith("zero|")
              and k.split("|")[2] in ("round1", "curve")]
    lines += ["", "Experience verdicts other than n.s. (round 1, curve): " + ("; ".join(called) or "none") + "."]
    versus = result["versus_zero"]
    vconditions = sorted({k.split("|")[1] for k in versus})
    lines += ["", "Against `zero` (agent - zero, Regret@3 / `zero`'s, 95% CI over targets):", "",
              "| agent | " + " | ".join(vconditions) + " |", "|---|" + "---|" * len(vconditions)]
    for agent in [a for a in AGENTS if any(k.startswith(a + "|") for k in versus)]:
        lines.append(f"| {agent} | " + " | ".join(_ci(versus[f'{agent}|{c}']) if f"{agent}|{c}" in versus else "n/a"
                                                  for c in vconditions) + " |")
    return "\n".join(lines)


def _short(verdict: str) -> str:
    return {"helps": "helps", "hurts": "hurts", "no detectable effect": "n.s.", "unstable": "unstable",
            "insufficient data": "insufficient"}.get(verdict, verdict)


def render(results_dir: Path = RESULTS) -> str:
    """The README block (without the markers) from the results files present."""
    parts = []
    for name in NAMES:
        path = results_dir / f"{name}.json"
        if path.exists():
            parts.append(render_one(name, json.loads(path.read_text())))
    return "\n\n".join(parts)


def _parts(readme: str) -> tuple[str, str, str]:
    """(text before the begin marker, the block, text after the end marker); a clear error without them."""
    head, begin, rest = readme.partition(BEGIN)
    block, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"README has no {BEGIN} ... {END} block")
    return head, block, tail


def readme_block(readme: str) -> str:
    """The text between the markers of ``readme``."""
    return _parts(readme)[1].strip("\n")


def write_readme(readme_path: Path = ROOT / "README.md", results_dir: Path = RESULTS) -> None:
    """Replace the block of ``readme_path`` with what the results files render."""
    head, _, tail = _parts(readme_path.read_text())
    readme_path.write_text(f"{head}{BEGIN}\n{render(results_dir)}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, help="a forecast run folder to summarise")
    parser.add_argument("--name", choices=NAMES, help="which results file the run writes")
    parser.add_argument("--wall", help="how long the run took, as the README should say it")
    parser.add_argument("--write", action="store_true", help="write the README block from the results files")
    args = parser.parse_args(argv)
    if args.run:
        if not args.name:
            parser.error("--run needs --name")
        result = summarise(args.run)
        if args.wall:
            result["wall"] = args.wall
        (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        print(render_one(args.name, result))
    if args.write:
        write_readme()
        print("README forecast-results block written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
