"""The on-disk cache for long computations (datasets, pretrained models, training trials).

Entries are keyed by a hash of their inputs, so a changed input is a new entry and never a stale
hit. The folder is ``$RSIGYM_CACHE`` (default ``~/.cache/rsigym``): the one environment variable
read below the CLI, because every process of a battery (local pool or Ray) must agree on it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from .records.trajectory import canonical_json

__all__ = ["cache_dir", "cache_key", "atomic_write_bytes"]


def cache_dir(*parts: str) -> Path:
    """``$RSIGYM_CACHE/<parts...>``, created if missing."""
    root = Path(os.environ.get("RSIGYM_CACHE") or Path.home() / ".cache" / "rsigym")
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(*inputs: Any) -> str:
    """A stable 20-hex-digit key of JSON-able inputs."""
    return hashlib.sha256(canonical_json(list(inputs)).encode()).hexdigest()[:20]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a cache file so a reader never sees half of it (temp file, fsync, rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
