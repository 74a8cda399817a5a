"""``rsigym serve`` from the command line: it serves, records with live grades, stops on Ctrl-C
with the count, refuses a second server on its folder, and the folder works with report,
regrade and view."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rsigym.serve.openenv_server", reason="needs the 'serve' extra")

import rsigym.remote as remote  # noqa: E402
from rsigym.records.jsonl import read_records  # noqa: E402

RSIGYM = [sys.executable, "-m", "rsigym"]


def _start(out: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([*RSIGYM, "serve", "rsigym/Probe-v0", "--set", "sandbox=local", "--port", "0",
                                "--out", str(out), "--grader", "probe_answer", *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("serving rsigym/Probe-v0 at http://127.0.0.1:"), (line, process.stderr.read() if process.poll() is not None else "")
    return process, line.split(" at ")[1].split()[0]


def test_the_announced_address_takes_connections_before_the_server_starts(tmp_path):
    """``rsigym serve`` prints its URL before uvicorn starts; a client that connects at once must be
    queued, not refused (a bound socket that did not listen yet refused it: a flaky first request)."""
    from rsigym.serve import ServeConfig
    from rsigym.serve.server import serve

    class Announced(Exception):
        pass

    def ready(url: str) -> None:
        host, port = url.split("//", 1)[1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5):
            raise Announced(url)  # stops serve() before uvicorn runs

    with pytest.raises(Announced):
        serve(ServeConfig("rsigym/Probe-v0", {"sandbox": "local"}, run_dir=tmp_path / "served", port=0), on_ready=ready)


def _bisect(url: str) -> None:
    with remote.make(url, agent_id="bisect") as env:
        low, high = 0, 100
        env.reset(seed=7, options={"task_id": "probe-001"})
        while True:
            guess = (low + high) // 2
            observation, _, terminated, truncated, _ = env.step({"guess": guess})
            low, high = (guess + 1, high) if observation["feedback"] == 1 else (low, guess - 1)
            if terminated or truncated:
                return


def test_serve_records_and_the_folder_works_with_report_regrade_and_view(tmp_path, capsys):
    out = tmp_path / "served"
    process, url = _start(out)
    try:
        _bisect(url)
        _bisect(url)
        second = subprocess.run([*RSIGYM, "serve", "rsigym/Probe-v0", "--set", "sandbox=local", "--port", "0",
                                 "--out", str(out)], capture_output=True, text=True, timeout=120)
        assert second.returncode == 2 and "in use by" in second.stderr and len(second.stderr.splitlines()) == 1
    finally:
        os.kill(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "served: 2 episode records" in stdout

    records = read_records(out / "records.jsonl").records
    assert [r.rep for r in records] == [0, 1] and len({r.episode_key for r in records}) == 2
    for record in records:
        grade, = record.grades
        assert (grade.grader, grade.score, grade.source) == ("probe_answer", 1.0, "live")
    from rsigym.cli import main  # the folder's readers, through the CLI's entry point in this process

    for command in (["report", str(out)], ["regrade", str(out), "--grader", "probe_efficiency"], ["view", str(out)]):
        assert main(command) == 0, (command, capsys.readouterr().err)
    regraded = read_records(tmp_path / "served-regrade-probe_efficiency" / "records.jsonl").records
    assert [g.grader for g in regraded[0].grades] == ["probe_answer", "probe_efficiency"]
    assert (out / "report.md").exists() and (out / "view.html").exists()


@pytest.mark.parametrize("args,message", [
    (["serve"], "name an env id"),
    (["serve", "rsigym/Nope-v0"], "unknown env id"),
    (["serve", "rsigym/Probe-v0", "--set", "low=9", "--set", "high=3"], "cannot make rsigym/Probe-v0"),
    (["serve", "rsigym/Probe-v0", "--grader", "nope"], "nope"),
    (["serve", "rsigym/Probe-v0", "--max-sessions", "0"], "max_sessions"),
])
def test_serve_mistakes_are_one_line_before_serving(args, message, tmp_path, capsys):
    """The first mistake runs as a program (a fresh process: nothing an import prints can hide); the
    others call the same entry point in this process, which saves a start-up of 2-3 CPU-seconds each
    (what is checked is the message and the exit status, not the process)."""
    argv = [*args, "--out", str(tmp_path / "x")] if len(args) > 1 else list(args)
    if len(args) == 1:
        done = subprocess.run([*RSIGYM, *argv], capture_output=True, text=True, timeout=120)
        status, stderr = done.returncode, done.stderr
    else:
        from rsigym.cli import main

        status, stderr = main(argv), capsys.readouterr().err
    assert status == 2 and message in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert not (tmp_path / "x").exists()


def test_serve_prints_a_dockerfile_that_serves_on_the_containers_port():
    done = subprocess.run([*RSIGYM, "serve", "--dockerfile"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert 'ENTRYPOINT ["rsigym", "serve", "--host", "0.0.0.0", "--port", "8000"' in done.stdout
    assert 'pip install --no-cache-dir ".[serve]"' in done.stdout and "USER rsigym" in done.stdout


def test_the_served_app_imports_openenv_without_gradio_and_gradio_still_imports_after():
    """OpenEnv's web interface (Gradio, 2.8 CPU-s an import) is not loaded for the app rsigym serves;
    a later ``import gradio`` in the same process still gets the real module."""
    code = ("import json, sys\nimport rsigym.serve.app\n"
            "before = 'gradio' in sys.modules\nimport gradio\n"
            "print(json.dumps([before, hasattr(gradio, 'Blocks')]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[false, true]"
