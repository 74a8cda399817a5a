"""What ``import rsigym.envs, rsigym.agents, rsigym.graders`` costs against ``import gymnasium``
(issue 45, item 9: at most 3x).

Each import runs in a fresh interpreter ``--repeats`` times, the three commands alternating so
that load drift on a shared machine falls on all of them; the table gives the median wall time and
the median CPU time (user + system of the child, which a loaded machine does not inflate the way
it inflates wall time), each net of a bare ``python -c pass`` too, and the ratio to gymnasium.
It also lists which of the libraries the import is meant to leave for later were loaded.

    python benchmarks/import_cost.py --repeats 15
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": "pass",
    "import gymnasium": "import gymnasium",
    "import rsigym.envs, .agents, .graders": "import rsigym.envs, rsigym.agents, rsigym.graders",
}
LATER = ("scipy.stats", "sklearn", "torch", "pandas", "litellm", "httpx", "matplotlib", "optuna")


def _one(code: str) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one fresh interpreter running ``code``."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
    cpus: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeats):
        for name, code in COMMANDS.items():
            wall, cpu = _one(code)
            walls[name].append(wall)
            cpus[name].append(cpu)
    wall = {name: statistics.median(v) for name, v in walls.items()}
    cpu = {name: statistics.median(v) for name, v in cpus.items()}
    base = "python -c pass"
    gym = "import gymnasium"
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.repeats} fresh interpreters each\n")
    print("| command | wall s | CPU s | wall net of python | CPU net of python | CPU ratio to gymnasium |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in COMMANDS:
        net_cpu = cpu[name] - cpu[base]
        ratio = net_cpu / (cpu[gym] - cpu[base]) if name != base else float("nan")
        print(f"| {name} | {wall[name]:.3f} | {cpu[name]:.3f} | {wall[name] - wall[base]:.3f} | {net_cpu:.3f} | "
              f"{'' if name == base else f'{ratio:.2f}x'} |")
    probe = ("import json, sys; import rsigym.envs, rsigym.agents, rsigym.graders; "
             f"print(json.dumps(sorted(m for m in {list(LATER)!r} if m in sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                       check=True).stdout.strip().splitlines()[-1])
    print(f"\nloaded by the import, of {', '.join(LATER)}: {', '.join(loaded) or 'none'}")
    print(f"whole-import ratio (wall, not net): {wall['import rsigym.envs, .agents, .graders'] / wall[gym]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
