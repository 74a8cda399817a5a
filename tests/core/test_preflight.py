"""Each mistake of issue 18: one line, exit 2, before any episode (nothing written)."""

import pytest
import yaml

from rsigym.cli import main
from rsigym.scenario.preflight import PreflightError, check_scenario, grader_fits, preflight
from rsigym.registry import GRADERS
from rsigym.scenario import load_scenario, parse_scenario

from ..conftest import write_scenario


def _run_cli(capsys, tmp_path, *extra, **overrides):
    path = write_scenario(tmp_path / "s.yaml", **overrides)
    status = main(["run", str(path), "--out", str(tmp_path / "out"), "--workers", "0", "--no-progress", *extra])
    captured = capsys.readouterr()
    return status, captured.err.splitlines(), captured.out


@pytest.mark.parametrize("overrides, message", [
    ({"tasks": ["probe-100", "probe-999"]},
     "tasks[1]: unknown task id 'probe-999' (did you mean"),
    ({"graders": ["action_match"]},
     "graders[0]: grader 'action_match' does not fit rsigym/Probe-v0 (it scores tooluse records); "
     "graders that fit: probe_answer, probe_efficiency"),
    ({"agents": [{"id": "llm", "kind": "llm", "model": "rsigym/nonexistent"}]},
     "agents[0].model: unknown offline model 'rsigym/nonexistent'"),
    ({"agents": [{"id": "llm", "kind": "llm", "model": "openai/gpt-4o-mini"}]},
     "agents[0].model: openai/gpt-4o-mini needs credentials: set OPENAI_API_KEY"),
    ({"agents": [{"id": "llm", "kind": "llm", "model": "openai/gpt-4o-mini", "params": {"api_key_env": "MY_KEY_VAR"}}]},
     "agents[0].model: api_key_env names MY_KEY_VAR, which is not set"),
    ({"env": {"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "local", "lowest": 1}}},
     "env.kwargs.lowest: rsigym/Probe-v0 takes no argument 'lowest' (did you mean 'low'?)"),
    ({"env": {"id": "rsigym/Prob-v0"}}, "env.id: unknown env 'rsigym/Prob-v0' (did you mean 'rsigym/Probe-v0'"),
    ({"analyses": ["sumary"]}, "analyses[0]: unknown analysis 'sumary' (did you mean 'summary'?)"),
    ({"graders": ["probe_answr"]}, "graders[0]: unknown grader 'probe_answr' (did you mean 'probe_answer'?)"),
    ({"tasks": ["probe-100", "probe-100"]}, "tasks[1]: task id 'probe-100' is listed twice"),
])
def test_each_mistake_is_one_line_exit_2_before_any_episode(capsys, tmp_path, monkeypatch, overrides, message):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MY_KEY_VAR", raising=False)
    status, err, out = _run_cli(capsys, tmp_path, **overrides)
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith("rsigym: error: ") and message in err[0], err
    assert out == "" and not (tmp_path / "out").exists()


def test_every_problem_is_listed_at_once_one_line_each(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    status, err, _ = _run_cli(
        capsys, tmp_path,
        env={"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "local", "hihg": 5}},
        tasks=["probe-999"], graders=["action_match"], analyses=["nope"],
        agents=[{"id": "a", "kind": "llm", "model": "rsigym/nonexistent"},
                {"id": "b", "kind": "llm", "model": "openai/gpt-4o-mini"}])
    assert status == 2
    assert [line.split(": ")[3].split(".")[0].split("[")[0] for line in err] == \
        ["env", "tasks", "graders", "analyses", "agents", "agents"], err
    assert all(line.startswith("rsigym: error: ") for line in err)


def test_the_bundled_llm_scenario_without_a_key_names_the_variable(capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    status = main(["run", "probe_llm", "--dry-run"])
    err = capsys.readouterr().err.splitlines()
    assert status == 2 and len(err) == 1 and "set OPENAI_API_KEY" in err[0], err
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key-000000000000")
    assert preflight(load_scenario("probe_llm")) == []  # the key is there: no problem left


def test_docker_asked_for_without_an_engine_is_a_preflight_problem(tmp_path):
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", env={"id": "rsigym/Probe-v0",
                                                                      "kwargs": {"sandbox": "docker"}}))
    problems = preflight(scenario, docker_answers=lambda: "no Docker engine answers (test)")
    assert any("env.kwargs.sandbox: sandbox docker asked for, but no Docker engine answers (test)" in p
               for p in problems), problems
    assert not [p for p in preflight(scenario, docker_answers=lambda: None) if "docker" in p.lower()]


def test_grader_fit_follows_the_family_folder_or_the_declared_envs():
    assert grader_fits(GRADERS["probe_answer"], "rsigym/Probe-v0")
    assert not grader_fits(GRADERS["probe_answer"], "rsigym/ToolUse-v0")

    class AnyEnv:  # a plug-in from another package: fits every env unless it says otherwise
        pass

    class ToolUseOnly:
        envs = ("rsigym/ToolUse-*",)

    assert grader_fits(AnyEnv, "rsigym/Probe-v0")
    assert grader_fits(ToolUseOnly, "rsigym/ToolUse-v0") and not grader_fits(ToolUseOnly, "rsigym/Probe-v0")


def test_a_preflight_error_is_one_user_error_with_its_lines(tmp_path):
    data = yaml.safe_load(write_scenario(tmp_path / "s.yaml", analyses=["x1", "x2"]).read_text())
    with pytest.raises(PreflightError) as caught:
        check_scenario(parse_scenario(data, "s.yaml"))
    assert len(caught.value.problems) == 2 and str(caught.value).count("\n") == 1
