"""Export: records_frame (one row per episode and grade), parquet, self-contained JSONL, inspect_ai."""

from __future__ import annotations

import json
import math
import sys

import pytest

import rsigym
from rsigym.cli import main
from rsigym.errors import UserError
from rsigym.report.export import FRAME_COLUMNS, export_run, records_frame
from rsigym.records.jsonl import RecordWriter, read_records
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
    folder = export_run(run_dir, "inspect", tmp_path / "logs")
    logs = {(log.eval.metadata["agent"], log.eval.metadata["condition"]): log
            for log in map(log_module.read_eval_log, map(str, sorted(folder.glob("*.eval"))))}
    assert sorted(logs) == [("a", "none"), ("a", "rename_tools"), ("b", "none")]  # one log per agent x condition
    k1 = logs[("a", "none")].samples[0]
    assert k1.id == "t1 seed 0" and k1.epoch == 1 and k1.metadata["episode_key"] == "k1"
    assert k1.metadata["task_id"] == "t1" and k1.metadata["seed"] == 0 and k1.metadata["condition"] == "none"
    assert k1.scores["reward"].value == 1.0 and k1.scores["judge"].value == "error"
    assert k1.scores["reward"].metadata["version"] == "1"
    # the tool call is a real call, its result a tool message; the message to the user is text
    roles = [m.role for m in k1.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = k1.messages[1].tool_calls[0]
    assert call.function == "lookup" and call.arguments == {"id": 1} and k1.messages[2].tool_call_id == call.id
    assert k1.messages[3].text == "bye" and k1.messages[1].metadata["latency_s"] == 0.0
    assert k1.total_time is None  # no finish time in this record: unknown, not zero
    k3 = logs[("b", "none")].samples[0]
    assert k3.error is not None and "sandbox gone" in k3.error.message
    means = {(cell, s.name): s.metrics["mean"].value for cell, log in logs.items() for s in log.results.scores}
    assert means == {(("a", "none"), "reward"): 1.0, (("a", "rename_tools"), "reward"): 0.0}  # an error is no score
    with pytest.raises(UserError, match="folder"):
        export_run(run_dir, "inspect", tmp_path / "one.eval")


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


def _report_means(report_md: str) -> dict[tuple[str, str, str], tuple[int, float]]:
    """{(grader, agent, condition): (n, mean)} from the summary tables of report.md."""
    means, grader = {}, None
    for line in report_md.splitlines():
        if line.startswith("### "):
            grader = line[4:].split(" (v")[0]
        elif grader and line.startswith("| ") and line.count("|") == 8 and not line.startswith("| agent"):
            agent, condition, n, mean = [c.strip() for c in line.strip("|").split("|")][:4]
            means[(grader, agent.replace("\\_", "_"), condition.replace("\\_", "_"))] = (int(n), float(mean))
    return means


def test_inspect_logs_read_back_give_the_reports_mean_per_agent_and_condition(tmp_path):
    """A tiny TRACE run (an LLM agent through the offline role_binding model, and a scripted agent, under
    the unmodified tools and misleading names): inspect_ai's own reader finds one log per agent x
    condition whose means are the report's, real tool calls with their results, the system prompt,
    timings, and the task id and seed in each sample's metadata."""
    log_module = pytest.importorskip("inspect_ai.log")
    import yaml

    from rsigym.runner import run_scenario
    from rsigym.scenario import load_scenario

    raw = {"name": "inspect_export", "env": {"id": "rsigym/ToolUse-v0", "kwargs": {"domain": "retail", "user": "scripted"}},
           "tasks": ["retail-000", "retail-001", "retail-002"], "conditions": ["identity", "misleading_names"],
           "agents": [{"id": "llm", "kind": "llm", "model": "rsigym/role_binding"}, {"id": "name_bound", "kind": "name_bound"}],
           "seeds": [0], "reps": 1, "max_steps": 30, "graders": ["db_state", "reward"], "analyses": ["summary"]}
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(raw))
    run_scenario(load_scenario(str(tmp_path / "scenario.yaml")), tmp_path / "run", workers=0, progress=False)
    report = _report_means((tmp_path / "run" / "report.md").read_text())
    assert len({mean for _, mean in report.values()}) > 1  # the comparison can fail: the cells differ

    assert main(["export", str(tmp_path / "run"), "--format", "inspect"]) == 0
    logs = [log_module.read_eval_log(str(p)) for p in sorted((tmp_path / "run" / "export_inspect").glob("*.eval"))]
    assert len(logs) == 4  # 2 agents x 2 conditions
    found = {}
    for log in logs:
        agent, condition = log.eval.task_args["agent"], log.eval.task_args["condition"]
        assert {s.metadata["agent"] for s in log.samples} == {agent} and {s.metadata["condition"] for s in log.samples} == {condition}
        for score in log.results.scores:
            found[(score.name, agent, condition)] = (score.scored_samples, score.metrics["mean"].value)
            values = [s.scores[score.name].value for s in log.samples]  # the samples agree with the headline
            assert score.metrics["mean"].value == pytest.approx(sum(values) / len(values))
    assert set(found) == set(report)
    for key, (n, mean) in report.items():
        assert found[key][0] == n and found[key][1] == pytest.approx(mean, abs=5e-4), key

    records = {r.episode_key: r for r in read_records(tmp_path / "run" / "records.jsonl").records}
    llm = next(log for log in logs if log.eval.task_args == {"agent": "llm", "condition": "identity"})
    sample = llm.samples[0]
    record = records[sample.metadata["episode_key"]]
    assert sample.metadata["task_id"] == record.env.task_id and sample.metadata["seed"] == 0
    assert sample.messages[0].role == "system" and sample.messages[0].text == record.system_prompt
    assert "rsigym/ToolUse-v0" in record.system_prompt
    calls = [m for m in sample.messages if m.role == "assistant" and m.tool_calls]
    results = [m for m in sample.messages if m.role == "tool"]
    assert calls and len(results) >= len(calls) - 1
    assert [m.tool_call_id for m in results] == [m.tool_calls[0].id for m in calls][:len(results)]
    assert [c.tool_calls[0].function for c in calls] == [s.action["tool"] for s in record.steps if "tool" in s.action]
    assert sample.total_time is not None and sample.total_time >= 0 and sample.working_time > 0
    # under misleading names, each call names the tool the agent saw and, in metadata, the original
    misled = next(log for log in logs if log.eval.task_args == {"agent": "name_bound", "condition": "misleading_names"})
    originals = [m.metadata.get("original_tool") for s in misled.samples for m in s.messages
                 if m.role == "assistant" and m.tool_calls]
    assert originals and all(originals)
    assert any(o != m for o, m in zip(originals, [m.tool_calls[0].function for s in misled.samples
                                                   for m in s.messages if m.role == "assistant" and m.tool_calls]))



def test_a_grader_regraded_with_another_version_gives_two_named_scores(tmp_path):
    log_module = pytest.importorskip("inspect_ai.log")
    records = _records()[:2]
    records[0].grades.append(Grade("reward", "2", 0.25, source="regrade"))
    records[1].grades.append(Grade("reward", "2", 0.75, source="regrade"))
    with RecordWriter(tmp_path / "run" / "records.jsonl") as writer:
        for record in records:
            writer.write(record)
    folder = export_run(tmp_path / "run", "inspect")
    means = {}
    for path in folder.glob("*.eval"):
        log = log_module.read_eval_log(str(path))
        for score in log.results.scores:
            means[(log.eval.task_args["condition"], score.name)] = score.metrics["mean"].value
    # one ruler per version, as the report's summary keeps them apart; "judge" has one version
    assert means == {("none", "reward v1"): 1.0, ("none", "reward v2"): 0.25,
                     ("rename_tools", "reward v1"): 0.0, ("rename_tools", "reward v2"): 0.75}
