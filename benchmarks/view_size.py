"""Size and speed of ``rsigym view`` at 5,000 and 50,000 episodes (issue 33): the page, its sidecar
folder, the build time, and the time to a ready page and to an opened transcript in Chromium.

The records are a real run's, tiled: copy k of an episode gets seed ``seed + 1000 k`` and its own
episode key, so rows, pairs and the grid scale as in a run that many times bigger. Copies share
their texts with the original, so the sidecar's transcripts compact far better than a run of
that many distinct episodes would (its size here is a lower bound); the page itself holds no
transcript and does not depend on that.

    python benchmarks/view_size.py RUN_DIR --episodes 5000 50000
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from rsigym.records.jsonl import read_records
from rsigym.records import Trajectory
from rsigym.viewer import build_view, sidecar_dir


def tiled(records: list[Trajectory], episodes: int) -> list[Trajectory]:
    out = []
    for n in range(episodes):
        copy, record = divmod(n, len(records))
        base = records[record]
        key = base.episode_key if copy == 0 else hashlib.sha256(f"{base.episode_key}:{copy}".encode()).hexdigest()[:32]
        out.append(dataclasses.replace(base, seed=base.seed + 1000 * copy, episode_key=key))
    return out


def ready_ms(page: Path, fragment: str) -> tuple[int, str]:
    """(the page's own time to ready in ms, what it opened) in headless Chromium."""
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                              "--virtual-time-budget=20000", "--dump-dom", f"{page.resolve().as_uri()}#{fragment}"],
                             capture_output=True, text=True, timeout=600).stdout
    body = dom[dom.find("<body"):dom.find(">", dom.find("<body"))]

    def attr(name: str) -> str:
        start = body.find(f'{name}="')
        return body[start + len(name) + 2:body.find('"', start + len(name) + 2)] if start >= 0 else ""

    return int(attr("data-ready-ms") or -1), attr("data-opened")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--episodes", type=int, nargs="+", default=[5000, 50000])
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium timings")
    args = parser.parse_args()
    records = read_records(args.run_dir / "records.jsonl").records
    print(f"source: {args.run_dir} ({len(records)} episodes)")
    print("| episodes | build s (CPU s) | page MB | sidecar MB (files) | index MB | ready ms | open last episode |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for episodes in args.episodes:
        batch = tiled(records, episodes)
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "view.html"
            folder = sidecar_dir(page)
            started, cpu = time.perf_counter(), time.process_time()
            page.write_text(build_view(args.run_dir, batch, sidecar=folder), encoding="utf-8")
            build_s, build_cpu_s = time.perf_counter() - started, time.process_time() - cpu
            files = list(folder.iterdir())
            side_mb = sum(f.stat().st_size for f in files) / 1e6
            index_mb = (folder / "index.js").stat().st_size / 1e6
            ms, opened = (-1, "") if args.no_browser else ready_ms(page, f"episode={episodes - 1}")
            print(f"| {episodes:,} | {build_s:.1f} ({build_cpu_s:.1f}) | {page.stat().st_size / 1e6:.2f} | {side_mb:.1f} ({len(files)}) "
                  f"| {index_mb:.2f} | {ms} | {opened or '-'} |", flush=True)
            shutil.rmtree(folder)


if __name__ == "__main__":
    main()
