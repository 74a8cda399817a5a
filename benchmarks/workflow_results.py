"""The README's MASS search statements, rendered from the committed results file of ``workflow_search_runs.py``.

    python benchmarks/workflow_results.py --write      # README block from benchmarks/results/workflow_search_runs.json

``--write`` replaces the text between the ``workflow-results`` markers of README.md with what the
results file renders; a test checks the README block equals the rendering, so the numbers
cannot drift from the run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "workflow_search_runs.json"
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
    for arm, s in first["summary"].items():
        vs = s["vs_seed"]
        lines.append(f"| {arm} | {_rate(s['found'])} | {_ci(s['score'])} | "
                     + (f"{_ci(vs, '+')} | {_num(vs['mdd'])} | {vs['verdict']} |" if vs else "- | - | - |"))
    controls = result["controls"]
    reps = len(result["replications"])
    lines += ["", f"Controls over {reps} replications of this design (fresh salts each; a replication calls an "
                  "arm better when its paired CI over runs lies above 0): "
              + "; ".join(f"{arm} called better than the seed in {_rate(p)}" for arm, p in controls.items())
              + f". Memo: {result['memo']['program_hits']} program runs answered from it, "
                f"{result['memo']['program_misses']} executed; {result['memo']['run_hits']} workflow runs from it, "
                f"{result['memo']['run_misses']} executed. Wall time {result['wall_s'] / 60:.0f} min "
                f"(2 shared cores, local sandbox)."]
    return "\n".join(lines)


def render(path: Path = RESULTS) -> str:
    """The README block (without the markers) from the results file."""
    return render_search(json.loads(path.read_text()))


def readme_block(text: str) -> str:
    if BEGIN not in text or END not in text:
        raise ValueError(f"README has no {BEGIN} ... {END} block (workflow-results)")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def write_readme(readme_path: Path = ROOT / "README.md", path: Path = RESULTS) -> None:
    """Replace the block of ``readme_path`` with what the results file renders."""
    text = readme_path.read_text()
    readme_block(text)
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    readme_path.write_text(f"{head}{BEGIN}\n{render(path)}\n{END}{tail}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the README block from the results file")
    ns = parser.parse_args()
    if ns.write:
        write_readme()
        print("README workflow-results block written")
    else:
        print(render())
