"""Sandboxes that run untrusted commands: a locked-down docker container, or a local subprocess.

Open one with :func:`open_sandbox` (``auto`` prefers docker and says so when it falls back), run
commands with ``exec``, move files with ``write_files``/``read_file``, and close it. Commands run
as the untrusted ``"user"`` or as a protected ``"harness"`` identity (see ``rsigym.sandbox.base``). The docker
SDK is imported only when a docker sandbox is used, so the local provider works without it.

It may import ``rsigym.errors`` only: any part of rsigym (and an env of any family) can open one.
"""

from rsigym.errors import SandboxError, SandboxUnavailable
from rsigym.sandbox.base import ExecResult, Identity, Sandbox, SandboxLimits, validate_exec_args
from rsigym.sandbox.check import check_sandbox
from rsigym.sandbox.docker import DockerSandbox
from rsigym.sandbox.factory import docker_available, open_sandbox, resolve_provider
from rsigym.sandbox.image import build_image, image_tag
from rsigym.sandbox.local import LocalSandbox
from rsigym.sandbox.pool import DockerPool, clean_containers, shared_pool

__all__ = [
    "Sandbox",
    "ExecResult",
    "SandboxLimits",
    "Identity",
    "validate_exec_args",
    "LocalSandbox",
    "DockerSandbox",
    "DockerPool",
    "shared_pool",
    "open_sandbox",
    "resolve_provider",
    "docker_available",
    "image_tag",
    "build_image",
    "check_sandbox",
    "clean_containers",
    "SandboxError",
    "SandboxUnavailable",
]
