import json
from importlib import resources

import jsonschema
import numpy as np
import pytest

from rsigym.records.jsonl import RecordWriter, read_records, rewrite_records
from rsigym.records import (AgentSpec, EnvRef, FinalSnapshot, Grade, Step, Trajectory, Usage,
                            episode_key, to_jsonable)


def schema():
    return json.loads(resources.files("rsigym").joinpath("schemas/trajectory.schema.json").read_text())


def make_record(seed=0, rep=0, task="probe-100") -> Trajectory:
    env = EnvRef("rsigym/Probe-v0", {"low": 0, "high": 100}, task, {"name": "reverse_hints", "params": {}})
    agent = AgentSpec("bisect", "probe_bisect")
    return Trajectory(
        episode_key=episode_key(env, agent, seed, rep), env=env, agent=agent, seed=seed, rep=rep,
        steps=[Step(0, {"text": "Guess…", "last_guess": -1}, {"guess": 50}, 0.0, False, False,
                    {"budget": {"left": 9}}, Usage(10, 2, 0.001, 0.5, 0.01))],
        final=FinalSnapshot.of({"guesses": [50], "solved": False}),
        termination="budget_exhausted", usage=Usage(10, 2, 0.001, 0.5, 0.01),
        usage_by_role={"agent": Usage(10, 2, 0.001, 0.5, 0.01, model_calls=1)},
        grades=[Grade("probe_answer", "1", 0.0, {"why": "no"})], sandbox={"provider": "local"},
        rsigym_version="0.1.0")


def test_round_trip_is_lossless_and_matches_schema():
    record = make_record()
    data = json.loads(record.to_json())
    jsonschema.validate(data, schema())
    again = Trajectory.from_json(record.to_json())
    assert again == record
    assert again.to_dict() == record.to_dict()


def test_schema_rejects_bad_records():
    data = make_record().to_dict()
    for mutate in (lambda d: d.update(termination="crashed"),
                   lambda d: d.update(surprise=1),
                   lambda d: d["grades"][0].update(source="guess"),
                   lambda d: d.pop("episode_key"),
                   lambda d: d["steps"][0].update(reward="high"),
                   lambda d: d["usage_by_role"].update(user={"prompt_tokens": -1})):
        bad = json.loads(json.dumps(data))
        mutate(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema())


def test_the_node_id_round_trips_and_records_written_before_it_still_read_and_validate():
    record = make_record()
    record.node_id = "a" * 56  # a Ray node id
    data = json.loads(record.to_json())
    jsonschema.validate(data, schema())
    assert Trajectory.from_json(record.to_json()).node_id == "a" * 56
    old = make_record().to_dict()
    del old["node_id"]  # a record from before the field
    jsonschema.validate(old, schema())
    assert Trajectory.from_dict(old).node_id is None
    for wrong in (3, ["a"]):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**old, "node_id": wrong}, schema())


def test_records_written_before_usage_by_role_still_read_and_validate():
    data = make_record().to_dict()
    del data["usage_by_role"]
    jsonschema.validate(data, schema())
    assert Trajectory.from_dict(data).usage_by_role == {}


def test_episode_key_is_stable_and_sensitive_to_every_part():
    env = EnvRef("rsigym/Probe-v0", {"a": 1, "b": 2}, "t1", None)
    agent = AgentSpec("x", "random")
    key = episode_key(env, agent, 0, 0)
    # dict order does not matter; every defining part does
    assert key == episode_key(EnvRef("rsigym/Probe-v0", {"b": 2, "a": 1}, "t1", None), agent, 0, 0)
    variants = [
        episode_key(EnvRef("rsigym/Other-v0", {"a": 1, "b": 2}, "t1", None), agent, 0, 0),
        episode_key(EnvRef("rsigym/Probe-v0", {"a": 1, "b": 3}, "t1", None), agent, 0, 0),
        episode_key(EnvRef("rsigym/Probe-v0", {"a": 1, "b": 2}, "t2", None), agent, 0, 0),
        episode_key(EnvRef("rsigym/Probe-v0", {"a": 1, "b": 2}, "t1", {"name": "c"}), agent, 0, 0),
        episode_key(env, AgentSpec("x", "random", params={"p": 1}), 0, 0),
        episode_key(env, AgentSpec("x", "llm", model="m"), 0, 0),
        episode_key(env, agent, 1, 0),
        episode_key(env, agent, 0, 1),
    ]
    assert len({key, *variants}) == len(variants) + 1
    # a known value pins the hash function itself: changing it would orphan every stored run
    assert episode_key(EnvRef("e", {}, None, None), AgentSpec("a", "k"), 0, 0) == \
        "425f0473b833cb7a4d47eb51c91f5a3a"


def test_to_jsonable_handles_numpy_and_non_finite():
    value = to_jsonable({"a": np.int64(3), "b": np.array([1.5, np.inf]), "c": (1, float("nan")), 4: b"x"})
    assert value == {"a": 3, "b": [1.5, "inf"], "c": [1, "nan"], "4": "x"}
    with pytest.raises(TypeError, match="cannot store"):
        to_jsonable(object())


def test_writer_appends_fsynced_lines_and_reader_reads_them(tmp_path):
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as writer:
        for seed in range(3):
            writer.write(make_record(seed))
    result = read_records(path)
    assert [r.seed for r in result] == [0, 1, 2] and not result.torn_tail


def test_reader_tolerates_torn_last_line_and_writer_sets_it_aside(tmp_path, caplog):
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as writer:
        writer.write(make_record(0))
        writer.write(make_record(1))
    full = path.read_bytes()
    path.write_bytes(full + make_record(2).to_json().encode()[:57])  # crash mid-write
    result = read_records(path)
    assert [r.seed for r in result] == [0, 1] and result.torn_tail
    assert "torn last line" in caplog.text
    with RecordWriter(path) as writer:  # resume: the fragment must not fuse with the next record
        writer.write(make_record(3))
    result = read_records(path)
    assert [r.seed for r in result] == [0, 1, 3] and not result.torn_tail and not result.bad_lines
    assert (tmp_path / "r.jsonl.torn").read_bytes().startswith(b'{"episode_key"')


def test_reader_reports_corrupt_middle_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(make_record(0).to_json() + "\n{oops\n" + make_record(1).to_json() + "\n")
    result = read_records(path)
    assert [r.seed for r in result] == [0, 1] and result.bad_lines == [2]
    from rsigym.errors import UserError
    with pytest.raises(UserError, match=r"r.jsonl:2"):
        read_records(path, strict=True)


def test_rewrite_is_atomic_replacement(tmp_path):
    path = tmp_path / "r.jsonl"
    rewrite_records(path, [make_record(0), make_record(1)])
    rewrite_records(path, [make_record(5)])
    assert [r.seed for r in read_records(path)] == [5]
    assert not (tmp_path / "r.jsonl.tmp").exists()
