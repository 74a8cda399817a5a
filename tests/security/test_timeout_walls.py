"""Attacks on the episode timeout and on who is blamed (issue 38, holes 5 and 3), and on two inputs
(hole 7): a YAML alias bomb of characters, and a family name that is a dangling link.

* A timeout that fires while an episode imports a heavy module for the first time must not leave
  that module half-made in the worker: later episodes run, and nothing is the agent's fault.
* A fault of the harness (an env property that raises while rsigym builds the agent's task info,
  an import that fails) is ``infra_error``, never ``agent_error``.
* A short episode timeout does not count a slow start-up (env made and reset): a loaded machine is
  not the agent's time; the start-up has its own, larger bound.
* An episode against a hosted model has a default timeout (900 s); ``--episode-timeout 0`` turns
  it off; offline and scripted agents have none.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import pytest

from rsigym.cli import main
from rsigym.errors import UserError
from rsigym.records.jsonl import read_records
from rsigym.records import AgentSpec, EnvRef
from rsigym.runner import RECORDS_FILE, run_episode
from rsigym.scenario.safe_yaml import load_yaml
from rsigym.scenario import EpisodeSpec, NamedSpec

from ..conftest import rsigym_cmd, write_scenario

PLUGIN = textwrap.dedent('''
    from rsigym.agents import register_agent
    from rsigym.envs.probe.agents import ProbeBisectAgent


    class LazyHeavyAgent(ProbeBisectAgent):
        """Imports a heavy module at its first act, as the LLM agent imports LiteLLM at its first call."""

        def act(self, observation):
            import issue38_heavy  # noqa: F401
            return super().act(observation)


    class BuildsHeavyAgent(ProbeBisectAgent):
        """Imports a heavy module while it is built (slow at the first import in each process)."""

        def __init__(self, spec):
            import issue38_built  # noqa: F401
            super().__init__(spec)


    register_agent("test_lazy_heavy")(LazyHeavyAgent)
    register_agent("test_builds_heavy")(BuildsHeavyAgent)
''')

# Slow until it has been imported once to the end (a cold cache, a loaded machine): an import that
# a timeout cuts short never finishes, and every later episode of the worker pays it again.
HEAVY = textwrap.dedent('''
    import os
    import time

    MARKER = os.environ["ISSUE38_IMPORTED"]
    if not os.path.exists(MARKER):
        for _ in range(60):  # 3 s in small sleeps
            time.sleep(0.05)
        open(MARKER, "w").close()
''')


@pytest.fixture
def plugin(tmp_path):
    (tmp_path / "issue38_plugin.py").write_text(PLUGIN)
    (tmp_path / "issue38_heavy.py").write_text(HEAVY)
    (tmp_path / "issue38_built.py").write_text("import time\n\nfor _ in range(60):\n    time.sleep(0.05)\n")
    return tmp_path


def _run(plugin, path, *extra):
    env = {**os.environ, "ISSUE38_IMPORTED": str(plugin / "imported"), "PYTHONPATH": str(plugin),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([*rsigym_cmd(), "run", str(path), "--out", str(plugin / "out"), "--no-progress",
                           # 2 s: the slow imports take 3 s, so the clock still runs out inside them; at 1 s
                           # a resumed episode (a fresh worker, sandboxed guesses) ran past it once in a full
                           # loaded make test
                           "--import", "issue38_plugin", "--episode-timeout", "2", *extra],
                          capture_output=True, text=True, cwd=plugin, env=env, timeout=600)


@pytest.mark.parametrize("where", [("--workers", "1"), ("--workers", "0", "--concurrency", "2")],
                         ids=["process-pool-alarm", "threads-watchdog"])
def test_a_timeout_during_a_slow_first_import_does_not_poison_the_later_episodes(plugin, where):
    path = write_scenario(plugin / "s.yaml", agents=[{"id": "lazy", "kind": "test_lazy_heavy"}],
                          conditions=["none"], seeds=[0], tasks={"split": "test", "limit": 3}, graders=[])
    first = _run(plugin, path, *where)
    records = read_records(plugin / "out" / RECORDS_FILE).records
    assert len(records) == 3, first.stderr
    assert not [r for r in records if r.termination == "agent_error"], [r.error for r in records]
    timed_out = [r for r in records if r.termination == "infra_error"]
    # the episode whose clock ran out during the import is a timeout; the import itself finished
    assert len(timed_out) <= 1 and all(r.error.startswith("timeout:") for r in timed_out), [r.error for r in records]
    assert (plugin / "imported").exists()
    assert all(r.termination in ("agent_stop", "max_steps") for r in records if r not in timed_out)
    assert first.returncode == (1 if timed_out else 0), first.stdout + first.stderr
    again = _run(plugin, path, *where)  # a resume runs the timed-out episode again, and it finishes
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(timed_out)} run now" in again.stdout
    records = read_records(plugin / "out" / RECORDS_FILE).records
    assert len(records) == 3 and all(r.termination in ("agent_stop", "max_steps") for r in records)


def test_an_agent_built_with_a_slow_import_is_not_timed_out_for_it(plugin):
    path = write_scenario(plugin / "s.yaml", agents=[{"id": "builds", "kind": "test_builds_heavy"}],
                          conditions=["none"], seeds=[0], tasks={"split": "test", "limit": 2}, graders=[])
    result = _run(plugin, path, "--workers", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    records = read_records(plugin / "out" / RECORDS_FILE).records
    assert len(records) == 2 and all(r.termination in ("agent_stop", "max_steps") for r in records)


RETIRE_PLUGIN = PLUGIN + textwrap.dedent('''
    import rsigym.runner.deadline

    rsigym.runner.deadline.IMPORT_GRACE_S = 0.0  # the timer no longer waits for an import: it lands in one
''')

# Slow in the first process that imports it (the mark is made as the import starts).
FIRST_PROCESS_ONLY = textwrap.dedent('''
    import os
    import time

    MARKER = os.environ["ISSUE38_IMPORTED"]
    if not os.path.exists(MARKER):
        open(MARKER, "w").close()
        for _ in range(60):
            time.sleep(0.05)
''')


def test_a_worker_where_the_timeout_landed_inside_an_import_is_retired_and_no_episode_is_lost(plugin):
    (plugin / "issue38_plugin.py").write_text(RETIRE_PLUGIN)
    (plugin / "issue38_heavy.py").write_text(FIRST_PROCESS_ONLY)
    path = write_scenario(plugin / "s.yaml", agents=[{"id": "lazy", "kind": "test_lazy_heavy"}],
                          conditions=["none"], seeds=[0], tasks={"split": "test", "limit": 4}, graders=[])
    result = _run(plugin, path, "--workers", "1", "--concurrency", "2")
    records = read_records(plugin / "out" / RECORDS_FILE).records
    assert len(records) == 4 and len({r.episode_key for r in records}) == 4, result.stderr
    cut = [r for r in records if r.termination == "infra_error"]
    assert len(cut) == 1 and "landed inside an import" in cut[0].error, [r.error for r in records]
    assert all(r.termination in ("agent_stop", "max_steps") for r in records if r is not cut[0])
    assert "is retired" in result.stderr


# --- harness faults are infra_error ----------------------------------------------------------

from rsigym.envs.probe.env import ProbeEnv  # noqa: E402


class ToolsFaultEnv(ProbeEnv):
    """An env whose tool catalogue fails to load: rsigym reads it to build the agent's task info."""

    @property
    def tools(self):
        raise RuntimeError("tool catalogue not loaded")


class SlowStartEnv(ProbeEnv):
    """An env whose reset takes a while (a container starting on a loaded machine)."""

    start_s = 7.0

    def reset(self, *, seed=None, options=None):
        time.sleep(self.start_s)
        return super().reset(seed=seed, options=options)


gym.register("test38/ToolsFault-v0", entry_point=ToolsFaultEnv)
gym.register("test38/SlowStart-v0", entry_point=SlowStartEnv)


def _spec(env_id: str, agent: AgentSpec, timeout_s: float | None = None) -> EpisodeSpec:
    return EpisodeSpec("3" * 32, EnvRef(env_id, {"sandbox": "local"}, "probe-100"), agent, 0, 0, 20,
                       (NamedSpec("probe_answer"),), timeout_s=timeout_s)


def test_an_env_fault_while_rsigym_builds_the_task_info_is_an_infra_error_not_the_agents():
    record = run_episode(_spec("test38/ToolsFault-v0", AgentSpec("b", "probe_bisect")))
    assert record.termination == "infra_error" and "tool catalogue not loaded" in record.error


def test_a_half_imported_litellm_is_an_infra_error_not_the_agents(monkeypatch):
    import rsigym.llm.litellm_setup

    monkeypatch.setattr(rsigym.llm.litellm_setup, "_litellm", None)
    monkeypatch.setitem(sys.modules, "litellm", None)  # what a cut-short import leaves: import fails
    record = run_episode(_spec("rsigym/Probe-v0", AgentSpec("m", "llm", model="rsigym/random")))
    assert record.termination == "infra_error" and "import of litellm" in record.error, record.error


def test_an_import_error_raised_by_an_agents_call_is_an_infra_error():
    from rsigym.agent import register_agent
    from rsigym.envs.probe.agents import ProbeBisectAgent

    class HalfImported(ProbeBisectAgent):
        def act(self, observation):
            raise ImportError("cannot import name 'completion' from partially initialized module 'litellm'")

    register_agent("test38_half_imported")(HalfImported)
    record = run_episode(_spec("rsigym/Probe-v0", AgentSpec("h", "test38_half_imported")))
    assert record.termination == "infra_error" and "partially initialized" in record.error


def test_an_agents_own_exception_is_still_its_error():
    from rsigym.agent import register_agent
    from rsigym.envs.probe.agents import ProbeBisectAgent

    class Buggy(ProbeBisectAgent):
        def act(self, observation):
            raise KeyError("the agent's own bug")

    register_agent("test38_buggy")(Buggy)
    record = run_episode(_spec("rsigym/Probe-v0", AgentSpec("k", "test38_buggy")))
    assert record.termination == "agent_error" and "the agent's own bug" in record.error


# --- the timer starts after the start-up -----------------------------------------------------

def test_a_slow_env_start_up_is_not_counted_in_a_short_episode_timeout():
    # a start-up longer than the whole timeout, which leaves the play ample time on a loaded machine
    record = run_episode(_spec("test38/SlowStart-v0", AgentSpec("b", "probe_bisect"), timeout_s=6.0))
    assert record.termination != "infra_error", record.error
    assert record.steps and record.grades  # it played and was graded


def test_a_start_up_that_hangs_is_still_stopped_by_its_own_bound(monkeypatch):
    import rsigym.runner.episode as episode

    monkeypatch.setattr(episode, "STARTUP_TIMEOUT_S", 0.5)
    monkeypatch.setattr(SlowStartEnv, "start_s", 30.0)
    record = run_episode(_spec("test38/SlowStart-v0", AgentSpec("b", "probe_bisect"), timeout_s=0.2))
    assert record.termination == "infra_error" and record.error.startswith("timeout:")
    assert "start-up" in record.error and not record.steps


# --- the default episode timeout of hosted-model episodes ------------------------------------

def _plan(capsys, path, *extra):
    status = main(["run", str(path), "--dry-run", "--out", str(path.parent / "out"), *extra])
    return status, capsys.readouterr()


def test_a_hosted_model_episode_has_a_900_s_timeout_by_default_and_0_turns_it_off(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    path = write_scenario(tmp_path / "s.yaml", conditions=["none"], seeds=[0], agents=[
        {"id": "hosted", "kind": "llm", "model": "openai/gpt-4o-mini"},
        {"id": "offline", "kind": "llm", "model": "rsigym/random"},
        {"id": "scripted", "kind": "probe_bisect"}])
    status, out = _plan(capsys, path)
    assert status == 0, out.err
    lines = {line.split("(")[0].strip(): line for line in out.out.splitlines() if line.strip().startswith("agent ")}
    assert lines["agent hosted"].endswith("episode timeout 900 s")
    assert lines["agent offline"].endswith("episode timeout none")
    assert lines["agent scripted"].endswith("episode timeout none")
    status, out = _plan(capsys, path, "--episode-timeout", "0")
    assert status == 0, out.err
    assert [line for line in out.out.splitlines() if "episode timeout" in line and "none" not in line] == []
    status, out = _plan(capsys, path, "--episode-timeout", "30")
    assert status == 0 and out.out.count("episode timeout 30 s") == 3


def test_the_runner_applies_the_default_only_to_hosted_model_episodes(tmp_path, monkeypatch):
    from rsigym.runner import run_scenario
    from rsigym.scenario import load_scenario

    from ..agents.fake_openai import Behaviour, FakeOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    with FakeOpenAI(default=lambda request: Behaviour(content='{"guess": 50}')) as server:
        hosted = {"id": "hosted", "kind": "llm", "model": "openai/fake-model",
                  "params": {"api_base": server.api_base, "tool_mode": "json", "max_retries": 0}}
        path = write_scenario(tmp_path / "s.yaml", conditions=["none"], seeds=[0], graders=[],
                              tasks={"split": "test", "limit": 1}, max_steps=2,
                              agents=[hosted, {"id": "scripted", "kind": "probe_bisect"}])
        summary = run_scenario(load_scenario(path), tmp_path / "out", workers=0, progress=False, report=False)
        assert summary.episode_timeouts == {"hosted": 900.0, "scripted": None}
        off = run_scenario(load_scenario(path), tmp_path / "off", workers=0, progress=False, report=False,
                           episode_timeout_s=0)
        assert off.episode_timeouts == {"hosted": None, "scripted": None}
    from rsigym.runner.capacity import episode_timeout_s

    assert episode_timeout_s(None, "openai/gpt-4o-mini", {}) == 900.0
    assert episode_timeout_s(None, "rsigym/random", {"user": {"model": "anthropic/claude-3-haiku"}}) == 900.0
    assert episode_timeout_s(0.0, "openai/gpt-4o-mini", {}) is None
    assert episode_timeout_s(5.0, None, {}) == 5.0


# --- hole 7: inputs ---------------------------------------------------------------------------

def _alias_bomb(path, copies=20):
    big = "x" * 1_000_000
    path.write_text(f"name: bomb\nbig: &b {big}\nenv: {{id: rsigym/Probe-v0}}\n"
                    f"agents: [{{id: r, kind: random}}]\ncopies: [{', '.join(['*b'] * copies)}]\n")
    return path


def test_a_yaml_alias_bomb_of_a_1_mb_string_is_refused_naming_the_cap(tmp_path, capsys):
    path = _alias_bomb(tmp_path / "bomb.yaml")
    with pytest.raises(UserError, match="more than 10,000,000 characters"):
        load_yaml(path.read_text(), str(path))
    assert main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "characters" in err and "Traceback" not in err


def test_a_new_family_named_like_a_dangling_link_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "demo38").symlink_to(tmp_path / "nowhere")
    assert main(["new", "family", "demo38", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exists already" in err and "Traceback" not in err
    assert not (tmp_path / "nowhere").exists()  # nothing written through the link
