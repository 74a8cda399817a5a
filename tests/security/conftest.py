"""Fixtures of the attack suite: a docker engine (skipped without one, failed without one under
``RSIGYM_REQUIRE_DOCKER=1``), the image, pools, and a ``provider`` parameter for attacks that
apply to both providers."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from rsigym.sandbox import DockerPool, DockerSandbox, LocalSandbox, SandboxLimits, build_image
from rsigym.sandbox.image import DEFAULT_MIRROR

LIMITS = SandboxLimits(memory_mb=128, pids=64, output_bytes=64_000, file_size_mb=16)


@pytest.fixture(scope="session")
def docker_client():
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means there is no engine here
        if os.environ.get("RSIGYM_REQUIRE_DOCKER") == "1":  # CI starts an engine: never skip there
            pytest.fail(f"RSIGYM_REQUIRE_DOCKER=1 but no Docker engine answers: {exc}")
        pytest.skip(f"no Docker engine answers: {exc}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def sandbox_image(docker_client):
    mirror = os.environ.get("RSIGYM_DEBIAN_MIRROR", DEFAULT_MIRROR)
    return build_image(log=lambda line: None, mirror=mirror, client=docker_client)


@pytest.fixture
def pool(docker_client, sandbox_image) -> Iterator[DockerPool]:
    """A pool of one: a released container is the next lease's, unless its reset failed."""
    with DockerPool(sandbox_image, LIMITS, size=1, client=docker_client) as pool:
        yield pool


@pytest.fixture
def own_sandbox(docker_client, sandbox_image) -> Iterator[DockerSandbox]:
    sb = DockerSandbox(sandbox_image, LIMITS, client=docker_client)
    yield sb
    sb.remove()


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def provider(request) -> str:
    return str(request.param)


@pytest.fixture
def any_sandbox(provider, request) -> Iterator[LocalSandbox | DockerSandbox]:
    """A fresh sandbox of each provider (docker: a container of its own)."""
    if provider == "local":
        with LocalSandbox(LIMITS) as sb:
            yield sb
        return
    client = request.getfixturevalue("docker_client")
    sb = DockerSandbox(request.getfixturevalue("sandbox_image"), LIMITS, client=client)
    try:
        yield sb
    finally:
        sb.remove()


@pytest.fixture
def make_repair_sandbox(request):
    """Makes a code repair sandbox (``CODEREPAIR_LIMITS``) of the named provider; the caller closes it."""
    from rsigym.envs.coderepair.execution import CODEREPAIR_LIMITS

    def make(provider: str) -> LocalSandbox | DockerSandbox:
        if provider == "local":
            return LocalSandbox(CODEREPAIR_LIMITS)
        return DockerSandbox(request.getfixturevalue("sandbox_image"), CODEREPAIR_LIMITS,
                             client=request.getfixturevalue("docker_client"))

    return make


@pytest.fixture
def repair_sandbox(provider, make_repair_sandbox) -> Iterator[LocalSandbox | DockerSandbox]:
    """A fresh code repair sandbox of each provider."""
    sb = make_repair_sandbox(provider)
    try:
        yield sb
    finally:
        sb.close()
