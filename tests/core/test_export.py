"""Export: records_frame (one row per episode and grade), parquet, self-contained JSONL, inspect_ai."""

from __future__ import annotations

import json
import math
import sys

import pytest

import rsigym
from rsigym.cli import main
from rsigym.errors import UserError
from rsigym.export import FRAME_COLUMNS, export_run, records_frame
from rsigym.jsonl import RecordWriter, read_records
from rsigym.records import AgentSpec, EnvRef, Grade, Step, Trajectory, Usage

POLICY = "".join(f"rule {i}: confirm every change with the user first.\n" for i in range(100))


def _records() -> list[Trajectory]:
    def record(key, agent, condition, grades, termination="agent_stop", error=None):
        steps = [Step(0, {"text": POLICY + "User: hello"}, {"tool": "lookup", "arguments": {"id": 1}}, 0.0, False, False),
                 Step(1, {"text": "found"}, {"message": "bye"}, 1.0, True, False)]
        return Trajectory(episode_key=key, env=EnvRef("rsigym/Probe-v0", task_id="t1", condition=condition),
                          agent=AgentSpec(agent, "llm", "rsigym/oracle"), seed=0, rep=0,
                          steps=steps if termination != "infra_error" else [], termination=termination, error=error,
                          usage=Usage(prompt_tokens=7, completion_tokens=3, cost_usd=0.002), grades=grades)

    return [
        record("k1", "a", None, [Grade("reward", "1", 1.0), Grade("judge", "2", None, error="judge down")]),
        record("k2", "a", {"name": "rename_tools", "params": {}}, [Grade("reward", "1", 0.0, details={"why": "x"})]),
        record("k3", "b", None, [], termination="infra_error", error="sandbox gone"),
    ]


@pytest.fixture()
def run_dir(tmp_path):
    with RecordWriter(tmp_path / "records.jsonl") as writer:
        for record in _records():
            writer.write(record)
    return tmp_path


def test_records_frame_has_one_row_per_episode_and_grade(run_dir):
    import pandas

    frame = rsigym.records_frame(run_dir)
    assert list(frame.columns) == list(FRAME_COLUMNS)
    assert len(frame) == 2 + 1 + 1  # two grades, one grade, and an ungraded episode on one row
    k1 = frame[frame.episode_key == "k1"].set_index("grader")
    assert k1.loc["reward", "score"] == 1.0 and k1.loc["reward", "grader_version"] == "1"
    assert math.isnan(k1.loc["judge", "score"]) and k1.loc["judge", "grade_error"] == "judge down"
    k3 = frame[frame.episode_key == "k3"].iloc[0]
    assert k3.termination == "infra_error" and pandas.isna(k3.grader) and math.isnan(k3.score)
    assert set(frame.condition) == {"none", "rename_tools"} and frame.cost_usd.sum() == pytest.approx(0.008)
    assert records_frame(read_records(run_dir / "records.jsonl").records).equals(records_frame(run_dir / "records.jsonl"))


def test_parquet_and_jsonl_exports_read_back(run_dir, tmp_path):
    import pandas

    parquet = export_run(run_dir, "parquet", tmp_path / "out" / "r.parquet")
    assert pandas.read_parquet(parquet).shape == (4, len(FRAME_COLUMNS))
    assert main(["export", str(run_dir), "--format", "jsonl"]) == 0
    text = (run_dir / "export.jsonl").read_text()
    assert '"rsigym:' not in text and json.dumps(POLICY)[1:-1] in text  # self-contained: references resolved
    assert [json.loads(line) for line in text.splitlines()] == [r.to_dict() for r in read_records(run_dir / "records.jsonl")]


def test_inspect_export_is_read_by_inspect_ai(run_dir, tmp_path):
    log_module = pytest.importorskip("inspect_ai.log")  # the 'inspect' extra; in the test extras
    path = export_run(run_dir, "inspect", tmp_path / "run.eval")
    log = log_module.read_eval_log(str(path))
    assert log.status == "success" and len(log.samples) == 3
    samples = {s.id: s for s in log.samples}
    assert samples["k1"].scores["reward"].value == 1.0 and samples["k1"].scores["judge"].value == "error"
    assert samples["k1"].scores["reward"].metadata["version"] == "1"
    assert samples["k2"].metadata["condition"] == "rename_tools" and len(samples["k2"].messages) == 4
    assert samples["k3"].error is not None and "sandbox gone" in samples["k3"].error.message
    means = {s.name: s.metrics["mean"].value for s in log.results.scores}
    assert means == {"reward": 0.5}  # a grader error is no score


def test_missing_extras_are_one_clear_line(run_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(UserError, match=r"rsigym\[export\]"):
        export_run(run_dir, "parquet")
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    with pytest.raises(UserError, match=r"rsigym\[inspect\]"):
        export_run(run_dir, "inspect")
    with pytest.raises(UserError, match="no records.jsonl"):
        records_frame(run_dir / "nowhere")
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(UserError, match=r"rsigym\[export\]"):
        records_frame(run_dir)
