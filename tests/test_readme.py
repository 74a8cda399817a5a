"""The README's Python snippets run as the scripts a user would paste them into.

Each ```python block carries a marker on the line above it: ``<!-- readme-test: run -->`` (run it
as a script, in a fresh folder, with a subprocess: the way ``workers=2`` spawns and re-imports it)
or ``<!-- readme-test: fragment (why) -->`` (a fragment that needs data from elsewhere). A block
without a marker fails the test, so a new snippet cannot be skipped silently.
"""

import re
import subprocess
import sys

import pytest

from .conftest import REPO

_BLOCK = re.compile(r"(?:<!-- readme-test: (\w+)[^>]*-->\n)?```python\n(.*?)```", re.S)


def _blocks():
    return [(m.group(1), m.group(2), (REPO / "README.md").read_text()[:m.start()].count("\n") + 1)
            for m in _BLOCK.finditer((REPO / "README.md").read_text())]


def test_every_python_block_is_marked():
    blocks = _blocks()
    assert [line for marker, _, line in blocks if marker not in ("run", "fragment")] == []
    assert sum(marker == "run" for marker, _, _ in blocks) >= 3


@pytest.mark.parametrize("line", [line for marker, _, line in _blocks() if marker == "run"])
def test_runnable_snippet_runs_as_a_script(tmp_path, line):
    code = next(code for _, code, at in _blocks() if at == line)
    script = tmp_path / "snippet.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"README line {line}:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    if "run_scenario" in code:  # the runner snippet: every episode ran, none as an infra error
        ran, infra_errors, regraded = map(int, proc.stdout.split()[-3:])
        assert ran == regraded > 0 and infra_errors == 0, proc.stdout


def _look_at_a_run_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("### Look at a run"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip().startswith("rsigym ")]


def test_the_look_at_a_run_commands_all_run(tmp_path):
    """Each command of "Look at a run", as written, in a folder holding runs/trace_quickstart (one task
    of it). The trace_llm command runs against the fake provider (--api-base; one task): its
    --cost-limit and --episode-timeout with the default 16 episodes in flight are what is checked."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from fake_provider import FakeProvider

    commands = _look_at_a_run_commands()
    assert [c.split()[1] for c in commands] == ["view", "export", "run"]
    cli = [sys.executable, "-m", "rsigym.cli.commands"]
    env = {**__import__("os").environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def run(args: list[str]) -> subprocess.CompletedProcess:
        proc = subprocess.run(cli + args, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, f"rsigym {' '.join(args)}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        assert "Traceback" not in proc.stderr
        return proc

    run(["run", "trace_quickstart", "--limit", "1", "--workers", "0", "--no-progress"])
    with FakeProvider(latency_s=0.02) as provider:
        for command in commands:
            args = command.split()[1:]
            if args[0] == "run":
                args += ["--api-base", provider.api_base, "--limit", "1", "--workers", "1", "--no-progress"]
            proc = run(args)
    assert (tmp_path / "runs" / "trace_quickstart" / "view.html").exists()
    assert list((tmp_path / "runs" / "trace_quickstart").glob("*.parquet"))
    assert "endpoint check: 1 endpoint answered" in proc.stderr and "0 infra errors" in proc.stdout
