"""How long ``rsigym --version`` and ``rsigym --help`` take, and how much memory (issue 33, item 4).

Each command runs ``--repeats`` times under ``/usr/bin/time -v``; the table gives the median wall
time and the median maximum resident set, and whether LiteLLM (or torch) was imported, read from
``python -X importtime`` on one more run. Target: under 0.3 s, with no LiteLLM import.

    python benchmarks/cli_startup.py --repeats 7 --rsigym /path/to/old/.venv/bin/rsigym --rsigym .venv/bin/rsigym
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

COMMANDS = (["--version"], ["--help"], ["run", "--help"])


def _time_v(argv: list[str]) -> tuple[float, float, float]:
    """(wall seconds, max RSS in MB, CPU seconds: user + system) of one run, as ``/usr/bin/time -v``
    reports them. On a loaded machine the wall time mostly measures the queue for a core; the CPU
    time is what the command itself costs."""
    proc = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr[-500:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", proc.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    assert wall and rss, proc.stderr
    cpu = sum(float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", proc.stderr))
    hours, minutes, seconds = int(wall.group(1) or 0), int(wall.group(2)), float(wall.group(3))
    return hours * 3600 + minutes * 60 + seconds, int(rss.group(1)) / 1024, cpu


def _imported(argv: list[str], python: str) -> list[str]:
    """Which heavy modules the command imports (``-X importtime`` of the CLI's main)."""
    code = f"import sys; sys.argv = ['rsigym', *{argv[1:]!r}]\nfrom rsigym.cli import main\ntry:\n main()\nexcept SystemExit:\n pass"
    proc = subprocess.run([python, "-X", "importtime", "-c", code], capture_output=True, text=True, timeout=120)
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return [heavy for heavy in ("litellm", "torch", "optuna", "sklearn", "gymnasium") if heavy in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rsigym", action="append", metavar="PATH",
                        help="an rsigym script to time (repeatable: e.g. another checkout's venv, as "
                        "the reference); default: the one next to this Python")
    args = parser.parse_args()
    scripts = args.rsigym or [os.path.join(os.path.dirname(sys.executable), "rsigym")]
    print(f"| rsigym | command | wall s (median of {args.repeats}) | ratio to the first | CPU s | max RSS MB "
          "| heavy imports |")
    print("|---|---|---:|---:|---:|---:|---|")
    for command in COMMANDS:
        runs: dict[str, list[tuple[float, float, float]]] = {script: [] for script in scripts}
        for _ in range(args.repeats):  # interleaved, so a change in the machine's load hits both alike
            for script in scripts:
                runs[script].append(_time_v([script, *command]))
        reference = statistics.median(r[0] for r in runs[scripts[0]])
        for script in scripts:
            wall = statistics.median(r[0] for r in runs[script])
            rss = statistics.median(r[1] for r in runs[script])
            cpu = statistics.median(r[2] for r in runs[script])
            python = os.path.join(os.path.dirname(script), "python")
            heavy = ", ".join(_imported([script, *command], python)) or "none"
            print(f"| {script} | rsigym {' '.join(command)} | {wall:.2f} | {wall / reference:.2f} | {cpu:.2f} | {rss:.0f} | {heavy} |")


if __name__ == "__main__":
    main()
