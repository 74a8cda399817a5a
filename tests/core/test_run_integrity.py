"""The losses of issue 18, each reproduced as the attack it stops: nothing lost, nothing
duplicated, one clear line. (Regrade during a run, two runs at once, a grader without a version,
duplicate task ids, an analysis that raises, secrets in output, oversized actions.)"""

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from importlib.metadata import EntryPoint

import pytest

from rsigym.errors import UserError
from rsigym.records.jsonl import read_records
from rsigym.records.record_limits import TRUNCATED_KEY, cap_for_record, is_truncated
from rsigym.records import AgentSpec, EnvRef, Trajectory
from rsigym.registry import GRADERS
from rsigym.runner import RECORDS_FILE, run_episode, run_scenario
from rsigym.runner.lock import LOCK_FILE, RunFolderLock
from rsigym.scenario import EpisodeSpec, NamedSpec, expand, load_scenario

from ..conftest import rsigym_cmd, write_scenario

PLANTED = "sk-plantedSECRET0123456789abcdef"

# A plug-in module the CLI loads with --import, in this process and in every worker: an agent that
# waits for a file before its first guess (so a test can act while a run holds its folder), an
# agent that echoes a key into its error, a grader without a version, an analysis that raises.
PLUGIN = textwrap.dedent('''
    import os, time
    from rsigym.agent import register_agent
    from rsigym.records import Usage
    from rsigym.report import register_analysis

    class WaitingAgent:
        def __init__(self, spec):
            self.spec, self.last_usage = spec, Usage()
            self.release = spec.params["release"]
        def reset(self, task_info, seed):
            self.low, self.high = 0, 100
        def act(self, observation):
            for _ in range(6000):  # polls, not a clock; pytest-timeout bounds a hang
                if os.path.exists(self.release):
                    break
                time.sleep(0.05)
            return {"guess": 50}

    class LeakyAgent:
        def __init__(self, spec):
            self.spec, self.last_usage = spec, Usage()
        def reset(self, task_info, seed):
            pass
        def act(self, observation):
            raise RuntimeError("provider said: bad key " + os.environ["PLUGIN_SERVICE_TOKEN"])

    register_agent("test_waiting")(WaitingAgent)
    register_agent("test_leaky")(LeakyAgent)

    @register_analysis("test_broken_analysis")
    def broken(records, out_dir):
        raise ZeroDivisionError("analysis bug")
''')


class NoVersionGrader:
    """A plug-in grader that forgot its version."""

    needs = frozenset({"trajectory"})

    def grade(self, record):
        raise AssertionError("never called")


@pytest.fixture
def plugin(tmp_path):
    (tmp_path / "issue18_plugin.py").write_text(PLUGIN)
    return tmp_path


def _cli(*argv, cwd, env=None, timeout=300):
    return subprocess.run([*rsigym_cmd(), *argv], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **(env or {})})


def _wait_for(predicate, what, proc=None, polls=4800):
    for _ in range(polls):  # polls of 50 ms, not a clock read; pytest-timeout bounds a hang
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {proc.stderr.read()}")
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_second_run_and_a_regrade_are_refused_while_a_run_holds_the_folder(plugin, monkeypatch):
    release = plugin / "release"
    path = write_scenario(plugin / "s.yaml", tasks=["probe-100", "probe-101"], conditions=["none"], seeds=[0],
                          agents=[{"id": "w", "kind": "test_waiting", "params": {"release": str(release)}}],
                          graders=["probe_efficiency"])
    out = plugin / "out"
    first = subprocess.Popen([*rsigym_cmd(), "run", str(path), "--out", str(out), "--workers", "0",
                              "--no-progress", "--import", "issue18_plugin"], cwd=plugin,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: (out / RECORDS_FILE).exists() and (out / LOCK_FILE).read_text().strip(),
                  "the first run to hold its folder", first)
        second = _cli("run", str(path), "--out", str(out), "--workers", "0", "--import", "issue18_plugin", cwd=plugin)
        regrade = _cli("regrade", str(out), "--grader", "probe_efficiency", "--in-place", cwd=plugin)
        for proc in (second, regrade):
            assert proc.returncode == 2, proc.stderr
            assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
            assert f"is in use by pid {first.pid} on " in proc.stderr and "rsigym run" in proc.stderr
        with pytest.raises(UserError, match=f"pid {first.pid}"):  # the Python API is refused too
            monkeypatch.syspath_prepend(str(plugin))
            run_scenario(load_scenario(path), out, workers=0, progress=False, imports=["issue18_plugin"])
    finally:
        release.write_text("go")
        first.wait(timeout=300)
    assert first.returncode == 0, first.stderr
    keys = Counter(r.episode_key for r in read_records(out / RECORDS_FILE))
    assert set(keys) == {e.key for e in expand(load_scenario(path))} and set(keys.values()) == {1}
    # the folder is free again: a regrade now works, in place, and the report is rewritten
    assert _cli("regrade", str(out), "--grader", "probe_efficiency", "--in-place", cwd=plugin).returncode == 0
    assert all(len(r.grades) == 2 for r in read_records(out / RECORDS_FILE))
    assert "probe_efficiency" in (out / "report.md").read_text()


def test_the_lock_names_its_holder_and_dies_with_it(tmp_path):
    with RunFolderLock(tmp_path, command="rsigym run x.yaml"):
        with pytest.raises(UserError, match=rf"in use by pid {os.getpid()} on .* \(rsigym run x.yaml, since "):
            RunFolderLock(tmp_path).acquire()
    with RunFolderLock(tmp_path):  # released: free again, and the stale text names nobody
        pass
    assert (tmp_path / LOCK_FILE).read_text() == ""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from rsigym.runner.lock import RunFolderLock; "
                               f"lock = RunFolderLock({str(tmp_path)!r}).acquire(); print('held', flush=True); time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(UserError, match=f"pid {holder.pid}"):
        RunFolderLock(tmp_path).acquire()
    holder.kill()  # SIGKILL: no clean-up, and still no stale lock
    holder.wait(timeout=60)
    with RunFolderLock(tmp_path):
        pass


@pytest.fixture
def no_version_plugin():
    """``noversion`` as an entry point of ``rsigym.graders`` (as a pip-installed plug-in would be)."""
    points = GRADERS._points()
    points["noversion"] = EntryPoint("noversion", f"{__name__}:NoVersionGrader", GRADERS.group)
    yield
    points.pop("noversion", None)
    GRADERS.unregister("noversion")


def test_a_plugin_grader_without_version_is_refused_before_any_episode(tmp_path, no_version_plugin):
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", graders=["probe_answer", "noversion"]))
    with pytest.raises(UserError, match=r"graders\[1\]: grader 'noversion' .*lacks version"):
        run_scenario(scenario, tmp_path / "out", workers=0, progress=False)
    assert not (tmp_path / "out" / RECORDS_FILE).exists()


def test_a_grader_that_cannot_be_built_in_a_worker_costs_its_grade_not_the_record(no_version_plugin):
    env = EnvRef("rsigym/Probe-v0", {"sandbox": "local"}, "probe-100", None)
    spec = EpisodeSpec("0" * 32, env, AgentSpec("bisect", "probe_bisect"), 0, 0, 20,
                       (NamedSpec("noversion"), NamedSpec("probe_efficiency")))
    record = run_episode(spec)  # no preflight here: the worker's own guard
    assert record.termination == "agent_stop" and record.steps
    broken, fine = record.grades
    assert broken.score is None and "lacks version" in broken.error and broken.grader == "noversion"
    assert fine.score is not None


def test_duplicate_task_ids_are_refused_at_expansion(tmp_path):
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", tasks=["probe-100", "probe-101", "probe-100"]))
    with pytest.raises(UserError, match=r"tasks\[2\]: task id 'probe-100' is listed twice"):
        run_scenario(scenario, tmp_path / "out", workers=0, progress=False)
    with pytest.raises(UserError, match=r"tasks: the episode of task 'probe-100', seed 0, .* appears twice"):
        expand(scenario)
    assert not (tmp_path / "out").exists()


def test_a_raising_analysis_keeps_the_records_and_the_other_sections_and_exits_1(plugin):
    path = write_scenario(plugin / "s.yaml", tasks=["probe-100"], conditions=["none"], seeds=[0],
                          agents=[{"id": "b", "kind": "probe_bisect"}], analyses=["summary", "test_broken_analysis"])
    proc = _cli("run", str(path), "--out", "out", "--workers", "0", "--import", "issue18_plugin", cwd=plugin)
    assert proc.returncode == 1, proc.stderr
    assert "analysis 'test_broken_analysis' failed: ZeroDivisionError: analysis bug" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(read_records(plugin / "out" / RECORDS_FILE)) == 1
    report = (plugin / "out" / "report.md").read_text()
    assert "## Summary" in report and "test_broken_analysis (failed)" in report


def test_a_planted_key_never_reaches_any_output(plugin):
    """The key sits in an agent's params, in a secret-named variable, and in an agent's error."""
    agents = [{"id": "leaky", "kind": "test_leaky", "params": {"api_key": PLANTED, "note": "x"}},
              {"id": "llm", "kind": "llm", "model": "rsigym/random", "params": {"api_key": PLANTED}}]
    path = write_scenario(plugin / "s.yaml", tasks=["probe-100"], conditions=["none"], seeds=[0], agents=agents,
                          graders=["probe_efficiency"])
    env = {"PLUGIN_SERVICE_TOKEN": PLANTED}
    refused = _cli("run", str(path), "--out", "out", "--workers", "0", "--import", "issue18_plugin", cwd=plugin, env=env)
    assert refused.returncode == 2 and "agents[1]: agent 'llm' (llm) rejects params {'api_key': '[redacted]'}" in refused.stderr
    path = write_scenario(plugin / "s.yaml", tasks=["probe-100"], conditions=["none"], seeds=[0], agents=agents[:1],
                          graders=["probe_efficiency"])
    ran = _cli("run", str(path), "--out", "out", "--workers", "0", "--import", "issue18_plugin", cwd=plugin, env=env)
    assert ran.returncode == 0, ran.stderr
    regraded = _cli("regrade", "out", "--grader", "probe_efficiency", cwd=plugin, env=env)
    assert regraded.returncode == 0, regraded.stderr
    record = read_records(plugin / "out" / RECORDS_FILE).records[0]
    assert record.termination == "agent_error" and "bad key [redacted]" in record.error
    assert record.agent.params == {"api_key": "[redacted]", "note": "x"}
    outputs = [refused.stdout, refused.stderr, ran.stdout, ran.stderr, regraded.stdout, regraded.stderr]
    files = [p for p in plugin.rglob("*") if p.is_file() and p.name != "s.yaml" and p.suffix != ".png"]
    assert len(files) >= 8  # records, manifest, scenario copy, report, of both folders
    leaks = [str(p) for p in files if PLANTED in p.read_text(errors="replace")]
    assert not leaks and not any(PLANTED in text for text in outputs), leaks


def test_a_500_deep_action_and_a_5_mb_message_are_stored_capped_and_marked():
    deep = {"guess": 1}
    for _ in range(500):
        deep = [deep]
    capped = cap_for_record({"action": deep, "message": "x" * 5_000_000, "ok": [1, "two"]})
    text = json.dumps(capped)
    assert len(text) < 300_000 and is_truncated(capped)
    assert capped["ok"] == [1, "two"] and TRUNCATED_KEY in text and "rsigym truncated: 5000000 chars" in text
    assert not is_truncated({"ok": [1, "two"], "text": "fine"})


class HugeAgent:
    """Answers with a 500-deep list, then with a 5 MB string."""

    def __init__(self, spec):
        from rsigym.records import Usage

        self.spec, self.last_usage, self.turn = spec, Usage(), 0

    def reset(self, task_info, seed):
        pass

    def act(self, observation):
        self.turn += 1
        if self.turn == 1:
            deep = {"guess": 1}
            for _ in range(500):
                deep = [deep]
            return deep
        return {"guess": "9" * 5_000_000}


def test_an_episode_of_huge_actions_is_a_record_of_bounded_size():
    from rsigym.agents import register_agent

    register_agent("test_huge")(HugeAgent)
    env = EnvRef("rsigym/Probe-v0", {"sandbox": "local"}, "probe-100", None)
    record = run_episode(EpisodeSpec("0" * 32, env, AgentSpec("huge", "test_huge"), 0, 0, 2, ()))
    assert record.termination != "infra_error", record.error
    line = record.to_json()
    assert len(line) < 2_000_000
    assert is_truncated(record.steps[0].action) and is_truncated(record.steps[1].action)
    assert Trajectory.from_json(line).steps[1].action == record.steps[1].action
