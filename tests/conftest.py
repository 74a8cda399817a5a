"""Shared fixtures. Tests run against the installed package (``pip install -e .[test,ray]``)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _docker_unavailable(reason: str) -> None:
    if os.environ.get("RSIGYM_REQUIRE_DOCKER") == "1":  # CI starts an engine: never skip there
        pytest.fail(f"RSIGYM_REQUIRE_DOCKER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_client():
    """A client of a Docker engine that answers; else skip (fail under RSIGYM_REQUIRE_DOCKER=1)."""
    try:
        import docker
    except ImportError as exc:
        _docker_unavailable(f"the docker SDK is not installed: {exc}")
    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means there is no engine here
        _docker_unavailable(f"no Docker engine answers: {exc}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def sandbox_image(docker_client):
    """The sandbox image, built offline on first use."""
    from rsigym.sandbox import build_image
    from rsigym.sandbox.image import DEFAULT_MIRROR

    # Tests are outside the package, so they may read the mirror override the CLI would.
    mirror = os.environ.get("RSIGYM_DEBIAN_MIRROR", DEFAULT_MIRROR)
    return build_image(log=lambda line: None, mirror=mirror, client=docker_client)


@pytest.fixture(autouse=True)
def _docker_marker_needs_an_engine(request):
    """Every ``@pytest.mark.docker`` test skips without an engine (fails under RSIGYM_REQUIRE_DOCKER=1),
    whether or not it asks for a Docker fixture itself."""
    if request.node.get_closest_marker("docker") is not None:
        request.getfixturevalue("sandbox_image")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RSIGYM_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def write_scenario(path: Path, **overrides) -> Path:
    """A small Probe-v0 battery on the local sandbox; override any top-level key."""
    import yaml

    data = {
        "name": "probe-test",
        "env": {"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "local", "low": 0, "high": 100}},
        "tasks": {"split": "test", "limit": 3},
        "conditions": ["none", "reverse_hints"],
        "agents": [{"id": "bisect", "kind": "probe_bisect"}, {"id": "random", "kind": "random"}],
        "seeds": [0, 1],
        "max_steps": 20,
        "graders": ["probe_answer", "probe_efficiency"],
    }
    data.update(overrides)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def rsigym_cmd() -> list[str]:
    return [sys.executable, "-m", "rsigym.cli.commands"]


def cli_here(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``rsigym ARGV`` through the CLI's entry point in this process, for a caller that checks what
    the command did and printed, not its process (a subprocess costs 0.5-4 CPU-seconds of imports:
    ``rsigym report`` 1.7, ``rsigym list`` 4.2 on the 2-core VM). The exit status, stdout and stderr
    as ``subprocess.run(..., capture_output=True, text=True)`` gives them; argparse's exits too."""
    from rsigym.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd or os.getcwd()), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as exc:  # argparse: usage errors exit 2, --help and --version 0
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
    return subprocess.CompletedProcess(["rsigym", *argv], status, out.getvalue(), err.getvalue())
