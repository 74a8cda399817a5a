"""The shared workspace of one workflow run: files mirrored on the host, programs run in a sandbox.

Roles write and read files through the host-side mirror (cheap, deterministic); ``run_python``
opens the sandbox on first use, copies the files written since the last run, executes the
program there and copies back every small top-level file the program left (``results.json``,
figures as text, ...). The delivered workspace is the mirror: what the graders read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rsigym.errors import InfraError
from rsigym.sandbox import Sandbox, open_sandbox

__all__ = ["Workspace", "PATH_PATTERN", "MAX_FILE_CHARS"]

PATH_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")  # top-level names only
MAX_FILE_CHARS = 64_000
MAX_FILES = 40

# Run after the user's program: lists what it left (the workspace is the user's own; no secret here).
_COLLECT = (
    "import json, os\n"
    "out = {}\n"
    "for name in sorted(os.listdir('.')):\n"
    "    if os.path.isfile(name) and not os.path.islink(name) and os.path.getsize(name) <= %d:\n"
    "        out[name] = open(name, 'rb').read().decode('utf-8', 'replace')\n"
    "print(json.dumps(out))\n" % MAX_FILE_CHARS
)


class Workspace:
    """Files of one run plus a lazily opened sandbox.

    Args:
        sandbox: ``auto``/``docker``/``local`` (opened on the first ``run_python`` and closed by
            ``close``) or a Sandbox instance (emptied on ``reset``, never closed here).
        python_timeout_s: Wall-clock limit of one ``run_python``.
    """

    def __init__(self, sandbox: str | Sandbox = "auto", python_timeout_s: float = 60.0) -> None:
        self._sandbox_arg = sandbox
        self._sandbox: Sandbox | None = None if isinstance(sandbox, str) else sandbox
        self.python_timeout_s = float(python_timeout_s)
        self.files: dict[str, str] = {}
        self._dirty: set[str] = set()
        self.python_runs = 0
        self.sandbox_info: dict[str, Any] | None = None

    def reset(self, files: dict[str, str]) -> None:
        if self._sandbox is not None:
            if isinstance(self._sandbox_arg, str):
                self._sandbox.close()  # back to the pool, which empties it
                self._sandbox = None
            else:
                self._sandbox.exec(["sh", "-c", "find . -mindepth 1 -delete"], timeout=30)
        self.files = dict(files)
        self._dirty = set(files)
        self.python_runs = 0

    # -- the tools ------------------------------------------------------------------------
    def write(self, path: str, content: str) -> str:
        error = self._check_path(path)
        if error:
            return error
        if len(content) > MAX_FILE_CHARS:
            return f"Error: {path}: content of {len(content)} chars is over the limit of {MAX_FILE_CHARS}"
        if path not in self.files and len(self.files) >= MAX_FILES:
            return f"Error: the workspace holds its limit of {MAX_FILES} files"
        self.files[path] = content
        self._dirty.add(path)
        return f"wrote {path} ({len(content)} chars)"

    def read(self, path: str, max_chars: int = 3000) -> str:
        error = self._check_path(path)
        if error:
            return error
        if path not in self.files:
            return f"Error: no file {path}; files: {', '.join(sorted(self.files))}"
        text = self.files[path]
        return text if len(text) <= max_chars else text[:max_chars] + f"\n... ({len(text) - max_chars} more chars)"

    def run_python(self, path: str) -> str:
        error = self._check_path(path)
        if error:
            return error
        if path not in self.files:
            return f"Error: no file {path} to run; files: {', '.join(sorted(self.files))}"
        sandbox = self._open()
        if self._dirty:
            sandbox.write_files({p: self.files[p] for p in sorted(self._dirty) if p in self.files})
            self._dirty.clear()
        self.python_runs += 1
        result = sandbox.exec(["python3", path], timeout=self.python_timeout_s)
        listing = sandbox.exec(["python3", "-S", "-c", _COLLECT], timeout=30)
        if not listing.ok:
            raise InfraError(f"workspace listing failed (exit {listing.exit_code}): {listing.stderr[-200:]}")
        left = json.loads(listing.stdout)
        for name in set(self.files) - set(left):
            del self.files[name]  # the program deleted it
        for name, text in left.items():
            if PATH_PATTERN.match(name):
                self.files[name] = text
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        return (f"ran {path}: {status}\nstdout:\n{result.stdout[-1500:]}\nstderr:\n{result.stderr[-1500:]}"
                f"\nfiles now: {', '.join(sorted(self.files))}")

    # -- plumbing -------------------------------------------------------------------------
    def _check_path(self, path: str) -> str | None:
        if not isinstance(path, str) or not PATH_PATTERN.match(path):
            return f"Error: bad file name {str(path)[:80]!r}: top-level names of letters, digits, _ . - only"
        return None

    def _open(self) -> Sandbox:
        if self._sandbox is None:
            assert isinstance(self._sandbox_arg, str)
            self._sandbox = open_sandbox(self._sandbox_arg)
            self._dirty = set(self.files)
        self.sandbox_info = dict(self._sandbox.info)
        return self._sandbox

    def close(self) -> None:
        if self._sandbox is not None and isinstance(self._sandbox_arg, str):
            self._sandbox.close()
        self._sandbox = None if isinstance(self._sandbox_arg, str) else self._sandbox
