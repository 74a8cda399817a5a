"""An image that serves an env id, built with no image registry (``rsigym serve --build-image``).

The base is the sandbox image (``rsigym.sandbox.image``: Debian minbase with python3, made by
``debootstrap`` and imported, no registry). rsigym and its ``serve`` extra come as wheels that this
machine's pip builds or fetches from the package indexes it is set up for (``pip wheel``), so the
image build itself needs no network: the wheels are copied in and installed with the pip wheel
among them (the base has no pip) into a venv (Debian's python refuses system-wide installs), and
``pip check`` must pass. The dependencies go into one layer and rsigym's own wheel into the next,
so after a change to rsigym alone the engine's layer cache rebuilds only the small second layer.
The container serves as an unprivileged user on port 8000, records under ``/runs``.

Where a registry is reachable, ``rsigym serve --dockerfile`` prints a plain Dockerfile
(``FROM python:3.11-slim``) instead.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rsigym.errors import SandboxError

if TYPE_CHECKING:
    import docker

__all__ = ["DEFAULT_IMAGE_TAG", "build_serve_image", "image_dockerfile", "default_source"]

DEFAULT_IMAGE_TAG = "rsigym-serve:latest"
CONTAINER_PORT = 8000


def image_dockerfile(base: str, pip_wheel: str) -> str:
    """The Dockerfile of the build context ``build_serve_image`` lays out (``deps/``: every dependency's
    wheel, ``pip_wheel`` among them; ``app/``: rsigym's wheel)."""
    return f"""\
FROM {base}
USER root
COPY deps /tmp/deps
RUN python3 -m venv --without-pip /opt/rsigym \\
 && /opt/rsigym/bin/python /tmp/deps/{pip_wheel}/pip install --no-cache-dir --no-index --no-deps /tmp/deps/*.whl \\
 && rm -rf /tmp/deps \\
 && useradd --create-home --uid 10001 rsigym && mkdir -p /runs && chown rsigym /runs
COPY app /tmp/app
RUN /opt/rsigym/bin/python -m pip install --no-cache-dir --no-index --no-deps /tmp/app/*.whl \\
 && /opt/rsigym/bin/python -m pip check && rm -rf /tmp/app
ENV PATH=/opt/rsigym/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /home/rsigym
USER rsigym
EXPOSE {CONTAINER_PORT}
# 0.0.0.0 inside the container only: publish the port to the host's loopback (-p 127.0.0.1:8000:8000)
ENTRYPOINT ["rsigym", "serve", "--host", "0.0.0.0", "--port", "{CONTAINER_PORT}", "--out", "/runs/serve"]
CMD ["rsigym/BlackBox-v0"]
"""


def default_source() -> str:
    """What pip builds rsigym from: this checkout when rsigym runs from one (an editable install), else
    the installed version from the package indexes."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "core" / "serve").is_dir():
        return str(root)
    from importlib.metadata import version

    return f"rsigym=={version('rsigym')}"


def _pip_wheels(source: str, into: Path, log: Callable[[str], None]) -> None:
    requirement = f"{source}[serve]" if not source.startswith("rsigym==") else source.replace("==", "[serve]==", 1)
    argv = [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(into), requirement, "pip"]
    log(f"pip wheel {requirement} (rsigym, its dependencies and pip, from this machine's package indexes)")
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tail = "\n".join(line for line in proc.stdout.splitlines() if "is ignored" not in line)[-2000:]
        raise SandboxError(f"pip wheel failed with exit code {proc.returncode}:\n{tail}")


def build_serve_image(tag: str = DEFAULT_IMAGE_TAG, *, source: str | None = None,
                      client: "docker.DockerClient | None" = None, log: Callable[[str], None] = print,
                      base: str | None = None) -> str:
    """Build the serving image offline; returns its tag.

    Args:
        tag: The image's tag.
        source: What pip builds rsigym from (a checkout's path, or ``rsigym==VERSION``); default
            ``default_source()``.
        client: A docker client; one from the environment when None.
        log: Receives one line per step.
        base: The base image; default the sandbox image, built offline first if absent.

    Raises:
        SandboxError: no Docker engine, debootstrap missing for the base, or a pip or build step failed.
    """
    from rsigym.sandbox.image import _docker_client, build_image

    client = client or _docker_client()
    base = base or build_image(log=log, client=client)
    workspace = Path(tempfile.mkdtemp(prefix="rsigym-serve-image-"))
    try:
        wheels = workspace / "wheels"
        _pip_wheels(source or default_source(), wheels, log)
        deps, app = workspace / "context" / "deps", workspace / "context" / "app"
        deps.mkdir(parents=True)
        app.mkdir()
        pip_wheel = ""
        for wheel in sorted(wheels.glob("*.whl")):
            name = wheel.name.split("-")[0].lower()
            shutil.copy2(wheel, (app if name == "rsigym" else deps) / wheel.name)  # copy2: same mtime, same cache
            if name == "pip":
                pip_wheel = wheel.name
        if not pip_wheel or not any(app.iterdir()):
            raise SandboxError(f"pip wheel gave no {'pip' if not pip_wheel else 'rsigym'} wheel in {wheels}")
        (workspace / "context" / "Dockerfile").write_text(image_dockerfile(base, pip_wheel))
        log(f"building {tag} from {base} ({sum(1 for _ in deps.iterdir())} dependency wheels)")
        try:
            client.images.build(path=str(workspace / "context"), tag=tag, rm=True, forcerm=True)
        except Exception as exc:  # noqa: BLE001 - BuildError, APIError: one line with the engine's reason
            raise SandboxError(f"building {tag} failed: {exc}") from exc
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    log(f"built {tag}: docker run --rm -p 127.0.0.1:8000:{CONTAINER_PORT} -v \"$PWD/runs:/runs\" {tag} ENV_ID")
    return tag
