"""How long ``rsigym --version`` and ``rsigym --help`` take, and how much memory (issue 33, item 4).

Each command runs ``--repeats`` times under ``/usr/bin/time -v``; the table gives the median wall
time and the median maximum resident set, and whether LiteLLM (or torch) was imported, read from
``python -X importtime`` on one more run. Target: under 0.3 s, with no LiteLLM import.

    python benchmarks/cli_startup.py --repeats 7
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

COMMANDS = (["--version"], ["--help"], ["run", "--help"])


def _time_v(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, max RSS in MB) of one run, as ``/usr/bin/time -v`` reports them."""
    proc = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr[-500:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", proc.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    assert wall and rss, proc.stderr
    hours, minutes, seconds = int(wall.group(1) or 0), int(wall.group(2)), float(wall.group(3))
    return hours * 3600 + minutes * 60 + seconds, int(rss.group(1)) / 1024


def _imported(argv: list[str], python: str) -> list[str]:
    """Which heavy modules the command imports (``-X importtime`` of the CLI's main)."""
    code = f"import sys; sys.argv = ['rsigym', *{argv[1:]!r}]\nfrom rsigym.cli import main\ntry:\n main()\nexcept SystemExit:\n pass"
    proc = subprocess.run([python, "-X", "importtime", "-c", code], capture_output=True, text=True, timeout=120)
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return [heavy for heavy in ("litellm", "torch", "optuna", "sklearn", "gymnasium") if heavy in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rsigym", default=shutil.which("rsigym") or os.path.join(os.path.dirname(sys.executable),
                                                                                   "rsigym"))
    args = parser.parse_args()
    print(f"| command | wall s (median of {args.repeats}) | max RSS MB | heavy imports |")
    print("|---|---:|---:|---|")
    for command in COMMANDS:
        argv = [args.rsigym, *command]
        runs = [_time_v(argv) for _ in range(args.repeats)]
        wall = statistics.median(r[0] for r in runs)
        rss = statistics.median(r[1] for r in runs)
        heavy = ", ".join(_imported(argv, sys.executable)) or "none"
        print(f"| rsigym {' '.join(command)} | {wall:.2f} | {rss:.0f} | {heavy} |")


if __name__ == "__main__":
    main()
