"""The command line's contract (issue 18): version, help, usage, overrides, dry runs, checked
resume, honest exit codes, quiet pipes and interrupts, one-line errors without Docker."""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rsigym.cli.commands import _build_parser, main
from rsigym.errors import UserError
from rsigym.records.jsonl import read_records
from rsigym.scenario.manifest import MANIFEST_FILE
from rsigym.runner import RECORDS_FILE
from rsigym.scenario import parse_scenario

from ..conftest import rsigym_cmd, write_scenario

TINY = {"tasks": ["probe-100", "probe-101"], "conditions": ["none"], "seeds": [0],
        "agents": [{"id": "bisect", "kind": "probe_bisect"}], "graders": ["probe_efficiency"]}


def _main(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err.splitlines()


def test_version_help_for_every_argument_and_usage_without_a_command(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and re.fullmatch(r"rsigym \S+\n", capsys.readouterr().out)
    missing = []
    parsers = [_build_parser()]
    while parsers:
        parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += action.choices.values()
            elif action.help is None or (action.help != argparse.SUPPRESS and not action.help.strip()):
                missing.append(f"{parser.prog} {action.dest}")
    assert missing == []
    status, out, err = _main(capsys)
    assert status == 2 and err[0].startswith("usage: rsigym") and len(err) == 2
    assert err[1].startswith("rsigym: error: choose a command: run, report")
    status, _, err = _main(capsys, "run")
    assert status == 2 and err == ["rsigym: error: run: the following arguments are required: scenario; "
                                   "see rsigym run --help"]


def test_sandbox_commands_without_docker_are_one_line(capsys, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    for action in ("build", "clean"):
        status, _, err = _main(capsys, "sandbox", action)
        assert status == 2 and len(err) == 1, err
        assert err[0].startswith(f"rsigym: error: sandbox {action}: Docker engine not reachable")


def test_the_schema_error_points_to_a_file_that_exists():
    data = {"name": "t", "env": {"id": "rsigym/Probe-v0"}, "agents": [{"kind": "random"}], "seeds": [0],
            "graders": [5]}
    with pytest.raises(UserError) as caught:
        parse_scenario(data, "s.yaml")
    path = re.search(r"see (\S+\.json)", str(caught.value)).group(1)
    assert Path(path).is_file()


def test_set_tasks_limit_and_dry_run(capsys, tmp_path):
    path = write_scenario(tmp_path / "s.yaml", **TINY)
    out = tmp_path / "out"
    status, stdout, err = _main(capsys, "run", path, "--out", out, "--dry-run", "--set", "seeds=[0, 1]",
                                "--set", "agents[0].id=b2")
    assert status == 0 and not out.exists(), err
    assert "4 episodes = 2 tasks x 1 conditions x 1 agents x 2 seeds x 1 reps" in stdout
    assert "agent b2 (probe_bisect): 4 episodes to run; cost $0 (no hosted model)" in stdout
    status, stdout, err = _main(capsys, "run", path, "--out", out, "--dry-run", "--tasks", "probe-101", "--limit", "1")
    assert status == 0 and "1 episodes = 1 tasks" in stdout
    for bad, message in ((["--set", "agents[3].id=x"], "--set agents[3].id: agents[3]: no such list entry"),
                         (["--set", "seeds"], "--set expects KEY=VALUE"),
                         (["--tasks", "probe-10"], "--tasks: 'probe-10' is not a task of this scenario "
                                                    "(did you mean 'probe-10")):
        status, _, err = _main(capsys, "run", path, "--out", out, "--dry-run", *bad)
        assert status == 2 and len(err) == 1 and message in err[0], err


def test_a_resume_with_another_max_steps_is_refused_with_the_diff_and_force_new_starts_a_new_folder(capsys, tmp_path):
    path = write_scenario(tmp_path / "s.yaml", **TINY)
    out = tmp_path / "out"
    status, stdout, err = _main(capsys, "run", path, "--out", out, "--workers", 0, "--limit", 1)
    assert status == 0, err
    assert "run now: 1 finished, 0 agent errors, 0 infra errors, 0 grader errors" in stdout
    assert err == ["probe-test: 1/1 episodes"]  # not a terminal: plain progress lines
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["scenario"]["max_steps"] == 20 and len(manifest["scenario_sha256"]) == 64
    assert {"rsigym_version", "git_revision", "python", "packages"} <= set(manifest)
    assert "gymnasium" in manifest["packages"]

    status, stdout, err = _main(capsys, "run", path, "--out", out, "--workers", 0, "--set", "max_steps=3")
    assert status == 2 and stdout == ""
    assert err[0].startswith(f"rsigym: error: {out} holds a run of a different scenario; resume refused")
    assert "--force-new" in err[0] and err[1:] == ["  scenario.max_steps: 20 -> 3"]
    assert len(read_records(out / RECORDS_FILE)) == 1  # untouched

    status, stdout, err = _main(capsys, "run", path, "--out", out, "--workers", 0, "--set", "max_steps=3",
                                "--force-new", "--no-progress")
    assert status == 0 and err == [f"rsigym: new run folder {out}-2"]
    assert json.loads((tmp_path / "out-2" / MANIFEST_FILE).read_text())["scenario"]["max_steps"] == 3
    assert len(read_records(tmp_path / "out-2" / RECORDS_FILE)) == 2
    # the same scenario resumes (the tasks left by --limit run now), and the folder's copy is unchanged
    status, stdout, _ = _main(capsys, "run", path, "--out", out, "--workers", 0, "--no-progress")
    assert status == 0 and "2 episodes: 1 already recorded, 1 run now" in stdout
    assert "max_steps: 20" in (out / "scenario.yaml").read_text()


def test_two_models_never_share_a_run_folder(capsys, tmp_path, monkeypatch):
    # an agent that names a model (as oneshot_llm does) is what --model overrides; bisection ignores it
    path = write_scenario(tmp_path / "s.yaml", **dict(TINY, agents=[{"id": "m", "kind": "probe_bisect", "model": "x/y"}]))
    out = tmp_path / "out"
    status, _, err = _main(capsys, "run", path, "--out", out, "--workers", 0, "--model", "rsigym/random",
                           "--limit", 1, "--no-progress")
    assert status == 0, err
    status, _, err = _main(capsys, "run", path, "--out", out, "--workers", 0, "--model", "rsigym/hpo_random",
                           "--limit", 1)
    assert status == 2 and '  scenario.agents[0].model: "rsigym/random" -> "rsigym/hpo_random"' in err


def test_infra_errors_are_retried_on_resume_unless_kept(capsys, tmp_path):
    path = write_scenario(tmp_path / "s.yaml", **dict(TINY, env={"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "local"}}))
    out = tmp_path / "out"
    assert _main(capsys, "run", path, "--out", out, "--workers", 0, "--no-progress")[0] == 0
    records = read_records(out / RECORDS_FILE).records
    from rsigym.records.jsonl import rewrite_records

    for record in records:
        record.termination, record.error, record.grades = "infra_error", "SandboxUnavailable: engine gone [x.py:1 in f]", []
    rewrite_records(out / RECORDS_FILE, records)
    status, stdout, err = _main(capsys, "run", path, "--out", out, "--workers", 0, "--no-progress", "--keep-infra-errors")
    assert status == 0 and "2 already recorded, 0 run now" in stdout
    status, stdout, err = _main(capsys, "run", path, "--out", out, "--workers", 0, "--no-progress")
    assert status == 0 and "0 already recorded, 2 run now (2 earlier infra errors run again), 0 infra errors" in stdout
    assert len(read_records(out / "infra_errors.jsonl")) == 2


def test_infra_error_summary_and_exit_status(capsys, tmp_path, monkeypatch):
    from rsigym.runner import RunSummary, infra_error_cause
    from rsigym.cli.run_command import _print_summary
    from collections import Counter

    assert infra_error_cause("SandboxUnavailable: engine gone [docker.py:3 in exec; x.py:4 in f]") == \
        "SandboxUnavailable: engine gone"
    summary = RunSummary(tmp_path, 3, 0, 3, 2, None, infra_causes=Counter({"LLMError: no credentials": 2}))
    assert _print_summary(summary, max_infra_errors=2) == 0
    assert _print_summary(summary, max_infra_errors=1) == 1
    out, err = capsys.readouterr()
    assert "  infra error x2: LLMError: no credentials" in out
    assert "rsigym: error: 2 infra errors, more than --max-infra-errors 1" in err


def _default_sigint() -> None:
    """In the child: Ctrl-C as a terminal delivers it. A test process started in the background
    by a non-interactive shell inherits SIGINT ignored, and so would the CLI under test."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_a_waiting_run(tmp_path, preamble: str = "") -> tuple[int, bytes]:
    """Run two episodes of an agent that waits for ever, in 2 workers, with a plug-in module that
    runs ``preamble`` at import; press Ctrl-C once both episodes are in ``act``. Returns the exit
    status and stderr (the process group is killed if the test is stopped first)."""
    (tmp_path / "waiting_plugin.py").write_text(
        "import os, threading, time\nfrom rsigym.agent import register_agent\nfrom rsigym.records import Usage\n"
        + preamble +
        "class Waiting:\n    def __init__(self, spec):\n        self.spec, self.last_usage = spec, Usage()\n"
        "    def reset(self, task_info, seed):\n        pass\n"
        "    def act(self, observation):\n        open(os.environ['STARTED_FILE'] + str(os.getpid()), 'w').close()\n"
        "        time.sleep(600)\n        return {'guess': 1}\n"
        "register_agent('test_sleepy')(Waiting)\n")
    path = write_scenario(tmp_path / "s.yaml", **dict(TINY, agents=[{"id": "w", "kind": "test_sleepy"}]))
    started = tmp_path / "started-"
    proc = subprocess.Popen([*rsigym_cmd(), "run", str(path), "--out", "out", "--workers", "2", "--import",
                             "waiting_plugin"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "STARTED_FILE": str(started)}, start_new_session=True,
                            preexec_fn=_default_sigint)
    try:  # a hang is bounded by pytest-timeout, whose exception still reaches the finally below
        while len(list(tmp_path.glob("started-*"))) < 2:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group, workers included
        _, stderr = proc.communicate()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, stderr


def test_a_closed_pipe_and_ctrl_c_end_quietly(tmp_path):
    proc = subprocess.Popen([*rsigym_cmd(), "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # `rsigym list | head -1`
    _, stderr = proc.communicate(timeout=120)
    assert b"Traceback" not in stderr and b"BrokenPipeError" not in stderr, stderr
    assert proc.returncode in (0, 141)

    status, stderr = _interrupt_a_waiting_run(tmp_path)
    assert status == 130, stderr
    assert stderr.decode().strip().splitlines()[-1].startswith("rsigym: interrupted")
    assert b"Traceback" not in stderr and b"KeyboardInterrupt" not in stderr, stderr


def test_ctrl_c_ends_the_process_even_when_a_thread_would_hold_it(tmp_path):
    """A non-daemon thread that never ends (a plug-in's, or an episode thread) would keep the
    interpreter alive after Ctrl-C; the CLI ends the process with 130 within its grace period."""
    status, stderr = _interrupt_a_waiting_run(
        tmp_path, "threading.Thread(target=time.sleep, args=(3600,), name='holds-the-interpreter').start()\n")
    assert status == 130, stderr
    assert b"rsigym: interrupted" in stderr and b"Traceback" not in stderr, stderr


def test_the_sandbox_fallback_warning_prints_once_per_run_not_per_worker(tmp_path):
    path = write_scenario(tmp_path / "s.yaml", **dict(TINY, env={"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "auto"}},
                                                      seeds=[0, 1]))
    proc = subprocess.run([*rsigym_cmd(), "run", str(path), "--out", str(tmp_path / "out"), "--workers", "2"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("falls back to local") == 1, proc.stderr
    assert all(r.sandbox["provider"] == "local" for r in read_records(tmp_path / "out" / RECORDS_FILE))


def test_regrade_checks_the_fit_and_never_overwrites_a_run_folder(capsys, tmp_path):
    path = write_scenario(tmp_path / "s.yaml", **dict(TINY, tasks=["probe-100"]))
    out = tmp_path / "out"
    assert _main(capsys, "run", path, "--out", out, "--workers", 0, "--no-progress")[0] == 0
    status, _, err = _main(capsys, "regrade", out, "--grader", "action_match")
    assert status == 2 and len(err) == 1 and "grader 'action_match' does not fit rsigym/Probe-v0 records" in err[0]
    status, _, err = _main(capsys, "regrade", out, "--grader", "probe_answer", "--out", out)
    assert status == 2 and len(err) == 1 and "already holds a run" in err[0], err
    status, stdout, err = _main(capsys, "regrade", out, "--grader", "probe_answer", "--param", "tolerance=3")
    assert status == 0, err
    target = tmp_path / "out-regrade-probe_answer"
    assert f"records in {target / RECORDS_FILE}; report: {target / 'report.md'}" in stdout
    assert "tolerance=3" in (target / "report.md").read_text()
    assert json.loads((target / MANIFEST_FILE).read_text())["regraded_from"]["grader"] == "probe_answer"
    assert [len(r.grades) for r in read_records(out / RECORDS_FILE)] == [1]  # the source is untouched


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["run", "--help"], ["list", "--help"]])
def test_version_and_help_import_neither_litellm_nor_torch(argv):
    """`rsigym --version` used to import torch (a family's command module) and took 1.7 s;
    benchmarks/cli_startup.py measures it. Here: which modules the command loads."""
    code = ("import sys\nfrom rsigym.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in ('litellm', 'torch', 'optuna', 'sklearn') if m in sys.modules)\n"
            "print('HEAVY', heavy)")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY []"
    assert ("rsigym" in proc.stdout.splitlines()[0])


def test_family_commands_still_parse_and_show_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "archive" in capsys.readouterr().out
    status, _, err = _main(capsys, "archive", "build", "--seeds", "1")
    assert status == 2 and err == ["rsigym: error: --seeds must be >= 2 (a paired SE needs two), got 1"]


def test_importing_rsigym_keeps_litellm_off_the_network_for_its_price_map():
    code = "import os, rsigym; print(os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'))"
    clean = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=clean)
    assert proc.stdout.strip() == "True"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**clean, "LITELLM_LOCAL_MODEL_COST_MAP": "False"})
    assert proc.stdout.strip() == "False"  # the user's own choice is kept


def test_the_removed_retry_infra_errors_flag_is_refused_in_one_line(capsys, tmp_path):
    """Retrying infra errors is the default (tests/core/test_runner.py); the flag that did nothing is gone."""
    status, _, err = _main(capsys, "run", write_scenario(tmp_path / "s.yaml", **TINY), "--retry-infra-errors")
    assert status == 2 and len(err) == 1 and "unrecognized arguments: --retry-infra-errors" in err[0]
