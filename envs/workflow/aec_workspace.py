"""The shared workspace of one workflow run: files mirrored on the host, programs run in a sandbox.

Roles write and read files through the host-side mirror (cheap, deterministic); ``run_python``
opens the sandbox on first use, copies the files written since the last run, executes the
program there and copies back every small top-level file the program left (``results.json``,
figures as text, ...). The delivered workspace is the mirror: what the graders read. A local
sandbox's work dir is on this host, so it is listed (by the same ``collect`` function) and cleared
from this process rather than by a process of its own each time; a failure there falls back to
the sandboxed way.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from typing import Any

from rsigym.sandbox import Sandbox, open_sandbox

from .memo import ExecutionMemo, workspace_key

__all__ = ["Workspace", "PATH_PATTERN", "MAX_FILE_CHARS", "MAX_FILES", "MAX_TOTAL_CHARS"]

PATH_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")  # top-level names only
MAX_FILE_CHARS = 64_000
MAX_FILES = 40

MAX_TOTAL_CHARS = 150_000  # all files copied back after one run; with JSON escaping well under 1 MB
MAX_SCAN = 2_000           # directory entries looked at: a program that leaves 10^6 files is not listed whole
# Lists and clears a local sandbox's work dir in this process (see ``_local_work_dir``); the speed
# benchmark turns it off to time the process-per-listing path on the same runs.
HOST_SIDE_LOCAL = True

# Run after the user's program, as ``python3 -I`` (no cwd, user site or PYTHON* variables on the
# path: a planted json.py or sitecustomize.py is never imported) from the work dir. It copies back
# regular top-level files (never following a link, never blocking on a FIFO) within a count and a
# total-size cap, names what it left behind, and fits its own output under ``argv[1]`` bytes.
_COLLECT_FN = """
import json, os, stat, sys
def collect(root, cap, max_file, max_files, max_total, max_scan):
    out, kept, total, truncated = {}, [], 0, False
    with os.scandir(root) as it:
        entries = []
        for entry in it:
            if len(entries) >= max_scan:
                truncated = True
                break
            entries.append(entry.name)
    for name in sorted(entries):
        path = os.path.join(root, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        if info.st_size > max_file or len(out) >= max_files or total + info.st_size > max_total:
            kept.append(name)
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, 'rb') as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    continue
                data = handle.read(max_file + 1)
        except OSError:
            continue
        if len(data) > max_file:
            kept.append(name)
            continue
        out[name] = data.decode('utf-8', 'replace')
        total += len(data)
    def dump():
        return json.dumps({'files': out, 'kept': kept[:200], 'truncated': truncated or len(kept) > 200},
                          ensure_ascii=False)
    text = dump()
    while len(text.encode()) > cap and out:
        name = max(out, key=lambda n: len(out[n]))
        del out[name]
        kept.append(name)
        text = dump()
    return text
"""
_COLLECT = _COLLECT_FN + "sys.stdout.write(collect('.', *(int(a) for a in sys.argv[1:6])))\n"
_HOST_COLLECT: dict[str, Any] = {}
exec(compile(_COLLECT_FN, "<workspace-collect>", "exec"), _HOST_COLLECT)  # the same function, run host-side
_LISTING_SCHEMA_KEYS = ("files", "kept", "truncated")


class Workspace:
    """Files of one run plus a lazily opened sandbox.

    Args:
        sandbox: ``auto``/``docker``/``local`` (opened on the first ``run_python`` and closed by
            ``close``) or a Sandbox instance (emptied on ``reset``, never closed here).
        python_timeout_s: Wall-clock limit of one ``run_python``.
    """

    def __init__(self, sandbox: str | Sandbox = "auto", python_timeout_s: float = 60.0,
                 memo: ExecutionMemo | None = None) -> None:
        self._sandbox_arg = sandbox
        self.memo = memo
        self._stale = False  # the sandbox holds files the mirror no longer has (after memo hits)
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
        self.files = dict(files)
        self._dirty = set(files)
        # A sandbox passed in is emptied before its next program run, not now: a run that runs no
        # program (or only memoised ones) costs no sandbox call.
        self._stale = self._sandbox is not None
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
        key = workspace_key(self.files, path) if self.memo is not None else ""
        if self.memo is not None:
            found = self.memo.program(key)
            if found is not None:  # the same program on the same files: its recorded outcome
                self.python_runs += 1
                self.files, self._stale = found[1], True
                return found[0]
        text, unrepeatable = self._run_python(path)
        if self.memo is not None and not unrepeatable:
            self.memo.store_program(key, text, self.files)
        return text

    def _run_python(self, path: str) -> tuple[str, bool]:
        """(observation, whether the outcome may differ on a rerun: a timeout or a failed read-back)."""
        sandbox = self._open()
        if self._stale:  # memo hits moved the mirror on: bring the sandbox level with it
            if not _clear_host_side(sandbox):
                sandbox.exec(["sh", "-c", "find . -mindepth 1 -delete"], timeout=30)
            self._dirty, self._stale = set(self.files), False
        if self._dirty:
            sandbox.write_files({p: self.files[p] for p in sorted(self._dirty) if p in self.files})
            self._dirty.clear()
        self.python_runs += 1
        result = sandbox.exec(["python3", path], timeout=self.python_timeout_s)
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        ran = f"ran {path}: {status}\nstdout:\n{result.stdout[-1500:]}\nstderr:\n{result.stderr[-1500:]}"
        listing, problem = self._list(sandbox)
        if listing is None:
            # What the program left cannot be read back: the program's doing, so the agent's error
            # (an error observation), never an env failure; the mirror keeps its last good state.
            return (f"Error: after {path} ran, its workspace could not be read back ({problem}); leave at most "
                    f"{MAX_FILES} top-level files of at most {MAX_FILE_CHARS} chars, "
                    f"{MAX_TOTAL_CHARS} in all\n{ran}"), True
        left, kept = listing["files"], set(listing["kept"])
        if not listing["truncated"]:
            for name in set(self.files) - set(left) - kept:
                del self.files[name]  # the program deleted it
        for name, text in left.items():
            if PATH_PATTERN.match(name) and (name in self.files or len(self.files) < MAX_FILES):
                self.files[name] = text
        note = ""
        if kept or listing["truncated"]:
            shown = ", ".join(sorted(kept)[:10]) + (" ..." if len(kept) > 10 or listing["truncated"] else "")
            note = (f"\nnot copied back (over {MAX_FILE_CHARS} chars each, {MAX_FILES} files or "
                    f"{MAX_TOTAL_CHARS} chars in all): {shown}")
        return f"{ran}{note}\nfiles now: {', '.join(sorted(self.files))}", bool(result.timed_out)

    def _list(self, sandbox: Sandbox) -> tuple[dict[str, Any] | None, str]:
        """(the listing, "") or (None, what went wrong); see ``_COLLECT``."""
        cap = min(int(getattr(getattr(sandbox, "limits", None), "output_bytes", 1_000_000)), 1_000_000)
        text = _collect_host_side(sandbox, cap)
        if text is None:
            argv = ["python3", "-I", "-c", _COLLECT, str(cap - 1024), str(MAX_FILE_CHARS), str(MAX_FILES),
                    str(MAX_TOTAL_CHARS), str(MAX_SCAN)]
            listing = sandbox.exec(argv, timeout=30)
            if listing.timed_out:
                return None, "the listing timed out"
            if listing.exit_code != 0:
                return None, f"the listing failed with exit code {listing.exit_code}: {listing.stderr[-200:].strip()}"
            if listing.output_truncated:
                return None, "the listing was larger than the sandbox's output limit"
            text = listing.stdout
        try:
            value = json.loads(text)
        except ValueError as exc:
            return None, f"the listing was not JSON: {exc}"
        if not (isinstance(value, dict) and all(k in value for k in _LISTING_SCHEMA_KEYS)
                and isinstance(value["files"], dict) and isinstance(value["kept"], list)
                and all(isinstance(v, str) for v in value["files"].values())):
            return None, "the listing had an unexpected shape"
        return value, ""

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


def _local_work_dir(sandbox: Sandbox) -> str | None:
    """The host path of a local sandbox's work dir (its programs run as this user, on this host), else None.

    For such a sandbox the workspace lists and clears the work dir in this process instead of
    starting a process for each: the same ``collect`` function, so the same listing; a listing
    that fails here is done in the sandbox as before, so its error reads as it would.
    """
    if not HOST_SIDE_LOCAL or getattr(sandbox, "provider", None) != "local":
        return None
    work_dir = getattr(sandbox, "work_dir", None)
    return work_dir if isinstance(work_dir, str) and os.path.isdir(work_dir) else None


def _collect_host_side(sandbox: Sandbox, cap: int) -> str | None:
    """``collect``'s JSON text for a local sandbox, run in this process; None to run it in the sandbox
    (not a local sandbox, or the function failed: the sandboxed run then reports it in its words)."""
    host = _local_work_dir(sandbox)
    if host is None:
        return None
    try:
        text = _HOST_COLLECT["collect"](host, cap - 1024, MAX_FILE_CHARS, MAX_FILES, MAX_TOTAL_CHARS, MAX_SCAN)
    except Exception:  # noqa: BLE001
        return None
    return text if isinstance(text, str) and len(text.encode()) < cap else None


def _clear_host_side(sandbox: Sandbox) -> bool:
    """Empty a local sandbox's work dir from this process (links removed, never followed); False
    (nothing promised) when it is not a local sandbox or something could not be removed."""
    host = _local_work_dir(sandbox)
    if host is None:
        return False
    try:
        with os.scandir(host) as it:
            entries = list(it)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
    except OSError:
        return False
    return True
