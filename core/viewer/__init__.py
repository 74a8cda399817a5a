"""``rsigym view``: one static, offline HTML file for a run folder.

The page holds what it shows (no server, no network, no CDN; CSS and JavaScript inline, plots as
data URIs): at the top a summary grid (agent x condition x grader: mean, bootstrap CI and n, the
report's numbers), each cell a link into the episode table filtered to that cell and sorted by
that score; the table with filters (agent, condition, task, termination, a score range of one
grader, free text that searches the transcripts through an index built here) and a sort on any
column; each episode's transcript; where the run has an unmodified condition and others, the
paired view of baseline and treatment side by side, each tool call shown with the name the agent
saw and, under a renaming condition, the original name, and only steps whose mapped-back actions
differ highlighted; then the report.

Transcripts travel compacted as on disk (``rsigym.records.shared_text``) and are expanded by the page's
script when shown. Over ``SIDECAR_EPISODES`` episodes they go to a sidecar folder next to the page
(``view_files/``: blocks of ``BLOCK_EPISODES`` transcripts, the shared chunks and the search index,
each a script the page loads when it needs it), so the page itself holds only the tables. The
state lives in the URL's fragment (``#agent=...&condition=...&task=...&q=...&sort=-reward``,
``score=RULE&min=..&max=..``, plus ``episode=N`` or ``pair=N`` to open one and scroll to it), so
a view can be linked and tested.

It may import ``rsigym.records``, ``rsigym.report`` and ``rsigym.errors`` (the scenario inside a
function); only the CLI imports it.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from ..errors import UserError
from ..records.trajectory import Trajectory, to_jsonable
from ..records.redact import redact, redact_text
from .pairs import paired_episodes
from .rows import episode_rows, summary_grid
from .search_index import build_search_index

__all__ = ["build_view", "write_view", "episode_rows", "summary_grid", "SIDECAR_EPISODES", "BLOCK_EPISODES"]

VIEW_FILE = "view.html"
SIDECAR_EPISODES = 2000  # above this many episodes, transcripts go to the sidecar folder
BLOCK_EPISODES = 100     # transcripts per sidecar file: one opened episode loads ~1% of a 10k run


def sidecar_dir(page: Path) -> Path:
    """The sidecar folder of the page ``page`` (``view.html`` -> ``view_files``)."""
    return page.with_name(page.stem + "_files")


def _script(callback: str, *args: Any) -> str:
    body = ",".join(json.dumps(to_jsonable(a), ensure_ascii=False, separators=(",", ":")) for a in args)
    return f"{callback}({body});\n".replace("<", "\\u003c")


def _compact_pairs(records: Sequence[Trajectory]) -> list[list[Any]]:
    """[baseline, treatment, [differing step, ...], [what differs, ...], end state differs]."""
    return [[p["baseline"], p["treatment"], p["diff_steps"], p["diff_kinds"], int(p["state_changed"])]
            for p in redact(to_jsonable(paired_episodes(records)))]


def _report_html(run_dir: Path) -> str:
    """report.md rendered (raw HTML in it is escaped, not passed), its plots inlined."""
    path = run_dir / "report.md"
    if not path.exists():
        return ""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(redact_text(path.read_text()))
    for token in tokens:
        _links_as_text(token.children or [], run_dir)
    html = md.renderer.render(tokens, md.options, {})

    def inline(match: re.Match[str]) -> str:
        name = match.group(1)
        image = (run_dir / name).resolve()
        if image.parent != run_dir.resolve() or not image.is_file() or image.suffix.lower() != ".png":
            return match.group(0)  # only the report's own plots; nothing is fetched
        data = base64.b64encode(image.read_bytes()).decode()
        return f'src="data:image/png;base64,{data}"'

    return re.sub(r'src="([^"/]+)"', inline, html)


def _links_as_text(inline: list[Any], run_dir: Path) -> None:
    """No link and no image from a report's text (a name written unescaped by some analysis): a
    link keeps its text, an image becomes its alt text, except the report's own plots (a PNG file
    of the run folder, inlined below)."""
    for token in inline:
        if token.type in ("link_open", "link_close"):
            token.type, token.tag, token.nesting, token.attrs = "text", "", 0, {}
            token.content = ""
        elif token.type == "image":
            src = str(token.attrGet("src") or "")
            own_plot = "/" not in src and src.lower().endswith(".png") and (run_dir / src).is_file()
            if not own_plot:
                token.type, token.tag, token.attrs = "text", "", {}
                token.content = "[image: " + "".join(c.content for c in token.children or []) + "]"
                token.children = None


def build_view(run_dir: str | Path, records: Sequence[Trajectory], *, title: str | None = None,
               sidecar: Path | None = None) -> str:
    """The HTML text of the viewer for ``records`` of the run folder ``run_dir``.

    With ``sidecar`` (a folder, created or emptied of earlier viewer files), transcripts, shared
    chunks and the search index are written there and the page loads them when needed; without,
    everything is in the page.
    """
    from ..records.shared_text import SharedText

    run_dir = Path(run_dir)
    store = SharedText(None)  # in memory: transcripts go in the page compacted, chunks once
    # redacted again: a run folder written by an older rsigym, or by hand, may still hold secrets
    transcripts = [store.compact(redact(record.to_dict())) for record in records]
    index = build_search_index(transcripts, store.chunks)
    page_title = title or f"rsigym run: {_scenario_name(run_dir) or run_dir.resolve().name}"
    data: dict[str, Any] = {
        "title": page_title,
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "table": redact(to_jsonable(episode_rows(records))), "grid": redact(to_jsonable(summary_grid(records))),
        "pairs": _compact_pairs(records), "sidecar": None,
        "transcripts": transcripts, "chunks": store.chunks, "index": index,
    }
    if sidecar is not None:
        _write_sidecar(sidecar, transcripts, store.chunks, index)
        data.update(transcripts=None, chunks=None, index=None,
                    sidecar={"dir": sidecar.name, "block": BLOCK_EPISODES, "episodes": len(transcripts)})
    # "<" only ever appears inside JSON strings: escaped, no "</script>" or "<!--" can end the block
    blob = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    assets = resources.files(__name__)
    page = (assets / "page.html").read_text(encoding="utf-8")
    return (page.replace("/*CSS*/", (assets / "page.css").read_text(encoding="utf-8"))
            .replace("/*JS*/", (assets / "page.js").read_text(encoding="utf-8"))
            .replace("<!--TITLE-->", _escape(page_title))
            .replace("<!--REPORT-->", _report_html(run_dir) or "<p>No report.md in this folder "
                     "(<code>rsigym report RUN_DIR</code> writes one).</p>")
            .replace("<!--DATA-->", blob))


def _clear_sidecar(folder: Path) -> None:
    """Remove an earlier view's sidecar files (only those: a user's file there is kept)."""
    if not folder.is_dir():
        return
    for old in folder.glob("*.js"):
        if re.fullmatch(r"t\d{5}\.js|chunks\.js|index\.js", old.name):
            old.unlink()
    if not any(folder.iterdir()):
        folder.rmdir()


def _write_sidecar(folder: Path, transcripts: list[Any], chunks: dict[str, Any], index: dict[str, str]) -> None:
    _clear_sidecar(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for block, start in enumerate(range(0, len(transcripts), BLOCK_EPISODES)):
        (folder / f"t{block:05d}.js").write_text(
            _script("rsigymBlock", block, transcripts[start:start + BLOCK_EPISODES]), encoding="utf-8")
    (folder / "chunks.js").write_text(_script("rsigymChunks", chunks), encoding="utf-8")
    (folder / "index.js").write_text(_script("rsigymIndex", index), encoding="utf-8")


def _scenario_name(run_dir: Path) -> str | None:
    from ..scenario.safe_yaml import load_yaml

    try:
        raw = load_yaml((run_dir / "scenario.yaml").read_text(), "scenario.yaml")
    except (OSError, UnicodeDecodeError, UserError):
        return None
    name = raw.get("name") if isinstance(raw, dict) else None
    return f"{name} ({run_dir.resolve().name})" if isinstance(name, str) else None


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def write_view(run_dir: str | Path, out: str | Path | None = None, *, sidecar: bool | None = None) -> Path:
    """Write the viewer of the run folder ``run_dir`` to ``out`` (default ``RUN_DIR/view.html``).

    ``sidecar``: transcripts in the sidecar folder ``OUT_files`` (True), in the page (False), or
    in the sidecar when the run has more than ``SIDECAR_EPISODES`` episodes (None).
    """
    from ..records.jsonl import read_records

    run_dir = Path(run_dir)
    records_path = run_dir / "records.jsonl"
    if not records_path.exists():
        raise UserError(f"no records.jsonl in {run_dir}; is it a run folder?")
    records = read_records(records_path).records
    target = Path(out) if out is not None else run_dir / VIEW_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    use_sidecar = len(records) > SIDECAR_EPISODES if sidecar is None else sidecar
    folder = sidecar_dir(target)
    target.write_text(build_view(run_dir, records, sidecar=folder if use_sidecar else None), encoding="utf-8")
    if not use_sidecar:  # a stale sidecar of an earlier, bigger view
        _clear_sidecar(folder)
    return target
