"""The MASS search statements of ``docs/families/workflow.md``, rendered from the committed results file of ``workflow_search_runs.py``.

    python benchmarks/workflow_results.py --write      # the docs block from benchmarks/results/workflow_search_runs.json

``--write`` replaces the text between the ``workflow-results`` markers of docs/families/workflow.md with what the
results file renders; a test checks the block equals the rendering, so the numbers
cannot drift from the run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as st

import readme_blocks

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
RESULTS = ROOT / "benchmarks" / "results" / "workflow_search_runs.json"
REASONS = ROOT / "benchmarks" / "results" / "workflow_reasons_runs.json"
JUDGES = ROOT / "benchmarks" / "results" / "workflow_soundness_calibration.json"
SPEED = ROOT / "benchmarks" / "results" / "workflow_search_speed.json"
RESAMPLES = 2000
BEGIN, END = "<!-- workflow-results:begin -->", "<!-- workflow-results:end -->"


def _num(value: float | None, fmt: str = ".3f") -> str:
    return "-" if value is None else format(value, fmt)


def _rate(p: dict[str, Any]) -> str:
    if not p["n"]:
        return "insufficient data"
    return f"{p['k']}/{p['n']} [{_num(p['low'], '.2f')}, {_num(p['high'], '.2f')}]"


def _ci(s: dict[str, Any], sign: str = "") -> str:
    return f"{_num(s['mean'], sign + '.3f')} [{_num(s['low'], sign + '.3f')}, {_num(s['high'], sign + '.3f')}]"


def render_search(result: dict[str, Any]) -> str:
    """The arms table of the first replication and the controls over every replication."""
    args, first = result["args"], result["replications"][0]
    n_runs = args["runs"]
    lines = [f"Arms over {n_runs} independent search runs each (budget {args['budget']} candidate workflows, "
             f"5 training tasks, {5 * args['test_per_family']} held-out tasks per run; unit: the search run; "
             "exact 95% CI for rates, t 95% CI over runs for scores):", "",
             "| arm | found the sound method | held-out score | minus seed (paired) | MDD | verdict vs seed |",
             "|---|---|---|---|---:|---|"]
    for arm in first["arms"]:
        s = first["summary"][arm]
        vs = s["vs_seed"]
        lines.append(f"| {arm} | {_rate(s['found'])} | {_ci(s['score'])} | "
                     + (f"{_ci(vs, '+')} | {_num(vs['mdd'])} | {vs['verdict']} |" if vs else "- | - | - |"))
    controls = result["controls"]
    reps = len(result["replications"])
    walls = [r["wall_s"] for r in result["replications"][1:]]
    timing = (f"; control replications {np.median(walls) / 60:.0f} min (median; {min(walls) / 60:.0f}-"
              f"{max(walls) / 60:.0f} min, the later ones with the cheaper execution timed below)" if walls else "")
    lines += ["", f"Controls over {reps} replications of this design (fresh salts each; a replication calls an "
                  "arm better when its paired CI over runs lies above 0): "
              + "; ".join(f"{arm} called better than the seed in {_rate(p)}" for arm, p in controls.items())
              + ". " + control_reading(controls)
              + " Resampled (" + f"{RESAMPLES} designs of {n_runs} runs drawn with replacement from every run of the "
                "arm, a power estimate, not independent replications): "
              + "; ".join(f"{arm} {share:.0%}" for arm, share in resampled_controls(result).items())
              + f". Memo: {result['memo']['program_hits']} program runs answered from it, "
                f"{result['memo']['program_misses']} executed; {result['memo']['run_hits']} workflow runs from it, "
                f"{result['memo']['run_misses']} executed. Wall time {result['wall_s'] / 60:.0f} min in all "
                f"(first replication, every arm: {first['wall_s'] / 60:.0f} min"
              + timing + "; 2 cores shared with other jobs, local sandbox)."]
    return "\n".join(lines)


def control_reading(controls: dict[str, dict[str, Any]]) -> str:
    """The must-show reading: the oracle loop called better in >= 80% of replications, the coin loop
    in <= 5% (point rates; "insufficient data" under 20 replications)."""
    oracle, coin = controls.get("oracle-judge loop"), controls.get("coin-judge loop")
    if not oracle or not coin:
        return ""
    if min(oracle["n"], coin["n"]) < 20:
        return (f"Positive control and null: insufficient data ({min(oracle['n'], coin['n'])} replications; "
                "20 asked).")
    met = lambda ok: "met" if ok else "not met"  # noqa: E731
    return (f"Positive control (oracle loop better in >= 80% of replications): {met(oracle['rate'] >= 0.8)}; "
            f"null (coin loop called better in <= 5%): {met(coin['rate'] <= 0.05)}.")


def render_speed(result: dict[str, Any]) -> str:
    """The speed table of ``workflow_search_speed.py`` (its own rendering)."""
    import workflow_search_speed

    return "\n" + workflow_search_speed.render(result)


def _called_better(diff: np.ndarray) -> bool:
    """The design's verdict on one replication: the t 95% CI over runs of the paired difference lies above 0."""
    n, sd = len(diff), float(np.std(diff, ddof=1))
    if sd == 0:
        return float(diff.mean()) > 0
    return float(diff.mean()) - float(st.t.ppf(0.975, n - 1)) * sd / math.sqrt(n) > 0


def resampled_controls(result: dict[str, Any], seed: int = 0) -> dict[str, float]:
    """Share of designs of ``runs`` runs, drawn with replacement from every run of each control arm
    (paired with its seed arm, pooled over replications), that call the arm better than the seed.
    A power estimate by resampling runs, beside the count over independent replications."""
    rng = np.random.default_rng(seed)
    out = {}
    for arm in result["controls"]:
        diffs = np.array([run[arm]["score"] - run["seed"]["score"] for rep in result["replications"]
                          if arm in rep["arms"] for run in rep["runs"]])
        draws = rng.integers(len(diffs), size=(RESAMPLES, result["args"]["runs"]))
        out[arm] = float(np.mean([_called_better(diffs[d]) for d in draws]))
    return out


BLIND = {"reasons loop": "judge loop", "sound-judge loop": "judge loop", "sound-judge reasons loop": "sound-judge loop"}


def render_reasons(result: dict[str, Any], main: dict[str, Any]) -> str:
    """The listening optimiser against judge-filtered random search with the same judge, paired by run."""
    base = main["replications"][0]["runs"]
    runs = result["replications"][0]["runs"]
    lines = ["", "The optimiser that aims at the judge's stated reasons against judge-filtered random search (a loop "
                 f"whose optimiser draws generic edits blind; the judge keeps or drops them), {len(runs)} runs paired "
                 "by salt and seed with the arms table (each row against the loop it differs from in one part):", "",
             "| arm | found the sound method | held-out score | compared with | difference (paired) | MDD | verdict |",
             "|---|---|---|---|---|---:|---|"]
    for arm in result["replications"][0]["arms"]:
        s = result["replications"][0]["summary"][arm]
        if arm == "seed":
            continue
        other = BLIND.get(arm, "judge loop")
        against = [r[other]["score"] for r in (runs if other in runs[0] else base)]
        diff = paired_runs([r[arm]["score"] for r in runs], against)
        lines.append(f"| {arm} | {_rate(s['found'])} | {_ci(s['score'])} | {other} | {_ci(diff, '+')} | "
                     f"{_num(diff['mdd'])} | {diff['verdict']} |")
    same = sum(abs(r["seed"]["score"] - b["seed"]["score"]) < 1e-12 for r, b in zip(runs, base))
    lines.append(f"\n(The seed arm reproduces run by run: {same} of {len(runs)} identical to the arms table's.)")
    return "\n".join(lines)


def paired_runs(values: list[float], base: list[float]) -> dict[str, Any]:
    import workflow_search_runs

    return workflow_search_runs.paired(values, base)


def render_judges(result: dict[str, Any]) -> str:
    """The judges on the held-apart program set (and on the shipped constructed pairs)."""
    names = {"rsigym/workflow_judge": "shipped judge", "rsigym/workflow_judge_sound": "soundness judge",
             "rsigym/workflow_judge_coin": "coin"}
    kinds = list(next(iter(result["table"].values())))
    lines = ["", "Judges on the held-apart program set (each program against the shipped program of the other label, "
                 "same answer, label and report, both positions; unit: the constructed pair; exact 95% CI):", "",
             "| judge | " + " | ".join(kinds) + " | all | shipped constructed pairs |",
             "|---|" + "---|" * (len(kinds) + 2)]
    shipped = result.get("shipped_set", {})
    for model in result["args"]["judges"]:
        table = result["table"][model]
        total = result["totals"][model]
        ship = shipped.get(model if model in shipped else "coin")
        lines.append(f"| {names.get(model, model)} | " + " | ".join(f"{c['k']}/{c['n']}" for c in table.values())
                     + f" | {_rate(total)} | {_rate(ship) if ship else '-'} |")
    misses = result["misses"].get("rsigym/workflow_judge_sound", [])
    lines.append(f"\nThe soundness judge's misses: {', '.join(misses) or 'none'}.")
    return "\n".join(lines)


def render(path: Path = RESULTS, reasons: Path = REASONS, judges: Path = JUDGES, speed: Path = SPEED) -> str:
    """The docs block (without the markers) from the results files present."""
    main = json.loads(path.read_text())
    text = render_search(main)
    if speed.exists():
        text += "\n" + render_speed(json.loads(speed.read_text()))
    if reasons.exists():
        text += "\n" + render_reasons(json.loads(reasons.read_text()), main)
    if judges.exists():
        text += "\n" + render_judges(json.loads(judges.read_text()))
    return text


def readme_block(text: str) -> str:
    return readme_blocks.block(text, BEGIN, END)


def write_readme(readme_path: Path = ROOT / "docs" / "families" / "workflow.md", path: Path = RESULTS, reasons: Path = REASONS,
                 judges: Path = JUDGES, speed: Path = SPEED) -> None:
    """Replace the block of ``readme_path`` with what the results files render."""
    readme_blocks.replace(readme_path, BEGIN, END, render(path, reasons, judges, speed))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the docs block from the results file")
    ns = parser.parse_args()
    if ns.write:
        write_readme()
        print("docs/families/workflow.md workflow-results block written")
    else:
        print(render())
