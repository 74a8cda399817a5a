"""Compact records: what episodes share is stored once per run folder, and reads back exactly."""

import json

import pytest

from rsigym.errors import UserError
from rsigym.records.jsonl import RecordWriter, read_records, rewrite_records
from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Step, Trajectory
from rsigym.records.shared_text import SHARED_FILE, SharedText

POLICY = "".join(f"- rule {i}: before any change, look the order up and confirm it with the user ({i}).\n"
                 for i in range(150))
TOOLS = {f"tool_{i}": f"tool_{i}_renamed" for i in range(30)}


def _record(task: int, rep: int, agent: str = "a") -> Trajectory:
    first = f"# Task {task}\n\n## Policy\n\n{POLICY}\nUser: please cancel order #{task:04d}, it is late."
    steps = [Step(0, {"text": first, "turn": 0}, {"tool": "get_order", "arguments": {"id": task}}, 0.0, False, False),
             Step(1, {"text": "Tool get_order result: " + json.dumps({"order": task, "items": list(range(60))})},
                  {"message": "done"}, 1.0, True, False)]
    return Trajectory(episode_key=f"{task}-{rep}-{agent}", env=EnvRef("rsigym/Probe-v0", task_id=str(task)),
                      agent=AgentSpec(agent, agent), seed=0, rep=rep, steps=steps,
                      final=FinalSnapshot.of({"tool_names": TOOLS, "task": task}), termination="user_stop")


def _plain_size(records) -> int:
    return sum(len(r.to_json().encode()) + 1 for r in records)


def test_shared_text_is_stored_once_and_records_read_back_exactly(tmp_path):
    records = [_record(task, rep, agent) for task in range(10) for rep in range(2) for agent in "ab"]
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    on_disk = path.stat().st_size + (tmp_path / SHARED_FILE).stat().st_size
    assert on_disk * 3 < _plain_size(records)  # the policy and the tool table once, not 40 times
    assert POLICY[:200] not in path.read_text()  # the record lines hold references
    back = read_records(path)
    assert [r.to_dict() for r in back] == [r.to_dict() for r in records]


def test_a_record_written_before_compaction_still_loads(tmp_path):
    path = tmp_path / "records.jsonl"
    old = [_record(1, 0), _record(2, 0)]
    path.write_text("".join(r.to_json() + "\n" for r in old))  # the old format: no shared.jsonl at all
    back = read_records(path, strict=True)
    assert [r.to_dict() for r in back] == [r.to_dict() for r in old]
    with RecordWriter(path) as writer:  # and a compact record appended after them reads too
        writer.write(_record(3, 0))
    assert [r.env.task_id for r in read_records(path, strict=True)] == ["1", "2", "3"]


def test_a_value_shaped_like_a_reference_stays_a_value(tmp_path):
    record = _record(1, 0)
    record.steps[0].info = {"forged": {"rsigym:shared": [["0" * 32]]}, "also": {"rsigym:value": "x" * 32},
                            "nested": {"rsigym:literal": {"rsigym:shared": ["y"]}}}
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as writer:
        writer.write(record)
    assert read_records(path, strict=True).records[0].steps[0].info == record.steps[0].info


def test_a_missing_chunk_is_an_unreadable_record_never_a_wrong_one(tmp_path):
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as writer:
        writer.write(_record(1, 0))
    (tmp_path / SHARED_FILE).unlink()
    assert len(read_records(path)) == 0 and read_records(path).bad_lines == [1]
    with pytest.raises(UserError, match="missing from"):
        read_records(path, strict=True)


def test_a_tampered_or_torn_chunk_is_never_used_and_is_written_again(tmp_path):
    path, shared = tmp_path / "records.jsonl", tmp_path / SHARED_FILE
    record = _record(1, 0)
    with RecordWriter(path) as writer:
        writer.write(record)
    lines = shared.read_text().splitlines()
    entry = json.loads(lines[0])
    lines[0] = json.dumps({"sha256": entry["sha256"], "text": "an edited policy"})
    shared.write_text("\n".join(lines) + '\n{"sha256": "ab')  # and a torn last line
    assert len(read_records(path)) == 0  # a chunk that does not match its hash is not used
    with RecordWriter(path) as writer:  # the next writer stores it again, on a line of its own
        writer.write(record)
    assert [r.to_dict() for r in read_records(path, strict=True)] == [record.to_dict()] * 2


def test_rewrite_keeps_records_whole(tmp_path):
    path = tmp_path / "records.jsonl"
    records = [_record(task, 0) for task in range(4)]
    with RecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    result = read_records(path)
    rewrite_records(path, result.records[::-1], expected_size=result.size_bytes)
    assert [r.to_dict() for r in read_records(path, strict=True)] == [r.to_dict() for r in records[::-1]]


def test_memory_store_round_trips_without_a_file(tmp_path):
    store = SharedText(None)
    plain = [_record(t, 0).to_dict() for t in range(3)]
    assert [store.expand(store.compact(d)) for d in plain] == plain
    assert not list(tmp_path.iterdir())
