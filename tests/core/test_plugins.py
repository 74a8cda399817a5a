"""Packages outside the repository join through entry points only, in every worker process.

Each test writes a package into its tmp dir with a ``.dist-info/entry_points.txt`` (what ``pip
install`` would write), puts the folder on ``PYTHONPATH`` and runs ``rsigym run --workers 2`` in a
subprocess. Nothing in the test process registers anything, so the names can only resolve in the
spawned workers through ``importlib.metadata``: the attack this stops is a registry that only the
parent process (or only ``rsigym.graders``) fills.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from rsigym.records.jsonl import read_records

from ..conftest import rsigym_cmd

PLUGIN = '''
"""An out-of-tree plug-in: one agent, one grader, one analysis and one Probe condition."""
import os

from rsigym.records import AgentSpec, Grade, Usage
from rsigym.report import ReportSection


class FiftyAgent:
    """Always guesses 50."""

    def __init__(self, spec: AgentSpec) -> None:
        self.spec, self.last_usage = spec, Usage()

    def reset(self, task_info, seed):
        pass

    def act(self, observation):
        return {"guess": 50}


class WorkerPid:
    """Steps taken; the details say which process graded the record."""

    version = "1"
    needs = frozenset({"trajectory"})

    def grade(self, record):
        return Grade("plugin_pid", self.version, float(len(record.steps)), {"pid": os.getpid()})


def pid_report(records, out_dir):
    """How many records, and graded by how many processes."""
    pids = {g.details["pid"] for r in records for g in r.grades if g.grader == "plugin_pid"}
    return ReportSection("plugin report", f"plugin saw {len(records)} records from {len(pids)} processes")


def say_higher():
    """Shows 'higher' where the oracle said 'lower'."""
    return lambda word: "higher" if word == "lower" else word
'''

TOY_FAMILY = '''
"""A whole env family out of tree: env id, agent, grader and analysis."""
import gymnasium as gym
from gymnasium import spaces

from rsigym.records import AgentSpec, Grade, Usage
from rsigym.report import ReportSection


class CoinEnv(gym.Env):
    """Guess a seeded coin in one step."""

    def __init__(self):
        self.observation_space = spaces.Dict({"text": spaces.Text(64)})
        self.action_space = spaces.Discrete(2)
        self._coin, self._guess = 0, None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._coin, self._guess = int(self.np_random.integers(2)), None
        return {"text": "heads (0) or tails (1)?"}, {}

    def step(self, action):
        self._guess = int(action)
        return {"text": "done"}, float(self._guess == self._coin), True, False, {}

    def snapshot(self):
        return {"coin": self._coin, "guess": self._guess}


class TailsAgent:
    """Always says tails."""

    def __init__(self, spec: AgentSpec) -> None:
        self.spec, self.last_usage = spec, Usage()

    def reset(self, task_info, seed):
        pass

    def act(self, observation):
        return 1


class CoinCorrect:
    """1.0 when the guess matched the coin."""

    version = "1"
    needs = frozenset({"final_state"})

    def grade(self, record):
        state = record.final.state
        return Grade("coin_correct", self.version, float(state["coin"] == state["guess"]))


def coin_report(records, out_dir):
    """Share of correct guesses."""
    hits = [g.score for r in records for g in r.grades if g.grader == "coin_correct"]
    return ReportSection("coin report", f"coin: {sum(hits):.0f} of {len(hits)} correct")
'''


def _install(root: Path, module: str, source: str, entry_points: str) -> None:
    """What ``pip install`` leaves in site-packages: the module and its dist-info."""
    (root / f"{module}.py").write_text(source)
    dist = root / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(entry_points))


def _run(tmp_path: Path, scenario: dict) -> tuple[subprocess.Popen, Path]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([*rsigym_cmd(), "run", str(path), "--out", str(out), "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    proc.stdout_text, proc.stderr_text = proc.communicate(timeout=600)  # type: ignore[attr-defined]
    return proc, out


def test_plugin_agent_grader_analysis_and_condition_reach_spawned_workers(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _install(site, "rsigym_demo_plugin", PLUGIN, """
        [rsigym.agents]
        plugin_fifty = rsigym_demo_plugin:FiftyAgent
        [rsigym.graders]
        plugin_pid = rsigym_demo_plugin:WorkerPid
        [rsigym.analyses]
        plugin_report = rsigym_demo_plugin:pid_report
        [rsigym.conditions]
        probe.say_higher = rsigym_demo_plugin:say_higher
    """)
    assert "rsigym_demo_plugin" not in sys.modules
    proc, out = _run(tmp_path, {
        "name": "plugin", "env": {"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "local", "low": 0, "high": 100}},
        "tasks": {"split": "test", "limit": 3}, "conditions": ["none", "say_higher"],
        "agents": [{"id": "fifty", "kind": "plugin_fifty"}], "seeds": [0, 1], "max_steps": 3,
        "graders": ["plugin_pid"], "analyses": ["summary", "plugin_report"],
    })
    assert proc.returncode == 0, proc.stderr_text[-2000:]
    records = read_records(out / "records.jsonl").records
    assert len(records) == 12 and all(r.termination != "infra_error" for r in records), \
        [r.error for r in records if r.error]
    pids = {g.details["pid"] for r in records for g in r.grades if g.grader == "plugin_pid"}
    assert pids and proc.pid not in pids  # graded in the spawned workers, not in the CLI process
    assert len(pids) <= 2
    # the condition came from the plug-in: under it no step ever shows 'lower' (feedback 2)
    shown = {r.env.condition["name"] if r.env.condition else "none":
             [s.observation["feedback"] for x in records if x.env.condition == r.env.condition for s in x.steps]
             for r in records}
    assert 2 in shown["none"] and 2 not in shown["say_higher"]
    report = (out / "report.md").read_text()
    assert "plugin saw 12 records" in report


def test_a_whole_family_out_of_tree_runs_with_workers(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _install(site, "rsigym_toy_family", TOY_FAMILY, """
        [rsigym.envs]
        toyfam/Coin-v0 = rsigym_toy_family:CoinEnv
        [rsigym.agents]
        toyfam_tails = rsigym_toy_family:TailsAgent
        [rsigym.graders]
        coin_correct = rsigym_toy_family:CoinCorrect
        [rsigym.analyses]
        coin_report = rsigym_toy_family:coin_report
    """)
    proc, out = _run(tmp_path, {
        "name": "toy", "env": {"id": "toyfam/Coin-v0"}, "agents": [{"id": "tails", "kind": "toyfam_tails"}],
        "seeds": {"count": 8, "start": 0}, "max_steps": 2, "graders": ["coin_correct"],
        "analyses": ["summary", "coin_report"],
    })
    assert proc.returncode == 0, proc.stderr_text[-2000:]
    records = read_records(out / "records.jsonl").records
    assert len(records) == 8 and {r.termination for r in records} <= {"agent_stop", "success", "max_steps"}, \
        [(r.termination, r.error) for r in records]
    scores = [g.score for r in records for g in r.grades]
    expected = sum(r.final.state["coin"] == 1 for r in records)
    assert sum(scores) == expected and 0 < expected < 8  # a real grade, not a constant
    assert f"coin: {expected} of 8 correct" in (out / "report.md").read_text()
    listed = subprocess.run([*rsigym_cmd(), "list", "envs"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(site)})
    assert "toyfam/Coin-v0" in listed.stdout and "Guess a seeded coin" in listed.stdout


def test_a_broken_plugin_is_a_one_line_error_naming_it(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _install(site, "rsigym_broken_plugin", "raise ImportError('missing dependency xyz')\n", """
        [rsigym.agents]
        broken_kind = rsigym_broken_plugin:Agent
    """)
    proc, out = _run(tmp_path, {
        "name": "broken", "env": {"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "local"}},
        "tasks": {"split": "test", "limit": 1}, "agents": [{"kind": "broken_kind"}], "seeds": [0],
    })
    assert proc.returncode == 2
    line = proc.stderr_text.strip().splitlines()[-1]
    assert "broken_kind" in line and "missing dependency xyz" in line, proc.stderr_text
    assert not (out / "records.jsonl").exists() or not (out / "records.jsonl").read_text().strip()
    json.dumps(line)  # one printable line
