"""The viewer's behaviours (issue 33), each checked in headless Chromium on a tiny TRACE run: the
summary grid holds the report's means and links into a filtered, sorted table; score filters and
column sort; full-text search over transcripts; ``#episode=`` and ``#pair=`` links scroll to and
open their target; the pair view shows the names the agent saw and the original names and
highlights only real differences; no overlap at 1,400 px; a sidecar view loads transcripts and
the search index from its folder.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from rsigym.records.jsonl import read_records
from rsigym.viewer import sidecar_dir, write_view
from rsigym.viewer.pairs import NO_SUCH_TOOL, paired_episodes, renamed_to_original
from rsigym.viewer.search_index import tokens_of
from tests.core.test_export import _report_means
from tests.core.test_viewer import _browse, _console_lines, trace_run  # noqa: F401  (a fixture)

# Measures the page after its script ran (and after a sidecar load), into an attribute the DOM dump
# shows: the scroll position, where the opened target is, and every overlap between the two sides
# of the pair view or past the window's width.
PROBE = """<script>setTimeout(function () {
  var out = {y: scrollY, h: innerHeight, w: innerWidth, page_w: document.documentElement.scrollWidth};
  var opened = document.body.getAttribute("data-opened") || "";
  var node = opened.indexOf("pair:") === 0 ? document.getElementById("pair-view")
           : document.getElementById("transcript-section");
  out.target_top = node ? node.getBoundingClientRect().top : null;
  var sides = document.querySelectorAll("#pair-view > .side"), bad = [];
  if (sides.length === 2) {
    var edge = sides[1].getBoundingClientRect().left;
    sides[0].querySelectorAll("*").forEach(function (n) {
      var r = n.getBoundingClientRect();
      if (r.width && r.right > edge + 0.5) bad.push(n.tagName + "." + n.className + " " + r.right + ">" + edge);
    });
    sides[1].querySelectorAll("*").forEach(function (n) {
      var r = n.getBoundingClientRect();
      if (r.width && r.right > innerWidth + 0.5) bad.push(n.tagName + "." + n.className + " " + r.right + ">" + innerWidth);
    });
  }
  out.overlaps = bad.slice(0, 5); out.overlap_count = bad.length;
  document.body.setAttribute("data-probe", JSON.stringify(out));
}, 1500);</script></body>"""


class _Page(HTMLParser):
    """Rows of the episode table with their cells' text, grid links, the body's attributes, and
    the pair view's highlighted steps and shown names."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict] = []
        self.grid: list[dict] = []
        self.body: dict = {}
        self.diff_steps = 0
        self.mapped: list[str] = []
        self.heads: list[str] = []
        self._table = self._cell = self._code = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id")
        elif tag == "body":
            self.body = a
        elif tag == "tr" and self._table == "episode-table" and "data-episode" in a:
            self.rows.append({"i": int(a["data-episode"]), "agent": a["data-agent"],
                              "condition": a["data-condition"], "cells": []})
        elif tag == "td" and self._table == "episode-table" and self.rows:
            self._cell = ""
        elif tag == "th" and self._table == "episode-table":
            self._cell = ""
        elif tag == "a" and "data-rule" in a:
            self.grid.append(a)
        elif tag == "div" and "diff" in (a.get("class") or "").split():
            self.diff_steps += 1
        elif tag == "code" and a.get("class") == "mapped-name":
            self._code = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        if self._code is not None:
            self._code += data

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag == "td" and self._cell is not None:
            self.rows[-1]["cells"].append(self._cell)
            self._cell = None
        elif tag == "th" and self._cell is not None:
            self.heads.append(self._cell.rstrip(" \u25b2\u25bc"))
            self._cell = None
        elif tag == "code" and self._code is not None:
            self.mapped.append(self._code)
            self._code = None


def _open(page: Path, fragment: str, tmp_path: Path, *, probe: bool = False, width: int = 1400) -> _Page:
    if probe:
        probed = page.with_name(page.stem + "_probe.html")
        probed.write_text(page.read_text().replace("</body>", PROBE, 1))
        page = probed
    dom, log = _browse(page, fragment, tmp_path, f"--window-size={width},1000", "--dump-dom")
    parsed = _Page()
    parsed.feed(dom)
    assert parsed.body.get("data-ready") == "1" and "data-errors" not in parsed.body, log[-2000:]
    assert _console_lines(log) == [], _console_lines(log)
    return parsed


def _column(parsed: _Page, name: str) -> list[str]:
    index = parsed.heads.index(name)
    return [row["cells"][index] for row in parsed.rows]


@pytest.fixture(scope="module")
def view(trace_run, tmp_path_factory) -> Path:  # noqa: F811
    return write_view(trace_run, tmp_path_factory.mktemp("view") / "view.html")


def test_summary_grid_holds_the_reports_means_and_each_cell_opens_its_rows_sorted_by_that_score(trace_run, view, tmp_path):  # noqa: F811
    from rsigym.report import write_report
    from rsigym.scenario import load_scenario

    records = read_records(trace_run / "records.jsonl").records
    write_report(tmp_path, records, load_scenario(str(trace_run / "scenario.yaml")).analyses)
    report = _report_means((tmp_path / "report.md").read_text())
    parsed = _open(view, "", tmp_path)
    grid = {}
    for link in parsed.grid:
        state = dict(part.split("=", 1) for part in link["href"].lstrip("#").split("&"))
        grid[(link["data-rule"], state["agent"], state["condition"])] = (float(link["data-mean"]), link["href"])
    assert set(grid) == set(report) and len({mean for _, mean in report.values()}) > 1
    for key, (_, mean) in report.items():
        assert grid[key][0] == pytest.approx(mean, abs=5e-4), key

    # the cell of name_bound x misleading_names x reward: its rows only, sorted by reward, best first
    fragment = grid[("reward", "name_bound", "misleading_names")][1].lstrip("#")
    assert "sort=-g%3Areward" in fragment or "sort=-g:reward" in fragment
    opened = _open(view, fragment, tmp_path)
    expected = [i for i, r in enumerate(records) if r.agent.id == "name_bound" and r.env.condition["name"] == "misleading_names"]
    assert sorted(row["i"] for row in opened.rows) == expected


def test_score_filter_keeps_the_range_and_the_sort_orders_by_score_then_episode(trace_run, view, tmp_path):  # noqa: F811
    records = read_records(trace_run / "records.jsonl").records
    reward = {i: r.grade("reward").score for i, r in enumerate(records)}
    parsed = _open(view, "score=reward&min=0.5&sort=-i", tmp_path)
    kept = [i for i in sorted(reward, reverse=True) if reward[i] >= 0.5]
    assert [row["i"] for row in parsed.rows] == kept and 0 < len(kept) < len(records)
    parsed = _open(view, "score=reward&max=0.5", tmp_path)
    assert sorted(row["i"] for row in parsed.rows) == [i for i in sorted(reward) if reward[i] <= 0.5]

    parsed = _open(view, "sort=-g:action_match", tmp_path)
    scores = [float(s) for s in _column(parsed, "action_match")]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) > 1
    ties = [row["i"] for row, s in zip(parsed.rows, scores) if s == scores[0]]
    assert ties == sorted(ties)  # ties in record order: the same link shows the same order
    parsed = _open(view, "sort=task", tmp_path)
    tasks = _column(parsed, "task")
    assert tasks == sorted(tasks) and len(set(tasks)) == 2


def _episodes_with_word(records, word: str) -> list[int]:
    return [i for i, r in enumerate(records) if any(t.startswith(word) for t in tokens_of(json.dumps(r.to_dict())))]


def test_search_finds_words_that_only_the_transcripts_hold(trace_run, view, tmp_path):  # noqa: F811
    records = read_records(trace_run / "records.jsonl").records
    # a customer's name from one task's conversation: in no agent, condition, task or error name
    word = "jonas"
    expected = _episodes_with_word(records, word)
    assert 0 < len(expected) < len(records)
    assert all(word not in f"{r.agent.id} {r.env.task_id} {r.error}".lower() for r in records)
    parsed = _open(view, f"q={word.upper()[:4]}", tmp_path)  # a prefix, in capitals
    assert sorted(row["i"] for row in parsed.rows) == expected
    # two words: both must be there (a tool name only the misled agent's wrong calls reach, and jonas)
    both = sorted(set(expected) & set(_episodes_with_word(records, "name_bound")))
    parsed = _open(view, f"q={word}+name_bound", tmp_path)
    assert sorted(row["i"] for row in parsed.rows) == both and both
    assert _open(view, "q=zzqqxx", tmp_path).rows == []


def test_episode_and_pair_links_scroll_to_and_open_their_target(trace_run, view, tmp_path):  # noqa: F811
    records = read_records(trace_run / "records.jsonl").records
    last = len(records) - 1
    parsed = _open(view, f"episode={last}", tmp_path, probe=True)
    probe = json.loads(parsed.body["data-probe"])
    assert parsed.body.get("data-opened") == f"episode:{last}"
    assert probe["y"] > 0 and abs(probe["target_top"]) < 2  # the transcript's top at the window's top
    pair = len(paired_episodes(records)) - 1
    parsed = _open(view, f"pair={pair}", tmp_path, probe=True)
    probe = json.loads(parsed.body["data-probe"])
    assert parsed.body.get("data-opened") == f"pair:{pair}" and probe["y"] > 0 and abs(probe["target_top"]) < 2


def test_pair_view_shows_seen_and_original_names_and_highlights_only_real_differences(trace_run, view, tmp_path):  # noqa: F811
    records = read_records(trace_run / "records.jsonl").records
    pairs = paired_episodes(records)
    # role_binding under misleading names calls other names for the same tools: no difference
    same = next(n for n, p in enumerate(pairs) if p["agent"] == "role_binding" and p["task"] == "retail-000")
    treated = records[pairs[same]["treatment"]]
    assert pairs[same]["diff_steps"] == []
    assert any(s.action.get("tool") != b.action.get("tool")
               for s, b in zip(treated.steps, records[pairs[same]["baseline"]].steps) if isinstance(s.action, dict))
    parsed = _open(view, f"pair={same}", tmp_path, probe=True)
    assert parsed.diff_steps == 0 and parsed.mapped  # original names shown, nothing highlighted
    reverse = renamed_to_original(treated)
    assert parsed.mapped == [reverse[s.action["tool"]] for s in treated.steps
                             if isinstance(s.action, dict) and s.action.get("tool") in reverse]
    # name_bound: same names on both sides, other tools: each differing step highlighted on both sides
    changed = next(n for n, p in enumerate(pairs) if p["agent"] == "name_bound" and p["diff_steps"])
    parsed = _open(view, f"pair={changed}", tmp_path, probe=True)
    assert parsed.diff_steps == 2 * len(pairs[changed]["diff_steps"]) and set(pairs[changed]["diff_kinds"]) == {"tool"}
    assert parsed.mapped and NO_SUCH_TOOL not in parsed.mapped
    probe = json.loads(parsed.body["data-probe"])
    assert probe["overlap_count"] == 0, probe["overlaps"]  # at 1,400 px nothing crosses into the other side
    assert probe["page_w"] <= probe["w"]


def test_sidecar_view_keeps_transcripts_and_index_beside_a_small_page(trace_run, tmp_path):  # noqa: F811
    records = read_records(trace_run / "records.jsonl").records
    inline = write_view(trace_run, tmp_path / "inline.html", sidecar=False)
    page = write_view(trace_run, tmp_path / "view.html", sidecar=True)
    folder = sidecar_dir(page)
    assert sorted(p.name for p in folder.iterdir()) == ["chunks.js", "index.js", "t00000.js"]
    transcript_bytes = sum(p.stat().st_size for p in folder.iterdir())
    assert page.stat().st_size < inline.stat().st_size - 0.8 * transcript_bytes
    assert re.search(r'"transcripts":null', page.read_text())
    parsed = _open(page, "episode=3", tmp_path, probe=True)
    assert parsed.body.get("data-opened") == "episode:3"
    expected = _episodes_with_word(records, "jonas")
    assert sorted(row["i"] for row in _open(page, "q=jonas", tmp_path).rows) == expected
    # a view written small again takes its stale sidecar files away
    write_view(trace_run, tmp_path / "view.html", sidecar=False)
    assert not folder.exists()
