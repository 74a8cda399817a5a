"""``rsigym serve`` in a child process: what a script or a trainer on this machine starts and talks to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Sequence

__all__ = ["start_server_process"]


def start_server_process(env_id: str, out: str | Path, *, sets: Sequence[str] = (),
                         max_sessions: int | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start ``rsigym serve ENV_ID`` on a free loopback port, recording into ``out``; return the
    process and the URL its first line announces. The caller stops it (``process.kill()``).

    ``sets``: ``KEY=VALUE`` env kwargs (``--set``). Raises SystemExit with the line it got when the
    server does not announce its address (it is killed first).
    """
    argv = [sys.executable, "-m", "rsigym", "serve", env_id, "--port", "0", "--out", str(out)]
    if max_sessions is not None:
        argv += ["--max-sessions", str(max_sessions)]
    for item in sets:
        argv += ["--set", item]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if " at http://" not in line:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return process, line.split(" at ")[1].split()[0]
