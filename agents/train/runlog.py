"""Per-step metrics: one JSON object per line, and PNG plots of the curves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any


class JsonlLog:
    """Appends one JSON object per ``write``; a no-op when ``path`` is empty."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w")

    def write(self, record: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(record) + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def plot_curves(curves: dict[str, list[dict[str, Any]]], keys: list[str], path: str | Path,
                title: str = "") -> Path:
    """One panel per metric in ``keys``; one line per named run (``{label: per-step records}``).

    A run with several seeds can be passed as ``label/seed`` names; lines sharing a label share a colour.
    """
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 3.4), squeeze=False)
    labels = sorted({name.split("/")[0] for name in curves})
    colours = {label: f"C{index}" for index, label in enumerate(labels)}
    for axis, key in zip(axes[0], keys):
        seen: set[str] = set()
        for name, records in curves.items():
            points = [(r["step"], r[key]) for r in records if r.get(key) is not None]
            if not points:
                continue
            label = name.split("/")[0]
            axis.plot(*zip(*points), color=colours[label], alpha=0.8, linewidth=1.2,
                      label=None if label in seen else label)
            seen.add(label)
        axis.set_xlabel("step")
        axis.set_title(key)
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
