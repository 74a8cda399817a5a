"""Cost and time: the per-agent usage table, ``--cost-limit`` and ``--episode-timeout``."""

from __future__ import annotations

import time

import pytest

from rsigym.agents import register_agent
from rsigym.cli import main
from rsigym.report.costs import usage_section
from rsigym.records.jsonl import read_records
from rsigym.records import AgentSpec, EnvRef, Trajectory, Usage
from rsigym.report import write_report
from rsigym.runner import RECORDS_FILE, run_episode, run_scenario
from rsigym.scenario import EpisodeSpec, NamedSpec, load_scenario

from ..conftest import write_scenario


class PricedAgent:
    """Guesses upward; every step costs 0.01 USD and 10 + 5 tokens."""

    def __init__(self, spec):
        self.spec, self.last_usage = spec, Usage(prompt_tokens=10, completion_tokens=5, cost_usd=0.01,
                                                 model_calls=1)

    def reset(self, task_info, seed):
        self.guess = -1

    def act(self, observation):
        self.guess += 1
        return {"guess": self.guess}


class HangingAgent:
    """Never answers: sleeps, or spins, and swallows every ``Exception`` on the way."""

    def __init__(self, spec):
        self.spec, self.last_usage, self.spin = spec, Usage(), spec.params.get("spin", False)

    def reset(self, task_info, seed):
        pass

    def act(self, observation):
        while True:
            try:
                if self.spin:
                    while True:
                        pass
                time.sleep(3600)
            except Exception:  # a careless retry loop must not keep the run waiting either
                continue


register_agent("test-priced")(PricedAgent)
register_agent("test-hang")(HangingAgent)


def _record(agent: str, usage: Usage, by_role: dict[str, Usage]) -> Trajectory:
    return Trajectory(episode_key=agent + str(usage.cost_usd), env=EnvRef("rsigym/Probe-v0"),
                      agent=AgentSpec(agent, "llm", "m"), seed=0, rep=0, usage=usage, usage_by_role=by_role)


def test_usage_table_sums_per_agent_and_role_by_hand():
    agent_a = Usage(prompt_tokens=100, completion_tokens=20, cost_usd=0.25, latency_s=2.0, model_calls=3,
                    provider_retries=1)
    user_a = Usage(prompt_tokens=50, completion_tokens=10, cost_usd=0.05, latency_s=1.0, model_calls=2)
    records = [_record("a", agent_a + user_a, {"agent": agent_a, "user": user_a}),
               _record("a", agent_a, {"agent": agent_a}),
               _record("b", Usage(), {})]
    section = usage_section(records)
    rows = {tuple(c.strip() for c in line.split("|")[1:3]): [c.strip() for c in line.split("|")[3:-1]]
            for line in section.markdown.splitlines() if line.startswith("| a") or line.startswith("| b")}
    # agent a, all roles: 2 episodes, 3+2+3 calls, 250 + 50 prompt, 0.55 USD, 5 s, 2 retries
    assert rows[("a", "all")][:8] == ["2", "8", "250", "50", "0.5500", "0.2750", "5.00", "2.500"]
    assert rows[("a", "all")][-2:] == ["2", "0"]
    assert rows[("a", "user")][:5] == ["1", "2", "50", "10", "0.0500"]
    assert rows[("b", "all")][:5] == ["1", "0", "0", "0", "0.0000"]
    assert section.verdict.startswith("300 tokens, 0.5500 USD, 8 model calls (2 retried) over 3 episodes")


def test_every_report_ends_with_cost_and_time(tmp_path):
    path = write_report(tmp_path, [_record("a", Usage(cost_usd=0.5), {})], ["summary"])
    text = path.read_text()
    assert "## Cost and time" in text and "0.5000" in text


def test_cost_limit_stops_cleanly_records_what_ran_and_resumes(tmp_path):
    scenario = load_scenario(str(write_scenario(
        tmp_path / "s.yaml", agents=[{"id": "priced", "kind": "test-priced"}], conditions=["none"],
        seeds=[0, 1], max_steps=2, graders=["probe_answer"], tasks={"split": "test", "limit": 2})))
    out = tmp_path / "run"
    summary = run_scenario(scenario, out, workers=0, progress=False, report=False, cost_limit_usd=0.05)
    # each episode costs 2 steps x 0.01; the first (cost unknown) runs, then each reserves 0.02:
    # 0.02 + 0.02 <= 0.05 runs the second, 0.04 + 0.02 > 0.05 starts no third
    assert summary.ran == 2 and summary.not_run == 2 and summary.cost_usd == pytest.approx(0.04)
    assert summary.stopped and "cost limit" in summary.stopped
    assert len(read_records(out / RECORDS_FILE)) == 2
    rest = run_scenario(scenario, out, workers=0, progress=False, report=False)
    assert rest.skipped == 2 and rest.ran == 2 and rest.stopped is None
    assert len({r.episode_key for r in read_records(out / RECORDS_FILE)}) == 4


def test_cost_limit_from_the_cli_says_so_and_exits_3(tmp_path, capsys):
    path = write_scenario(tmp_path / "s.yaml", agents=[{"id": "priced", "kind": "test-priced"}],
                          conditions=["none"], seeds=[0])
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--workers", "0", "--cost-limit", "0"]) == 3
    err = capsys.readouterr().err
    assert "stopped early, cost limit reached" in err and "3 episodes not run" in err
    assert main(["run", str(path), "--episode-timeout", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--episode-timeout" in err and err.count("\n") == 1


def test_a_cost_limit_stops_what_can_spend_and_nothing_free(tmp_path):
    """--cost-limit 0 once stopped scripted episodes too (39 not run): free episodes (rsigym's
    scripted agents, offline models) all run, the spending agent's do not, and the run says so."""
    from rsigym.runner.capacity import episode_can_spend

    scenario = load_scenario(str(write_scenario(
        tmp_path / "s.yaml", agents=[{"id": "priced", "kind": "test-priced"}, {"id": "bisect", "kind": "probe_bisect"},
                                     {"id": "offline", "kind": "llm", "model": "rsigym/random"}],
        conditions=["none"], seeds=[0, 1], max_steps=2, tasks={"split": "test", "limit": 2})))
    from rsigym.scenario import expand

    spends = {e.agent.id: episode_can_spend(e) for e in expand(scenario)}
    assert spends == {"priced": True, "bisect": False, "offline": False}
    summary = run_scenario(scenario, tmp_path / "run", workers=0, progress=False, report=False, cost_limit_usd=0.0)
    by_agent = {}
    for record in read_records(tmp_path / "run" / RECORDS_FILE):
        by_agent[record.agent.id] = by_agent.get(record.agent.id, 0) + 1
    assert by_agent == {"bisect": 4, "offline": 4}, by_agent
    assert summary.not_run == 4 and summary.stopped and "cost limit" in summary.stopped


def test_a_timeout_in_a_worker_process_is_recorded_and_the_run_ends(tmp_path, capsys):
    path = write_scenario(tmp_path / "s.yaml", agents=[{"id": "hang", "kind": "test-hang"}],
                          conditions=["none"], seeds=[0], tasks={"split": "test", "limit": 2})
    # an agent that never answers, stopped inside the worker (which imports this module for it)
    # exit 1: the two timeouts are infra errors, more than the default --max-infra-errors 0
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--workers", "1", "--episode-timeout", "0.5",
                 "--import", __name__, "--no-progress"]) == 1
    assert "infra error x2: timeout: the episode ran past its wall clock" in capsys.readouterr().out
    records = read_records(tmp_path / "run" / RECORDS_FILE).records
    assert len(records) == 2 and all(r.termination == "infra_error" and r.error.startswith("timeout:") for r in records)


@pytest.mark.parametrize("spin", [False, True], ids=["sleeping", "spinning"])
def test_an_episode_past_its_timeout_is_an_infra_error_never_a_hung_run(spin):
    spec = EpisodeSpec("0" * 32, EnvRef("rsigym/Probe-v0", {"sandbox": "local"}, "probe-100"),
                       AgentSpec("hang", "test-hang", params={"spin": spin}), 0, 0, 20,
                       (NamedSpec("probe_answer"),), timeout_s=1.0)
    record = run_episode(spec)
    assert record.termination == "infra_error" and record.error.startswith("timeout:")
    assert record.grades == []  # an infra error is not scored
    record = run_episode(EpisodeSpec(spec.key, spec.env, AgentSpec("b", "probe_bisect"), 0, 0, 20, spec.graders,
                                     timeout_s=60.0))
    assert record.termination != "infra_error"  # the timer was disarmed: a later episode runs normally
    time.sleep(1.5)  # and no stray alarm fires afterwards (it would raise here)
