"""``rsigym view``: one static, offline HTML file for a run folder.

The page holds everything it shows (no server, no network, no CDN; CSS and JavaScript inline,
plots as data URIs): the run summary and the report's sections, a filterable episode table, each
episode's transcript and, where the run has an unmodified condition and others, the paired view
of baseline and treatment side by side with the steps whose behaviour differs highlighted.

Transcripts travel in the page compacted as on disk (``rsigym.shared_text``: what episodes share
is stored once) and are expanded by the page's script when shown, so the file stays near the size
of the run folder. The filter reads the URL's fragment (``#agent=...&condition=...&task=...&q=...``,
plus ``episode=N`` or ``pair=N`` to open one), so a view can be linked and tested.
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
from ..records import Trajectory, to_jsonable
from ..redact import redact, redact_text
from ..report import condition_label
from .pairs import paired_episodes

__all__ = ["build_view", "write_view", "episode_rows"]

VIEW_FILE = "view.html"


def _latest_grades(record: Trajectory) -> dict[str, dict[str, Any]]:
    latest: dict[str, dict[str, Any]] = {}
    for grade in record.grades:
        latest[grade.grader] = {"score": grade.score, "version": grade.version, "source": grade.source,
                                "error": grade.error}
    return latest


def episode_rows(records: Sequence[Trajectory]) -> list[dict[str, Any]]:
    """One summary row per record: what the episode table shows and filters on."""
    rows = []
    for index, record in enumerate(records):
        rows.append({
            "i": index, "key": record.episode_key, "agent": record.agent.id,
            "model": record.agent.model, "condition": condition_label(record.env.condition),
            "task": str(record.env.task_id), "seed": record.seed, "rep": record.rep,
            "termination": record.termination, "error": record.error, "steps": len(record.steps),
            "reward": record.total_reward, "cost_usd": record.usage.cost_usd,
            "tokens": record.usage.prompt_tokens + record.usage.completion_tokens,
            "grades": _latest_grades(record),
        })
    return rows


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


def build_view(run_dir: str | Path, records: Sequence[Trajectory], *, title: str | None = None) -> str:
    """The HTML text of the viewer for ``records`` of the run folder ``run_dir``."""
    from ..shared_text import SharedText

    run_dir = Path(run_dir)
    store = SharedText(None)  # in memory: transcripts go in the page compacted, chunks once
    # redacted again: a run folder written by an older rsigym, or by hand, may still hold secrets
    transcripts = [store.compact(redact(record.to_dict())) for record in records]
    rows = redact(to_jsonable(episode_rows(records)))  # inf and NaN rewards become their markers
    graders = sorted({name for row in rows for name in row["grades"]})
    page_title = title or f"rsigym run: {_scenario_name(run_dir) or run_dir.resolve().name}"
    data = {
        "title": page_title,
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "graders": graders, "episodes": rows, "pairs": redact(to_jsonable(paired_episodes(records))),
        "transcripts": transcripts, "chunks": store.chunks,
    }
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


def _scenario_name(run_dir: Path) -> str | None:
    from ..safe_yaml import load_yaml

    try:
        raw = load_yaml((run_dir / "scenario.yaml").read_text(), "scenario.yaml")
    except (OSError, UnicodeDecodeError, UserError):
        return None
    name = raw.get("name") if isinstance(raw, dict) else None
    return f"{name} ({run_dir.resolve().name})" if isinstance(name, str) else None


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def write_view(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write the viewer of the run folder ``run_dir`` to ``out`` (default ``RUN_DIR/view.html``)."""
    from ..jsonl import read_records

    run_dir = Path(run_dir)
    records_path = run_dir / "records.jsonl"
    if not records_path.exists():
        raise UserError(f"no records.jsonl in {run_dir}; is it a run folder?")
    records = read_records(records_path).records
    target = Path(out) if out is not None else run_dir / VIEW_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(build_view(run_dir, records), encoding="utf-8")
    return target
