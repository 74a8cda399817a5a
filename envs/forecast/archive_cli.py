"""``rsigym archive build|assemble``: make the forecast family's experiment archive (never in CI)."""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["configure", "main"]

HELP = "build the experiment archive of the forecast family (real trainings; takes CPU-minutes)"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``archive`` sub-commands to ``parser`` (called by the rsigym CLI)."""
    commands = parser.add_subparsers(dest="archive_command", required=True, parser_class=type(parser))
    build = commands.add_parser("build", help="train every (environment, intervention, seed) still missing")
    build.add_argument("--out", type=Path, default=Path("runs/forecast_archive"),
                       help="folder for runs.jsonl, archive.jsonl.gz and archive_provenance.json")
    build.add_argument("--seeds", type=int, default=8, help="paired seeds per row (default 8)")
    build.add_argument("--workers", type=int, default=1, help="parallel training processes (each one thread)")
    build.add_argument("--environments", nargs="*", help="research environments (default: all)")
    build.add_argument("--from-shipped", action="store_true",
                       help="first take the shipped archive's runs of these environments (its seeds) into the "
                            "runs file, so only the missing seeds train (a build that lost its runs file)")
    assemble = commands.add_parser("assemble", help="write the archive from the runs recorded so far")
    assemble.add_argument("--out", type=Path, default=Path("runs/forecast_archive"),
                          help="the build's folder (holds runs.jsonl); the archive is written there")
    assemble.add_argument("--seeds", type=int, default=8, help="the seeds the build was asked for")
    assemble.add_argument("--note", help="a line for the provenance (why the build is partial, how it ran)")
    assemble.add_argument("--keep-shipped", action="store_true",
                          help="take every environment the runs do not cover from the shipped archive "
                               "(its records, baselines and provenance; placebo flags from the catalogue)")


def main(args: argparse.Namespace) -> int:
    """Run ``rsigym archive ...`` with the parsed ``args``."""
    from rsigym.errors import UserError

    from .archive import assemble, build_runs, read_runs, write_archive
    from .research import RESEARCH_ENVIRONMENTS, research_environment

    if args.seeds < 2:
        raise UserError(f"--seeds must be >= 2 (a paired SE needs two), got {args.seeds}")
    runs_path = args.out / "runs.jsonl"
    if args.archive_command == "build":
        for env in args.environments or []:
            try:
                research_environment(env)
            except ValueError as exc:
                raise UserError(str(exc)) from None
        if getattr(args, "from_shipped", False):
            from .archive import load_archive, runs_from_archive
            taken = runs_from_archive(load_archive(), runs_path, args.environments or list(RESEARCH_ENVIRONMENTS))
            print(f"{taken} runs taken from the shipped archive")
        count = [0]

        def progress(row: dict[str, Any]) -> None:
            count[0] += 1
            if count[0] % 25 == 0:
                print(f"{count[0]} runs; last {row['environment']} {row['intervention']} seed {row['seed']}",
                      file=sys.stderr, flush=True)

        ran = build_runs(runs_path, seeds=range(args.seeds), environments=args.environments,
                         workers=args.workers, on_run=progress)
        print(f"{ran} runs trained now; all runs in {runs_path}")
    rows = read_runs(runs_path)
    if not rows:
        raise UserError(f"no runs in {runs_path}: run 'rsigym archive build' first")
    records, baselines = assemble(rows)
    info = provenance(rows, args.seeds, sys.argv)
    if getattr(args, "keep_shipped", False):
        records, baselines = keep_shipped(records, baselines, info)
    if getattr(args, "note", None):
        info["note"] = args.note
    path = write_archive(args.out, records, baselines, info)
    print(f"{len(records)} records, {len(baselines)} baselines -> {path}")
    return 0


def keep_shipped(records: list[Any], baselines: dict[str, Any], info: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """``records`` and ``baselines`` plus the shipped archive's environments they lack; ``info`` says which.

    A kept record's placebo flag is set from the catalogue (by its diff), whatever the shipped file says.
    """
    import dataclasses

    from .archive import load_archive
    from .catalogue import catalogue

    shipped = load_archive()
    placebo = {iv.id: iv.placebo for iv in catalogue()}
    kept = sorted(set(shipped.baselines) - set(baselines))
    baselines = {**baselines, **{env: shipped.baselines[env] for env in kept}}
    records = list(records) + [dataclasses.replace(r, placebo=placebo[r.intervention])
                               for r in shipped.records if r.environment in kept]
    for env in kept:
        info["environments"][env] = {"built_at": shipped.provenance.get("built_at"),     # its own, where it has one
                                     "git_revision": shipped.provenance.get("git_revision"),
                                     **shipped.provenance.get("environments", {}).get(env, {})}
    info["kept_from_shipped"] = {"environments": kept, "built_at": shipped.provenance.get("built_at"),
                                 "command": shipped.provenance.get("command"),
                                 "complete": shipped.provenance.get("complete")}
    built = [v for env, v in info["environments"].items() if env not in kept]
    info["complete"] = (all(len(v["seeds_complete"]) == info["seeds_requested"] for v in built)
                        and bool(shipped.provenance.get("complete", True)))
    return records, baselines


def provenance(rows: list[dict[str, Any]], seeds_requested: int, argv: list[str]) -> dict[str, Any]:
    """What the archive was built from and with, and how complete it is."""
    import numpy
    import sklearn
    import torch

    from .catalogue import interventions_of
    from .research import RESEARCH_ENVIRONMENTS

    per_env: dict[str, Any] = {}
    for env in RESEARCH_ENVIRONMENTS:
        env_rows = [r for r in rows if r["environment"] == env]
        timed = [r["seconds"] for r in env_rows if r.get("seconds") is not None]   # rows from an archive have none
        seeds_complete = [s for s in range(seeds_requested)
                          if sum(1 for r in env_rows if r["seed"] == s) == len(interventions_of(env)) + 1]
        per_env[env] = {
            "runs": len(env_rows), "interventions": len(interventions_of(env)),
            "seeds_complete": seeds_complete,
            "crashed_runs": sum(1 for r in env_rows if r["crashed"]),
            "median_run_s": round(statistics.median(timed), 3) if timed else None,
            "train_s_total": round(sum(timed), 1), "timed_runs": len(timed),
            "runs_from_archive": sum(1 for r in env_rows if r.get("from") == "archive"),
        }
    try:
        revision = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                                  cwd=Path(__file__).parent).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        revision = None
    complete = all(len(v["seeds_complete"]) == seeds_requested for v in per_env.values())
    return {
        "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["rsigym", *argv[1:]]) if argv and argv[0].endswith("rsigym") else " ".join(argv),
        "git_revision": revision, "seeds_requested": seeds_requested, "complete": complete,
        "threads_per_run": 1, "python": platform.python_version(), "platform": platform.platform(),
        "torch": torch.__version__, "numpy": numpy.__version__, "scikit_learn": sklearn.__version__,
        "environments": per_env, "runs_total": len(rows),
        "texts": "data/text_provenance.json (sources and sha256 of the two charlm corpora)",
        "gain": "loss metrics: log(baseline / intervention); error rates: (baseline - intervention) / baseline; "
                "crashed runs scored at the environment's trivial-predictor metric",
        "significance": "two-sided one-sample t-test of the per-seed paired gains, p < 0.05",
    }
