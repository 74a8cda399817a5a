"""The serving image, built with no image registry (``rsigym serve --build-image``), serves an env to a
remote client as an unprivileged user and records the episode inside the container."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("rsigym.serve.openenv_server", reason="needs the 'serve' extra")

import httpx  # noqa: E402

import rsigym.remote as remote  # noqa: E402
from rsigym.envs.blackbox.objectives import make_task  # noqa: E402
from rsigym.serve.image import build_serve_image, image_dockerfile  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.image]

TAG = "rsigym-serve:test"
ACTION = {"learning_rate": 1e-3, "momentum": 0.9, "layers": 2, "optimizer": 1}


def test_the_dockerfile_installs_offline_into_a_venv_and_serves_unprivileged():
    text = image_dockerfile("rsigym-sandbox:abc", "pip-26.3-py3-none-any.whl")
    assert text.startswith("FROM rsigym-sandbox:abc\n")
    assert "--no-index" in text and "pip check" in text and "venv --without-pip" in text
    assert text.index("COPY deps") < text.index("COPY app")  # dependencies cached apart from rsigym
    assert "\nUSER rsigym\n" in text and '"--host", "0.0.0.0"' in text


def _wait_healthy(url: str, container, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=5.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        container.reload()
        if container.status == "exited":
            pytest.fail(f"the container exited: {container.logs().decode()[-2000:]}")
        time.sleep(1.0)
    pytest.fail(f"no /health from {url} within {timeout_s:g} s: {container.logs().decode()[-2000:]}")


def test_the_image_serves_an_env_and_records_its_episode(docker_client, sandbox_image):
    build_serve_image(TAG, client=docker_client, log=lambda line: None, base=sandbox_image)
    container = docker_client.containers.run(TAG, ["rsigym/BlackBox-v0", "--set", "max_trials=1"], detach=True,
                                             ports={"8000/tcp": ("127.0.0.1", None)})
    try:
        container.reload()
        url = f"http://127.0.0.1:{container.ports['8000/tcp'][0]['HostPort']}"
        _wait_healthy(url, container)
        env = remote.make(url, agent_id="image-test")
        try:
            env.reset(seed=0, options={"task_id": "bb-003"})
            _, reward, terminated, _, info = env.step(ACTION)
        finally:
            env.close()
        assert terminated and "error" not in info
        assert reward == make_task("bb-003").value(ACTION)  # the same env, computed in the container
        assert container.exec_run(["id", "-u"]).output.decode().strip() == "10001"
        deadline = time.monotonic() + 30.0
        records = b""
        while time.monotonic() < deadline and b"image-test" not in records:  # written when the session closes
            records = container.exec_run(["cat", "/runs/serve/records.jsonl"]).output
            time.sleep(0.5)
        assert b'"task_id":"bb-003"' in records and b"image-test" in records
    finally:
        container.remove(force=True)
