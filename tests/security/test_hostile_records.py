"""Hostile records, names and scenario files (issue 27, items 5 and 8): each one that crashed a
reader, broke a page or hung the loader, now read, escaped or refused in one line.

* non-finite numbers: an infinite step reward and grade, a ``NaN`` seed: view, exports (parquet,
  inspect), report and analyses handle them; the view's data stays strict JSON;
* names: an agent id with ``$`` (matplotlib mathtext), with ``|`` and a line break (a fake heading
  in report.md), with Markdown links and images (rendered by the viewer);
* YAML: a 1.3 KB "billion laughs" in ``params``, a 100,000-digit integer, a 5,000-deep list;
* small: ToolUse ``snapshot()`` after bytearray/range/complex/set arguments, a malformed percent
  escape in the viewer's URL fragment, ``export --format inspect`` to a name without ``.eval`` (a folder).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import gymnasium as gym
import pytest

import rsigym.envs  # noqa: F401  (registers the ids)
from rsigym.cli import main
from rsigym.records.jsonl import RecordWriter, read_records
from rsigym.records import Grade, Step, canonical_json
from rsigym.report import write_report
from rsigym.viewer import write_view
from tests.conftest import rsigym_cmd, write_scenario
from tests.core.test_records import make_record


def _cli(*argv: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*rsigym_cmd(), *argv], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def _strict(text: str):
    """JSON as a browser's ``JSON.parse`` reads it: NaN and Infinity are errors."""
    def refuse(constant: str):
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def _view_data(page: Path):
    blob = re.search(r'<script id="rsigym-data" type="application/json">(.*?)</script>', page.read_text(), re.S)
    assert blob, "no data block in the page"
    return _strict(blob.group(1))


def _infinite_run(tmp_path: Path) -> Path:
    record = make_record(0)
    record.steps = [Step(0, {"text": "go"}, {"guess": 1}, math.inf, False, False),
                    Step(1, {"text": "go"}, {"guess": 2}, -math.inf, True, False, {"x": math.nan})]
    record.grades = [Grade("probe_answer", "1", math.inf), Grade("probe_efficiency", "1", math.nan)]
    run = tmp_path / "run"
    with RecordWriter(run / "records.jsonl") as writer:
        writer.write(record)
        writer.write(make_record(1))
    return run


def test_an_infinite_reward_is_stored_as_a_marker_and_read_back_as_a_float(tmp_path):
    run = _infinite_run(tmp_path)
    for line in (run / "records.jsonl").read_text().splitlines():
        _strict(line)  # strict JSON on disk
    record = read_records(run / "records.jsonl", strict=True).records[0]
    assert record.steps[0].reward == math.inf and record.steps[1].reward == -math.inf
    assert record.grades[0].score == math.inf and math.isnan(record.grades[1].score)


def test_view_exports_and_report_read_an_infinite_reward(tmp_path):
    run = _infinite_run(tmp_path)
    data = _view_data(write_view(run))
    table = data["table"]
    reward = table["rows"][0][table["fields"].index("reward")]
    assert reward in ("nan", "inf", "-inf")  # inf + -inf is nan: a marker either way
    assert main(["export", str(run), "--format", "parquet"]) == 0
    assert main(["export", str(run), "--format", "inspect"]) == 0
    assert main(["export", str(run), "--format", "jsonl"]) == 0
    assert main(["report", str(run)]) == 0
    assert "(failed)" not in (run / "report.md").read_text()
    import pandas

    frame = pandas.read_parquet(run / "export.parquet")
    assert math.inf in set(frame["score"])
    from inspect_ai.log import read_eval_log

    assert sum(len(read_eval_log(str(p)).samples) for p in (run / "export_inspect").glob("*.eval")) == 2


def test_a_nan_seed_line_is_set_aside_and_the_view_stays_strict_json(tmp_path):
    run = tmp_path / "run"
    with RecordWriter(run / "records.jsonl") as writer:
        writer.write(make_record(0))
    good = (run / "records.jsonl").read_text()
    hostile = good.replace('"seed":0', '"seed":NaN', 1)
    assert hostile != good
    (run / "records.jsonl").write_text(good + hostile + good.replace('"rep":0', '"rep":Infinity', 1))
    result = read_records(run / "records.jsonl")
    assert len(result.records) == 1 and result.bad_lines == [2, 3]
    data = _view_data(write_view(run))
    assert len(data["table"]["rows"]) == 1


def _graded(agent_id: str, seed: int, score: float):
    record = make_record(seed)
    record.agent = type(record.agent)(agent_id, "probe_bisect")
    record.grades = [Grade("probe_answer", "1", score)]
    return record


def test_a_mathtext_agent_id_does_not_break_the_summary_plot(tmp_path):
    errors: list[str] = []
    records = [_graded("a$^$b", 0, 1.0), _graded("a$^$b", 1, 0.0), _graded(r"$\frac{", 2, 1.0)]
    report = write_report(tmp_path, records, ["summary"], errors=errors)
    assert errors == [] and "(failed)" not in report.read_text()
    assert list(tmp_path.glob("summary_*.png"))


def test_a_pipe_and_newline_in_an_id_add_no_heading_or_cell_to_the_report(tmp_path):
    records = [_graded("x|y\n# Forged verdict: all good", 0, 1.0), _graded("plain", 1, 0.0)]
    text = write_report(tmp_path, records, ["summary"]).read_text()
    assert not [line for line in text.splitlines() if line.startswith("# Forged")]
    lines = text.splitlines()
    header = lines.index("| agent | condition | n | mean | CI low | CI high | grader errors |")
    rows = lines[header + 2:lines.index("", header)]
    assert len(rows) == 2 and all(row.replace("\\|", "").count("|") == lines[header].count("|") for row in rows)


def test_the_viewer_renders_no_link_or_image_from_an_agent_id(tmp_path):
    run = tmp_path / "run"
    attack = "[click](http://attacker.example/x) ![pixel](http://attacker.example/p.png)"
    with RecordWriter(run / "records.jsonl") as writer:
        writer.write(_graded(attack, 0, 1.0))
    write_report(run, read_records(run / "records.jsonl").records, ["summary"])
    page = write_view(run).read_text()
    report = page[page.index('id="report"'):] if 'id="report"' in page else page
    assert "<a href" not in report and 'src="http' not in report
    assert "data:image/png;base64" in page  # the report's own plot is still inlined


def _scenario_with(tmp_path: Path, params_yaml: str) -> Path:
    base = write_scenario(tmp_path / "base.yaml", agents=[{"id": "r", "kind": "random"}])
    text = base.read_text().replace("agents:\n- id: r\n  kind: random\n",
                                    "agents:\n- id: r\n  kind: random\n  params:\n" + params_yaml)
    assert text != base.read_text()
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    return path


BILLION_LAUGHS = "    lol: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"    l{i}: &{chr(97 + i)} [*{chr(96 + i)},*{chr(96 + i)},*{chr(96 + i)},*{chr(96 + i)},*{chr(96 + i)},"
    f"*{chr(96 + i)},*{chr(96 + i)},*{chr(96 + i)},*{chr(96 + i)}]\n" for i in range(1, 9))


@pytest.mark.parametrize("params_yaml, message", [
    (BILLION_LAUGHS, "expands to more than"),
    ("    n: " + "7" * 100_000 + "\n", "an integer of 100000 digits"),
    ("    deep: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than"),
], ids=["billion-laughs", "100000-digit-int", "5000-deep-list"])
def test_hostile_yaml_in_params_is_one_line_and_exit_2(tmp_path, params_yaml, message):
    path = _scenario_with(tmp_path, params_yaml)
    assert len(BILLION_LAUGHS) < 1400
    result = _cli("run", str(path), "--dry-run", "--out", str(tmp_path / "out"), cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize("argument", [bytearray(b"\x00ab"), range(3), complex(1, 2), {complex(0, 1), 2},
                                      {"inner": bytearray(b"x")}, [range(2)]],
                         ids=["bytearray", "range", "complex", "set-of-complex", "nested-bytearray", "list-of-range"])
def test_tooluse_snapshot_serialises_after_python_object_arguments(argument):
    env = gym.make("rsigym/ToolUse-v0", domain="retail").unwrapped
    env.reset(seed=0)
    tool = env.tools[0]["function"]
    name = next(iter(tool["parameters"]["properties"]))
    env.step({"tool": tool["name"], "arguments": {name: argument}})
    json.loads(canonical_json(env.snapshot()))


def test_inspect_export_to_a_name_without_suffix_is_a_folder_of_logs_inspect_can_open(tmp_path, capsys):
    run = tmp_path / "run"
    with RecordWriter(run / "records.jsonl") as writer:
        writer.write(make_record(0))
    assert main(["export", str(run), "--format", "inspect", "--out", str(tmp_path / "mylog")]) == 0
    written = Path(capsys.readouterr().out.strip().removeprefix("export: "))
    from inspect_ai.log import read_eval_log

    logs = list(written.glob("*.eval"))
    assert written.is_dir() and len(logs) == 1 and len(read_eval_log(str(logs[0])).samples) == 1
    assert main(["export", str(run), "--format", "inspect", "--out", str(tmp_path / "one.eval")]) == 2


def test_a_malformed_percent_escape_in_the_fragment_keeps_the_filters_working(tmp_path):
    from tests.core.test_viewer import _browse, _parse

    run = tmp_path / "run"
    with RecordWriter(run / "records.jsonl") as writer:
        writer.write(make_record(0))
        writer.write(make_record(1))
    page = write_view(run)
    dom, _ = _browse(page, "q=%E0%A4%A&agent=bisect", tmp_path)
    parsed = _parse(dom)
    assert parsed.body.get("data-ready") == "1", dom[-2000:]
    assert 'data-shown="0"' in dom  # the query filter applied (as typed), nothing matches it
    dom, _ = _browse(page, "agent=%E0%A4%A", tmp_path)
    assert _parse(dom).body.get("data-ready") == "1" and 'data-shown="0"' in dom
