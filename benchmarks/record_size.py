"""Size and read time of compact records (``shared.jsonl``) against the plain one-object-a-line form.

Runs ``trace_quickstart`` (450 offline episodes) into a temporary folder, or takes a run folder,
then prints one table: bytes on disk of the plain form (every record's full JSON, as before
compaction) and of the compact form (``records.jsonl`` + ``shared.jsonl``), their ratio (target
>= 3), and the median time of ``read_records`` over ``--runs`` reads of each, with their ratio.

Run: ``python benchmarks/record_size.py [RUN_DIR] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rsigym.records.jsonl import read_records
from rsigym.runner import run_scenario
from rsigym.scenario import load_scenario
from rsigym.records.shared_text import SHARED_FILE


def _median_read_s(path: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        read_records(path)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="?", type=Path, help="a run folder (default: run trace_quickstart)")
    parser.add_argument("--runs", type=int, default=5, help="reads of each form (median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = args.run_dir
        if run_dir is None:
            run_dir = Path(tmp) / "trace_quickstart"
            run_scenario(load_scenario("trace_quickstart"), run_dir, workers=2, progress=False, report=False)
        records = read_records(run_dir / "records.jsonl").records
        plain = Path(tmp) / "plain" / "records.jsonl"  # the form of every record before compaction
        plain.parent.mkdir()
        plain.write_text("".join(r.to_json() + "\n" for r in records), encoding="utf-8")
        compact_bytes = (run_dir / "records.jsonl").stat().st_size + (
            (run_dir / SHARED_FILE).stat().st_size if (run_dir / SHARED_FILE).exists() else 0)
        plain_bytes = plain.stat().st_size
        plain_s, compact_s = _median_read_s(plain, args.runs), _median_read_s(run_dir / "records.jsonl", args.runs)
    table = Table(title=f"{len(records)} records: plain JSONL vs compact (records.jsonl + shared.jsonl)")
    for column in ("form", "bytes on disk", "ratio plain/compact", f"read_records median of {args.runs} (s)",
                   "read ratio compact/plain"):
        table.add_column(column, justify="right")
    table.add_row("plain", f"{plain_bytes:,}", "1.00", f"{plain_s:.3f}", "1.00")
    table.add_row("compact", f"{compact_bytes:,}", f"{plain_bytes / compact_bytes:.2f}"
                  + ("  PASS" if plain_bytes >= 3 * compact_bytes else "  MISS (target 3)"),
                  f"{compact_s:.3f}", f"{compact_s / plain_s:.2f}")
    Console().print(table)


if __name__ == "__main__":
    main()
