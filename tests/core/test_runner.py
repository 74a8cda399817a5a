import json
import os
import signal
import subprocess
import time
from collections import Counter

import pytest

from rsigym.agents import register_agent
from rsigym.records.jsonl import read_records
from rsigym.records import AgentSpec, EnvRef, Trajectory, Usage
from rsigym.runner import RECORDS_FILE, run_episode, run_scenario
from rsigym.scenario import EpisodeSpec, NamedSpec, expand, load_scenario

from ..conftest import cli_here, rsigym_cmd, write_scenario


class CrashingAgent:
    def __init__(self, spec):
        self.spec, self.last_usage = spec, Usage()

    def reset(self, task_info, seed):
        pass

    def act(self, observation):
        raise RuntimeError("agent bug")


class BabblingAgent:
    """Emits an action the env must reject without crashing or charging a guess."""

    def __init__(self, spec):
        self.spec, self.last_usage = spec, Usage(prompt_tokens=5, completion_tokens=3)

    def reset(self, task_info, seed):
        pass

    def act(self, observation):
        return {"guess": "fifty"}


class ObservingAgent:
    """Guesses upward and records what ``observe`` hands it; fails on demand."""

    seen: list = []

    def __init__(self, spec):
        self.spec, self.last_usage = spec, Usage()
        self.fail_at = spec.params.get("fail_at")

    def reset(self, task_info, seed):
        self.guess = -1

    def act(self, observation):
        self.guess += 1
        return {"guess": self.guess}

    def observe(self, reward, observation, info):
        ObservingAgent.seen.append((reward, int(observation["last_guess"]), info["budget"]["guesses_used"]))
        if len(ObservingAgent.seen) == self.fail_at:
            raise ValueError("observe bug")


register_agent("test-observe")(ObservingAgent)
class UnfitAgent(CrashingAgent):
    def reset(self, task_info, seed):
        raise TypeError("cannot search a Text action space")


register_agent("test-unfit")(UnfitAgent)
register_agent("test-crash")(CrashingAgent)
register_agent("test-babble")(BabblingAgent)


def episode(kind="probe_bisect", condition=None, task="probe-100", seed=0, graders=("probe_answer",)):
    env = EnvRef("rsigym/Probe-v0", {"sandbox": "local"}, task, condition)
    agent = AgentSpec(kind, kind)
    return EpisodeSpec("0" * 32, env, agent, seed, 0, 20, tuple(NamedSpec(g) for g in graders))


def test_bisect_solves_and_is_graded_live():
    record = run_episode(episode())
    assert record.termination == "agent_stop" and record.error is None
    assert record.steps[-1].reward == 1.0 and record.final.state["solved"]
    assert record.grade("probe_answer").score == 1.0 and record.grade("probe_answer").source == "live"
    assert record.sandbox["provider"] == "local"
    assert json.loads(record.to_json())["steps"][0]["observation"]["text"].startswith("Guess")


def test_reversed_hints_defeat_bisection():
    record = run_episode(episode(condition={"name": "reverse_hints", "params": {}}))
    assert record.termination == "budget_exhausted"
    assert record.grade("probe_answer").score == 0.0


def test_agent_that_cannot_take_the_task_is_an_agent_error():
    record = run_episode(episode(kind="test-unfit"))
    assert record.termination == "agent_error" and "cannot search" in record.error
    assert record.steps == []


def test_agent_exception_is_an_agent_error_record():
    record = run_episode(episode(kind="test-crash"))
    assert record.termination == "agent_error" and "agent bug" in record.error
    assert record.grade("probe_answer").score == 0.0  # graded: the agent failed, not the infra


def test_observe_hook_gets_every_step_result_and_its_errors_are_agent_errors():
    ObservingAgent.seen = []
    record = run_episode(episode(kind="test-observe"))
    assert ObservingAgent.seen == [(s.reward, s.action["guess"], s.t + 1) for s in record.steps]
    ObservingAgent.seen = []
    spec = episode(kind="test-observe")
    failing = EpisodeSpec(spec.key, spec.env, AgentSpec("o", "test-observe", params={"fail_at": 2}),
                          0, 0, 20, spec.graders)
    record = run_episode(failing)
    assert record.termination == "agent_error" and "observe bug" in record.error
    assert len(record.steps) == 2  # the step whose feedback failed is still recorded


def test_invalid_actions_are_observations_until_the_limit():
    record = run_episode(episode(kind="test-babble"))
    assert record.termination == "agent_error"
    assert len(record.steps) == 4  # max_invalid_actions=3, the 4th ends the episode
    assert all("invalid action at guess" in s.info["error"] for s in record.steps)
    assert "Error: invalid action" in record.steps[1].observation["text"]
    assert record.final.state["guesses"] == []  # no guess was charged
    assert record.usage.prompt_tokens == 20


def test_env_failure_is_an_infra_error_record():
    spec = episode()
    broken = EpisodeSpec(spec.key, EnvRef("rsigym/Probe-v0", {"sandbox": "local", "low": 5, "high": 1},
                                          "probe-100", None), spec.agent, 0, 0, 20, spec.graders)
    record = run_episode(broken)
    assert record.termination == "infra_error" and "low < high" in record.error
    assert record.grades == []  # infra failures are not scored


def test_run_scenario_writes_records_report_and_resumes(tmp_path):
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml"))
    summary = run_scenario(scenario, tmp_path / "out", workers=0, progress=False)
    assert (summary.total, summary.skipped, summary.ran, summary.infra_errors) == (24, 0, 24, 0)
    records = read_records(tmp_path / "out" / RECORDS_FILE).records
    assert sorted(r.episode_key for r in records) == sorted(e.key for e in expand(scenario))
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| bisect | none | 6 | 1.000 |" in report
    assert "| bisect | reverse_hints | 6 | 0.000 |" in report
    assert list((tmp_path / "out").glob("summary_probe_answer_v1_*.png"))
    again = run_scenario(scenario, tmp_path / "out", workers=0, progress=False)
    assert (again.skipped, again.ran) == (24, 0)
    assert len(read_records(tmp_path / "out" / RECORDS_FILE)) == 24


def test_retry_infra_errors_reruns_them_and_keeps_the_old_records(tmp_path):
    from rsigym.records.jsonl import rewrite_records

    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", tasks=["probe-100"], seeds=[0]))
    out = tmp_path / "out"
    run_scenario(scenario, out, workers=0, progress=False, report=False)
    records = read_records(out / RECORDS_FILE).records
    records[1].termination, records[1].error, records[1].grades = "infra_error", "engine gone", []
    rewrite_records(out / RECORDS_FILE, records)
    kept = run_scenario(scenario, out, workers=0, progress=False, report=False, retry_infra_errors=False)
    assert kept.ran == 0  # asked to keep them: the infra error stays as recorded
    again = run_scenario(scenario, out, workers=0, progress=False, report=False)  # the default: retried
    assert (again.skipped, again.ran, again.infra_retried) == (3, 1, 1)
    after = read_records(out / RECORDS_FILE).records
    assert Counter(r.episode_key for r in after) == Counter(r.episode_key for r in records)
    assert all(r.termination != "infra_error" for r in after)
    kept = read_records(out / "infra_errors.jsonl").records
    assert [(r.episode_key, r.error) for r in kept] == [(records[1].episode_key, "engine gone")]


@pytest.mark.slow
def test_sigkill_midway_then_rerun_records_every_episode_exactly_once(tmp_path):
    path = write_scenario(tmp_path / "s.yaml", tasks={"split": "test", "limit": 12})  # 12*2*2*2 = 96
    out = tmp_path / "out"
    argv = [*rsigym_cmd(), "run", str(path), "--out", str(out), "--workers", "2", "--no-progress"]
    proc = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    records_file = out / RECORDS_FILE
    for _ in range(12000):  # polls, not a clock; pytest-timeout bounds a hang
        if records_file.exists() and records_file.read_bytes().count(b"\n") >= 15:
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # the runner and its workers, no clean-up
    proc.wait(timeout=30)
    partial = read_records(records_file)
    assert 15 <= len(partial) < 96, len(partial)

    rerun = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert f"96 episodes: {len(partial)} already recorded, {96 - len(partial)} run now" in rerun.stdout
    result = read_records(records_file)
    assert not result.bad_lines
    counts = Counter(r.episode_key for r in result)
    expected = {e.key for e in expand(load_scenario(path))}
    assert set(counts) == expected and set(counts.values()) == {1}
    assert all(r.termination != "infra_error" for r in result)
    for line in records_file.read_text().splitlines():  # every line is a full, valid record
        json.loads(line)


def _scores(records):
    return {r.episode_key: [(g.grader, g.score) for g in r.grades] for r in records}


@pytest.mark.ray
@pytest.mark.timeout(900)  # Ray starts a cluster: minutes on a loaded 2-core machine
@pytest.mark.slow
def test_ray_backend_matches_local(tmp_path):
    pytest.importorskip("ray")
    import ray

    # Graders on the local sandbox too: this test compares backends, not sandbox providers, and a
    # container slowed by other load would show up as a grader error on one side only.
    graders = [{"name": "probe_answer", "params": {"sandbox": "local"}}, "probe_efficiency"]
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", tasks={"split": "test", "limit": 4}, graders=graders))
    run_scenario(scenario, tmp_path / "local", backend="local", workers=2, progress=False)
    try:
        run_scenario(scenario, tmp_path / "ray", backend="ray", workers=1, progress=False)  # a runner per CPU
    finally:
        ray.shutdown()
    local = read_records(tmp_path / "local" / RECORDS_FILE).records
    remote = read_records(tmp_path / "ray" / RECORDS_FILE).records
    assert len(local) == len(remote) == 32
    assert _scores(local) == _scores(remote)
    assert {r.episode_key: [s.action for s in r.steps] for r in local} == \
        {r.episode_key: [s.action for s in r.steps] for r in remote}


def test_cli_run_report_regrade_end_to_end(tmp_path):
    path = write_scenario(tmp_path / "s.yaml")
    out = tmp_path / "out"
    run = subprocess.run([*rsigym_cmd(), "run", str(path), "--out", str(out), "--workers", "0"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "24 episodes: 0 already recorded, 24 run now, 0 infra errors" in run.stdout
    before = read_records(out / RECORDS_FILE).records
    # A looser ruler on the same trajectories: only the grade changes, never the behaviour.
    # regrade and report through the CLI's entry point in this process (the run above is the process)
    regrade = cli_here("regrade", str(out), "--grader", "probe_answer",
                       "--param", "tolerance=100", "--param", "sandbox=local", "--in-place")
    assert regrade.returncode == 0, regrade.stderr
    assert "regraded 24 records with probe_answer v1: mean 1.000" in regrade.stdout
    after = read_records(out / RECORDS_FILE).records
    for old, new in zip(before, after):
        assert new.grades[:len(old.grades)] == old.grades
        assert new.grades[-1].source == "regrade" and new.grades[-1].params["tolerance"] == 100
        assert new.steps == old.steps and new.final == old.final
    report = cli_here("report", str(out))
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "### probe_answer (v1, sandbox=auto, tolerance=0)" in text
    assert "### probe_answer (v1, sandbox=local, tolerance=100)" in text


def test_no_progress_bar_is_drawn_into_a_pipe_or_a_file(tmp_path):
    """A bar asked for (``progress=True``, the Python default) becomes plain lines off a terminal."""
    import io

    from rsigym.runner.progress import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    record = Trajectory(episode_key="k", env=EnvRef(id="x"), agent=AgentSpec(id="r", kind="random"), seed=0, rep=0)
    piped, terminal = io.StringIO(), Tty()
    for stream in (piped, terminal):
        with Progress(2, "run", mode=True, stream=stream) as progress:
            progress.advance(record)
            progress.advance(record)
    assert piped.getvalue() == "run: 1/2 episodes\nrun: 2/2 episodes\n"  # no escape codes, no bar
    assert Progress(2, "run", mode="bar", stream=terminal).mode == "bar"
