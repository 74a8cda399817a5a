import re
import subprocess

import pytest
import yaml

from rsigym.errors import UserError
from rsigym.scenario import expand, load_scenario, parse_scenario
from rsigym.scenarios import bundled_scenarios

from ..conftest import rsigym_cmd, write_scenario

BASE = {
    "name": "t", "env": {"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "local"}},
    "tasks": {"split": "test", "limit": 2}, "agents": [{"kind": "probe_bisect"}], "seeds": [0],
}


def scenario(**changes):
    data = yaml.safe_load(yaml.safe_dump(BASE))
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    return data


@pytest.mark.parametrize("data, message", [
    (scenario(agents=[{"kind": "probe_bisect", "modle": "x"}]),
     r"agents\[0\]\.modle: unknown key 'modle' \(allowed: id, kind, model, params\)"),
    (scenario(seeds="zero"), r"seeds: 'zero' is not a valid value"),
    (scenario(reps="2"), r"reps: expected integer, got '2'"),
    (scenario(env=None), r"env: required key is missing"),
    (scenario(env={"kwargs": {}}), r"env\.id: required key is missing"),
    (scenario(surprise=1), r"surprise: unknown key 'surprise'"),
    (scenario(graders=[{"name": "x", "param": {}}]), r"graders\[0\]\.param: unknown key"),
])
def test_schema_errors_name_the_key_path(data, message):
    with pytest.raises(UserError, match=message):
        parse_scenario(data, "s.yaml")


@pytest.mark.parametrize("data, message", [
    (scenario(env={"id": "rsigym/Nope-v0"}), r"env\.id: cannot make 'rsigym/Nope-v0'"),
    (scenario(env={"id": "rsigym/Probe-v0", "kwargs": {"lowest": 1}}), r"env\.kwargs: .*lowest"),
    (scenario(conditions=["flip_everything"]), r"conditions\[0\]: unknown probe condition 'flip_everything'"),
    (scenario(agents=[{"kind": "oracle9000"}]), r"agents\[0\]: unknown agent kind 'oracle9000'"),
    (scenario(graders=["exact_vibes"]), r"graders\[0\]: unknown grader 'exact_vibes'"),
    (scenario(tasks={"split": "validation"}), r"tasks\.split: unknown probe split 'validation'"),
    (scenario(agents=[{"kind": "random"}, {"kind": "random"}]), r"two agents have the id 'random'"),
])
def test_semantic_errors_are_caught_before_any_episode_runs(data, message):
    with pytest.raises(UserError, match=message):
        expand(parse_scenario(data, "s.yaml"))


def test_expand_is_the_full_product_in_stable_order():
    data = scenario(conditions=["none", "reverse_hints"], seeds={"count": 3, "start": 5}, reps=2,
                    agents=[{"kind": "probe_bisect"}, {"id": "rnd", "kind": "random"}])
    episodes = expand(parse_scenario(data))
    assert len(episodes) == 2 * 2 * 2 * 3 * 2
    assert len({e.key for e in episodes}) == len(episodes)
    assert [e.key for e in episodes] == [e.key for e in expand(parse_scenario(data))]
    assert {e.seed for e in episodes} == {5, 6, 7}
    assert episodes[0].env.condition is None and episodes[0].env.task_id == "probe-100"


def _docker_answers() -> bool:
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
        client.close()
        return True
    except Exception:  # noqa: BLE001 - any failure means there is no engine here
        return False


def test_the_bundled_scenarios_include_the_smoke_test():
    assert "probe_smoke" in bundled_scenarios()


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_bundled_scenarios_are_valid(name):
    try:
        assert expand(load_scenario(bundled_scenarios()[name]))
    except UserError as exc:
        # A scenario that runs agent code in Docker (DataSelection's run_python) must stop before
        # any episode with one line naming Docker and the opt-in when no engine answers; with an
        # engine (CI) it must load like every other scenario.
        if "needs Docker" not in str(exc) or _docker_answers():
            raise
        assert "sandbox: local_unsafe" in str(exc) and "\n" not in str(exc)


def test_yaml_syntax_error_names_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nenv: {id: [\n")
    with pytest.raises(UserError, match=r"bad.yaml:3:1: not valid YAML"):
        load_scenario(path)


@pytest.mark.parametrize("change, message", [
    ({"agents": [{"kind": "probe_bisect", "modle": "x"}]}, "agents[0].modle: unknown key"),
    ({"seeds": "many"}, "seeds: 'many' is not a valid value"),
    ({"env": None}, "env: required key is missing"),
])
def test_cli_malformed_scenario_is_one_line_exit_2(tmp_path, change, message):
    path = write_scenario(tmp_path / "s.yaml", **change)
    if change.get("env", 1) is None:
        data = yaml.safe_load(path.read_text())
        data.pop("env")
        path.write_text(yaml.safe_dump(data))
    proc = subprocess.run([*rsigym_cmd(), "run", str(path), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert message in proc.stderr
    assert not (tmp_path / "out" / "records.jsonl").exists()


def test_cli_user_errors_exit_2_without_traceback(tmp_path):
    for argv in (["run", str(tmp_path / "missing.yaml")], ["report", str(tmp_path)],
                 ["regrade", str(tmp_path), "--grader", "probe_answer"], ["list", "planets"],
                 ["run"]):
        proc = subprocess.run([*rsigym_cmd(), *argv], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("text, where", [
    ("name: t\nseeds: [0]\nseeds: [1, 2]\n", "s.yaml:3:1: duplicate key 'seeds' (first at line 2)"),
    ("name: t\nenv:\n  id: a\n  kwargs: {low: 0, low: 5}\n", "s.yaml:4:20: duplicate key 'low' (first at line 4)"),
])
def test_duplicate_yaml_keys_are_refused_naming_both_lines(tmp_path, text, where):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match=re.escape(where)):
        load_scenario(path)


def test_yaml_merge_keys_and_keys_of_two_types_are_not_duplicates():
    from rsigym.scenario.safe_yaml import load_yaml

    assert load_yaml("b: &b {k: 1}\nc: {<<: *b, k: 2}\n1: x\n'1': y\n", "s") == \
        {"b": {"k": 1}, "c": {"k": 2}, 1: "x", "1": "y"}


def test_cli_refuses_a_scenario_with_a_duplicate_key_in_one_line(tmp_path):
    path = write_scenario(tmp_path / "s.yaml")
    path.write_text(path.read_text() + "seeds: [5]\n")
    proc = subprocess.run([*rsigym_cmd(), "run", str(path), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "duplicate key 'seeds'" in proc.stderr
    assert not (tmp_path / "out" / "records.jsonl").exists()
