"""One writer per run folder: an exclusive ``flock`` on ``<run folder>/.rsigym.lock``.

``rsigym run`` and ``rsigym regrade`` hold it for as long as they may write into the folder. A
second process that asks for the same folder gets a ``UserError`` naming the holder (pid, host,
command, start time), which the holder wrote into the lock file once it had the lock. The kernel
releases the lock when the holder's process ends, however it ends (even by SIGKILL), so a stale
lock file never blocks anyone: only a live holder does.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import socket
import sys
from pathlib import Path
from typing import IO, Any

from ..errors import UserError
from ..records.trajectory import utc_now
from ..records.redact import redact_text

__all__ = ["LOCK_FILE", "RunFolderLock", "describe_holder"]

LOCK_FILE = ".rsigym.lock"


def describe_holder(text: str) -> str:
    """One phrase naming the holder recorded in a lock file's text ('' when unreadable)."""
    try:
        holder = json.loads(text)
        return (f"pid {holder['pid']} on {holder['host']} ({holder['command']}, "
                f"since {holder['since']})")
    except (ValueError, KeyError, TypeError):
        return ""


class RunFolderLock:
    """Exclusive lock of a run folder; a context manager.

    Args:
        run_dir: The run folder (created if missing).
        command: What the holder does, shown to whoever is refused (default: this process's argv).

    Raises:
        UserError: Another process holds the folder; the message names it.
    """

    def __init__(self, run_dir: str | os.PathLike[str], command: str | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        # redacted: an --api-base URL on the command line may carry a password or a query key
        self.command = redact_text(command or " ".join(shlex.quote(a) for a in ["rsigym", *sys.argv[1:]]))
        self._file: IO[str] | None = None

    def acquire(self) -> "RunFolderLock":
        self.run_dir.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            who = describe_holder(handle.read()) or "another rsigym process"
            handle.close()
            raise UserError(f"{self.run_dir} is in use by {who}; wait for it to finish, or use "
                            "another --out") from None
        holder: dict[str, Any] = {"pid": os.getpid(), "host": socket.gethostname(),
                                  "command": self.command[:300], "since": utc_now()}
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(holder) + "\n")
        handle.flush()
        self._file = handle
        return self

    def release(self) -> None:
        if self._file is not None and not self._file.closed:
            self._file.seek(0)
            self._file.truncate()  # no stale holder text for the next reader
            self._file.close()     # closing releases the flock
        self._file = None

    def __enter__(self) -> "RunFolderLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
