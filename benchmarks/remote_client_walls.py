"""The remote client against a hostile server at the sizes of issue 58 (hole 5).

A hostile server (``tests/security/hostile_remote_server.py``: hand-made HTTP and WebSocket frames
on 127.0.0.1) answers ``rsigym.remote.make`` (then ``reset``) with: a 700 MB ``GET /rsigym/env``
body, a 700 MB WebSocket reply (in 1 MiB fragments), a permessage-deflate bomb of about 1.5 MB
that inflates to 1.5 GB, and a description or reply trickled one byte every 20 s against
``timeout_s=30``. Each client runs in a child process; the table gives the call that raised (``make``
or ``reset``), its time to the error, its deadline and the child's peak RSS. Before the walls (5d65b20) the issue saw 2.2 GB peaks and a
raw ``JSONDecodeError`` for 700 MB, a 3.2 GB peak and 81 s for the bomb, and 200 s for a trickle.

    python benchmarks/remote_client_walls.py [--modes sync,async] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests/ (the hostile server)

from tests.security.hostile_remote_server import (OBSERVATION, HostileServer, Plan, http_stream,  # noqa: E402
                                                  http_trickle, measure_client, ws_deflate_bomb, ws_stream,
                                                  ws_trickle)

HUGE_BYTES = 700_000_000
BOMB_BYTES = 1_500_000_000
TRICKLE_INTERVAL_S = 20.0
TRICKLE_TIMEOUT_S = 30.0
PEAK_LIMIT_MB = 300.0


def attacks(huge_bytes: int = HUGE_BYTES, bomb_bytes: int = BOMB_BYTES, interval_s: float = TRICKLE_INTERVAL_S,
            trickle_timeout_s: float = TRICKLE_TIMEOUT_S) -> list[tuple[str, Plan, float]]:
    """(name, plan, client timeout_s) of each attack."""
    mb, gb = huge_bytes / 1e6, bomb_bytes / 1e9
    return [
        (f"GET /rsigym/env: {mb:g} MB body", Plan(about=http_stream(huge_bytes)), 600.0),
        (f"WebSocket: {mb:g} MB reply", Plan(ws_replies=[ws_stream(huge_bytes)]), 600.0),
        (f"WebSocket: deflate bomb, {gb:g} GB inflated",
         Plan(ws_replies=[ws_deflate_bomb(bomb_bytes)], deflate=True), 600.0),
        (f"GET /rsigym/env: 1 byte / {interval_s:g} s", Plan(about=http_trickle(interval_s, 20 * interval_s)),
         trickle_timeout_s),
        (f"WebSocket: reply 1 byte / {interval_s:g} s", Plan(ws_replies=[ws_trickle(OBSERVATION, interval_s, 10)]),
         trickle_timeout_s),
    ]


def main(modes: list[str], **sizes: float) -> list[dict]:
    """One row per attack and client (``sizes``: ``attacks``' arguments, smaller for a smoke run)."""
    rows = []
    for name, plan, timeout_s in attacks(**sizes):  # type: ignore[arg-type]
        started = time.monotonic()
        with HostileServer(plan) as url:
            for mode in modes:
                result = measure_client(url, mode=mode, timeout_s=timeout_s, hang_s=900)
                # make() has min(timeout_s, 60 s) for the description and handshake; a call has timeout_s
                deadline_s = min(timeout_s, 60.0) if "rsigym/env" in name else timeout_s
                rows.append({"attack": name, "client": mode, "deadline_s": deadline_s, **result})
                print(f"{name} [{mode}]: {result} ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
    return rows


def render(rows: list[dict]) -> str:
    lines = ["| attack | client | call that raised | its time to RemoteEnvError (s) | deadline (s) | peak RSS (MB) "
             "| growth (MB) | error |", "|---|---|---|---:|---:|---:|---:|---|"]
    for row in rows:
        error = row["error"] if len(row["error"]) <= 90 else row["error"][:87] + "..."
        lines.append(f"| {row['attack']} | {row['client']} | {row['call']} | {row['call_s']:.2f} | "
                     f"{row['deadline_s']:g} | {row['peak_mb']:.0f} | {row['growth_mb']:.0f} | {error} |")
    ok = all(r["error"].startswith("RemoteEnvError") and r["peak_mb"] < PEAK_LIMIT_MB
             and r["call_s"] <= r["deadline_s"] + 5 for r in rows)
    lines.append("")
    lines.append(f"{'PASS' if ok else 'MISS'}: every attack ends in RemoteEnvError within its deadline (+5 s) "
                 f"with a peak RSS under {PEAK_LIMIT_MB:.0f} MB")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="sync,async", help="clients to run: sync, async or both")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args()
    table_rows = main([m.strip() for m in args.modes.split(",") if m.strip()])
    print(render(table_rows))
    if args.json:
        args.json.write_text(json.dumps(table_rows, indent=1) + "\n")
