"""The forecast family's experiment archive: provenance, and one row per research environment.

Table 1 (per environment): interventions, runs, seeds complete, crashed runs, the share of
interventions whose paired-seed gain is significant (two-sided t-test, p < 0.05), how many
placebos have a mean gain within 2 SE of 0 (about 95% of them should: their true gain is 0 by
construction; one that repeats the baseline exactly has SE 0 and gain exactly 0), the baseline metric, the gain range, and the median
seconds of one training run on one thread during the build.

Table 2 (timing, measured now on this machine): median of ``--repeats`` runs of each research
environment's baseline on one thread, and its ratio to the digits-mlp baseline measured in the
same run (the reference: the cheapest training).

Table 3 (``--rerun``): the rerun check on one real intervention of every environment
(``rerun.RERUN_ROWS``): the baseline and the intervention trained again on 4 of the paired seeds
(2 for the charlm twins), the rerun and archived mean gains, whether every per-seed gain repeated
to 1e-6, and pass (within 3 paired SEs).

Run: ``python benchmarks/forecast_archive.py [--repeats 3] [--rerun]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from rich.console import Console
from rich.table import Table

from rsigym.envs.forecast.archive import load_archive
from rsigym.envs.forecast.research import RESEARCH_ENVIRONMENTS, run


def main(repeats: int, rerun: bool = False) -> None:
    console = Console()
    archive = load_archive()
    provenance = archive.provenance
    console.print("[bold]Provenance[/bold]")
    console.print(json.dumps({k: v for k, v in provenance.items() if k != "environments"}, indent=1, sort_keys=True))
    table = Table(title="Archive per research environment")
    for column in ("environment", "interventions", "runs", "seeds complete", "crashed runs", "significant",
                   "placebos within 2 SE of 0", "baseline metric", "gain min .. max", "median run s"):
        table.add_column(column)
    for env in RESEARCH_ENVIRONMENTS:
        records = archive.of(env)
        info = provenance.get("environments", {}).get(env, {})
        placebos = [r for r in records if r.placebo]
        within = sum(abs(r.gain) <= 2 * r.gain_se for r in placebos)
        base = archive.baselines.get(env)
        table.add_row(
            env, str(len(records)), str(info.get("runs", "?")), str(len(info.get("seeds_complete", []))),
            str(info.get("crashed_runs", "?")),
            f"{sum(r.significant for r in records) / max(1, len(records)):.0%}",
            f"{within}/{len(placebos)}",
            f"{statistics.mean(base.metrics):.4g}" if base else "n/a",
            f"{min(r.gain for r in records):+.3f} .. {max(r.gain for r in records):+.3f}" if records else "n/a",
            str(info.get("median_run_s", "?")))
    console.print(table)
    build_s = sum(float(v.get("train_s_total", 0)) for v in provenance.get("environments", {}).values())
    console.print(f"{len(archive.records)} records, {len(archive.baselines)} environments; training time recorded "
                  f"in the provenance: {build_s / 60:.0f} CPU-minutes (wall time of each run under the build's load)")
    if rerun:
        from rsigym.envs.forecast.rerun import RERUN_ROWS, rerun_check
        checks = Table(title="Rerun check, one real intervention per environment")
        for column in ("environment", "intervention", "seeds", "rerun mean", "archived mean", "3 SE",
                       "bit-identical", "pass"):
            checks.add_column(column)
        by_id = archive.by_id()
        for env, intervention in RERUN_ROWS.items():
            check = rerun_check(by_id[intervention], seeds=2 if env.startswith("charlm") else 4)
            checks.add_row(env, intervention, str(len(check.seeds)), f"{check.rerun_mean:+.4f}",
                           f"{check.archived_mean:+.4f}", f"{check.margin:.4f}", "yes" if check.identical else "no",
                           "yes" if check.passed else "NO")
        console.print(checks)
    timing = Table(title=f"Baseline training time now, one thread (median of {repeats})")
    for column in ("environment", "median s", "ratio to digits-mlp"):
        timing.add_column(column)
    medians = {}
    for env in RESEARCH_ENVIRONMENTS:
        times = []
        for seed in range(repeats):
            start = time.perf_counter()
            run(env, {}, seed)
            times.append(time.perf_counter() - start)
        medians[env] = statistics.median(times)
    for env, median in medians.items():
        timing.add_row(env, f"{median:.3f}", f"{median / medians['digits-mlp']:.1f}")
    console.print(timing)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rerun", action="store_true", help="rerun one row of every environment")
    arguments = parser.parse_args()
    main(arguments.repeats, arguments.rerun)
