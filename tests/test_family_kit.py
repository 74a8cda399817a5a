"""The plug-in kit: ``rsigym new family`` writes a family that passes ``rsigym.testing.check_family``
and ``rsigym run`` once installed, ``check_family`` catches a broken one, and every bundled family
passes it.

The skeleton is installed the way a user installs it (``pip install`` of the folder, here with
``--target`` into the test's tmp dir, no network, no build isolation), so its names reach rsigym
through entry points only, in the test's subprocesses and in ``rsigym run``'s spawned workers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rsigym.testing import check_family, family_members
from tests.security.env_fuzz_support import env_kwargs

from .conftest import rsigym_cmd

BUNDLED = ["probe", "blackbox", "tooluse", "hpo", "evolution", "dataselect", "forecast", "coderepair", "workflow"]


def _install(project: Path, site: Path) -> dict[str, str]:
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                           "--target", str(site), "-q", str(project)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def _python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=900, env=env, cwd=cwd)


@pytest.mark.slow
def test_new_family_passes_check_family_and_rsigym_run_then_a_broken_one_fails(tmp_path):
    made = subprocess.run([*rsigym_cmd(), "new", "family", "toy", "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "toy"
    assert {p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()} >= {
        "pyproject.toml", "toy/env.py", "toy/tasks.py", "toy/agents.py", "toy/graders.py", "toy/analyses.py",
        "scenarios/toy.yaml", "tests/test_family.py"}
    env = _install(project, tmp_path / "site")

    # the skeleton's own tests: check_family("toy") and its control
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project,
                           capture_output=True, text=True, timeout=900, env=env)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert "2 passed" in tests.stdout

    run = subprocess.run([*rsigym_cmd(), "run", "scenarios/toy.yaml", "--workers", "2", "--no-progress"],
                         cwd=project, capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "64 run now, 0 infra errors" in run.stdout, run.stdout
    report = (project / "runs" / "toy" / "report.md").read_text()
    assert "bisect: uses the feedback; random: no evidence it uses the feedback" in report

    # the same family with a grader that reads the clock instead of the record, and an env whose
    # step raises on the guess 0: check_family must name both
    graders = project / "toy" / "graders.py"
    graders.write_text(graders.read_text().replace(
        "return Grade(self.name, self.version, float(state[\"guesses\"][-1] == secret),",
        "import time\n        return Grade(self.name, self.version, time.perf_counter_ns() % 1000 / 1000,"))
    env_py = project / "toy" / "env.py"
    env_py.write_text(env_py.read_text().replace("        guess = int(value[\"guess\"])\n",
                                                 "        guess = int(value[\"guess\"])\n        1 / guess\n"))
    env = _install(project, tmp_path / "site2")
    checked = _python("""
        from rsigym.testing import check_family
        report = check_family("toy", fuzz_actions=50, raise_on_failure=False)
        print(report.text())
        print("FAILED", sorted({r.check for r in report.failures}))
    """, env, tmp_path)
    assert checked.returncode == 0, checked.stderr[-3000:]
    failed = checked.stdout.strip().splitlines()[-1]
    assert "'episode'" in failed and "'fuzz'" in failed, checked.stdout
    assert "live" in checked.stdout and "regraded" in checked.stdout  # the clock-reading grader
    assert "ZeroDivisionError" in checked.stdout  # the env bug, found by the fuzz


def test_check_family_refuses_a_source_that_adds_nothing():
    with pytest.raises(ValueError, match="adds nothing through rsigym's entry points"):
        family_members("no_such_family_anywhere")


def test_new_family_refuses_bad_names_and_existing_folders_in_one_line(tmp_path):
    (tmp_path / "taken").mkdir()
    for name, message in [("Bad-Name", "is not a usable name"), ("json", "already the name of an importable module"),
                          ("taken", "exists already; nothing written")]:
        proc = subprocess.run([*rsigym_cmd(), "new", "family", name, "--out", str(tmp_path)], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


# Small settings beyond tests/security/env_fuzz_support.py's: the episodes' task where the first
# listed one is large, HyperparamSearch's episodes on the tiny preset (a record stores JSON kwargs,
# not the analytic trial runner), the LLM judge on an offline model.
# DataSelection's episodes run the pool its kwargs make small (digits, 400 items); its first task
# (function_calling) would run at the full default size, which its own tests cover
TASKS = {"rsigym/ProgramEvolution-v0": "bin_packing_online", "rsigym/DataSelection-v0": "digits"}
EPISODES = {"rsigym/HyperparamSearch-v0": {"preset": "tiny", "budget": 2}}
GRADERS = {"llm_judge": {"model": "rsigym/judge_lenient"}, "evolution_heldout": {"sandbox": "auto"}}  # auto: local where no engine


@pytest.mark.slow
@pytest.mark.parametrize("family", BUNDLED)
def test_every_bundled_family_passes_check_family(family):
    """``check_env`` on each env id (the other env checks run per env id in
    tests/test_env_conformance.py, through the same functions), every condition, an episode of the
    family's first agent kind and of ``random``, records round-tripped and regraded by every grader
    of the family, every analysis."""
    members = family_members(f"rsigym.envs.{family}")
    assert members.envs, family
    kwargs = {env_id: env_kwargs(env_id)[0][1] for env_id in members.envs}
    agents = [{"kind": kind} for kind in [*members.agents[:1], "random"]]
    report = check_family(f"rsigym.envs.{family}", env_kwargs=kwargs, episode_kwargs=EPISODES, task_ids=TASKS,
                          agents=agents, grader_params=GRADERS, checks=["check_env"], max_steps=5)
    assert {r.check for r in report.results} >= {"check_env", "episode"}
    assert sum(r.check == "episode" for r in report.results) == len(agents) * len(members.envs)


def test_check_family_runs_after_a_plain_install_and_the_fuzz_names_what_it_needs(monkeypatch):
    """Without hypothesis (a plain install), every check but the fuzz runs; the fuzz fails with one
    line naming the package and the extra in words that work from a checkout."""
    import sys

    for name in [m for m in sys.modules if m == "hypothesis" or m.startswith("hypothesis.")
                 or m == "rsigym.testing.fuzz"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # import hypothesis -> ModuleNotFoundError
    report = check_family("rsigym.envs.probe", checks=["check_env", "deterministic", "example_actions", "fuzz"],
                          fuzz_actions=5, max_steps=3, raise_on_failure=False)
    failed = {r.check: r for r in report.results if not r.ok}
    assert set(failed) == {"fuzz"}, failed
    message = str(failed["fuzz"].detail)
    assert "pip install hypothesis" in message and "pip install -e '.[test]'" in message
