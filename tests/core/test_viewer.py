"""``rsigym view``: one offline HTML file, checked in headless Chromium (Debian's ``chromium``).

The page must load without console errors, its filter (driven by the URL fragment, as a user's
link would) must hide exactly the rows that do not match, the paired view must show baseline and
treatment side by side with differing steps highlighted, and a screenshot must come out. Without
Chromium these tests skip, except under ``RSIGYM_REQUIRE_DOCKER=1`` (CI, which installs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from rsigym.cli import main
from rsigym.records.jsonl import RecordWriter, read_records
from rsigym.records import AgentSpec, EnvRef, Step, Trajectory
from rsigym.runner import run_scenario
from rsigym.scenario import load_scenario
from rsigym.viewer import write_view
from rsigym.viewer.pairs import paired_episodes

CHROMIUM_TIMEOUT_S = 180


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("RSIGYM_REQUIRE_DOCKER") == "1":  # CI installs chromium: never skip there
        pytest.fail("RSIGYM_REQUIRE_DOCKER=1 but no chromium on PATH (.ci/run installs Debian's chromium)")
    pytest.skip("headless Chromium is not installed (apt-get install chromium)")


def _browse(html: Path, fragment: str, tmp_path: Path, *extra: str) -> tuple[str, str]:
    """(DOM after the page's script ran, Chromium's log) of ``html#fragment``; virtual time lets
    the scripts the page loads from its sidecar folder and its timers run before the dump."""
    result = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=10000", *(extra or ("--dump-dom",)), f"{html.resolve().as_uri()}#{fragment}"],
        capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S)
    return result.stdout, result.stderr


def _console_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if ":CONSOLE" in line]  # console.* and uncaught errors


class _Rows(HTMLParser):
    """The rows of one table body (by table id) with their attributes."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.inside, self.rows = table_id, False, []
        self.body: dict[str, str | None] = {}
        self.sides: list[dict[str, str | None]] = []
        self.diff_steps = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.inside = a.get("id") == self.table_id
        elif tag == "tr" and self.inside and "data-episode" in a or tag == "tr" and self.inside and "data-pair" in a:
            self.rows.append(a)
        elif tag == "body":
            self.body = a
        elif tag == "div" and (a.get("class") or "").split()[:1] == ["side"]:
            self.sides.append(a)
        elif tag == "div" and "diff" in (a.get("class") or "").split():
            self.diff_steps += 1

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False


def _parse(dom: str, table_id: str = "episode-table") -> _Rows:
    parser = _Rows(table_id)
    parser.feed(dom)
    return parser


@pytest.fixture(scope="module")
def trace_run(tmp_path_factory) -> Path:
    """A tiny TRACE battery: 2 tasks x 2 agents x identity / misleading names, in this process."""
    folder = tmp_path_factory.mktemp("trace-view")
    scenario = load_scenario("trace_quickstart")
    raw = dict(scenario.raw, tasks=["retail-000", "retail-001"], conditions=["identity", "misleading_names"],
               agents=[{"id": "role_binding", "kind": "role_binding"}, {"id": "name_bound", "kind": "name_bound"}],
               reps=1, analyses=["summary"])
    (folder / "scenario.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    run_scenario(load_scenario(str(folder / "scenario.yaml")), folder / "run", workers=0, progress=False)
    return folder / "run"


def test_view_is_one_offline_file(trace_run, tmp_path):
    assert main(["view", str(trace_run), "--out", str(tmp_path / "v.html")]) == 0
    html = (tmp_path / "v.html").read_text()
    assert "Content-Security-Policy" in html and "default-src 'none'" in html  # the browser fetches nothing
    for reference in ("<script src", "<link", "http://", "https://"):
        assert reference not in html.replace("http://www.w3.org", "")
    records = read_records(trace_run / "records.jsonl").records
    assert len(html) < 3 * sum(len(r.to_json()) for r in records)  # transcripts travel compacted


def test_pairs_join_baseline_and_treatment_and_find_the_changed_steps(trace_run):
    records = read_records(trace_run / "records.jsonl").records
    pairs = paired_episodes(records)
    assert len(pairs) == 4  # 2 tasks x 2 agents, one treatment
    by_agent = {(p["agent"], p["task"]): p for p in pairs}
    # misleading names: the name-bound agent calls the wrong tools, the role-binding one does not
    assert by_agent[("name_bound", "retail-000")]["changed"] and by_agent[("name_bound", "retail-000")]["diff_steps"]
    assert not by_agent[("role_binding", "retail-000")]["changed"]


def test_viewer_loads_filters_pairs_and_screenshots_in_headless_chromium(trace_run, tmp_path):
    page = write_view(trace_run, tmp_path / "view.html")
    records = read_records(trace_run / "records.jsonl").records

    dom, log = _browse(page, "", tmp_path)
    rows = _parse(dom)
    assert rows.body.get("data-ready") == "1" and "data-errors" not in rows.body, log[-2000:]
    assert _console_lines(log) == []
    assert len(rows.rows) == len(records) and not any("hidden" in r for r in rows.rows)

    dom, log = _browse(page, "agent=name_bound&condition=misleading_names", tmp_path)
    rows = _parse(dom)
    shown = rows.rows  # only the rows that match are rendered
    assert _console_lines(log) == [] and rows.body.get("data-ready") == "1"
    assert len(shown) == 2 and {(r["data-agent"], r["data-condition"]) for r in shown} == {("name_bound", "misleading_names")}
    assert sum(r.env.condition["name"] == "misleading_names" and r.agent.id == "name_bound" for r in records) == 2
    assert 'data-shown="2"' in dom

    changed = next(n for n, p in enumerate(paired_episodes(records)) if p["diff_steps"])
    dom, log = _browse(page, f"pair={changed}", tmp_path)
    view = _parse(dom, "pair-table")
    assert _console_lines(log) == []
    assert len(view.sides) == 2  # baseline and treatment, side by side
    assert view.diff_steps >= 2  # the differing steps highlighted on both sides

    shot = tmp_path / "view.png"
    _, log = _browse(page, f"pair={changed}", tmp_path, "--hide-scrollbars", "--window-size=1400,1800",
                     f"--screenshot={shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000, log[-2000:]


def test_record_text_never_becomes_markup(tmp_path):
    """An agent's output is shown as text: markup in it runs nothing, even a closing script tag."""
    attack = '</script><script>document.body.setAttribute("data-pwned","1")</script>' \
             '<img src=x onerror="document.body.setAttribute(\'data-pwned\',\'2\')">'
    record = Trajectory(episode_key="k" * 32, env=EnvRef("rsigym/Probe-v0", task_id=attack),
                        agent=AgentSpec(attack, "scripted"), seed=0, rep=0,
                        steps=[Step(0, {"text": attack * 40}, {"message": attack}, 0.0, True, False)])
    with RecordWriter(tmp_path / "run" / "records.jsonl") as writer:
        writer.write(record)
    page = write_view(tmp_path / "run", tmp_path / "view.html")
    dom, log = _browse(page, "episode=0", tmp_path)
    body = _parse(dom).body
    assert body.get("data-ready") == "1" and "data-pwned" not in body and _console_lines(log) == []
    assert "data-pwned" in dom  # the text is there, shown as text


def test_view_of_a_folder_without_records_is_one_line(tmp_path, capsys):
    assert main(["view", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "records.jsonl" in err
