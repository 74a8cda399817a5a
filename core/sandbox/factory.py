"""Choosing a provider and opening a sandbox with it."""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

from rsigym.errors import UserError
from rsigym.sandbox.base import Sandbox, SandboxLimits
from rsigym.sandbox.image import image_present, image_tag
from rsigym.sandbox.local import LocalSandbox

if TYPE_CHECKING:
    from rsigym.sandbox.docker import DockerSandbox

__all__ = ["PROVIDERS", "docker_available", "resolve_provider", "open_sandbox"]

PROVIDERS = ("auto", "docker", "local")

# (pid, image) -> (usable, reason when not). Per process: a forked worker probes for itself.
_PROBES: dict[tuple[int, str | None], tuple[bool, str]] = {}


def _probe(image: str | None) -> tuple[bool, str]:
    """Whether the engine answers and, when ``image`` is given, has it; cached per process."""
    key = (os.getpid(), image)
    if key not in _PROBES:
        _PROBES[key] = _probe_uncached(image)
    return _PROBES[key]


def _probe_uncached(image: str | None) -> tuple[bool, str]:
    try:
        import docker
    except ImportError:
        return False, "the docker Python package is not installed"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure here means "no engine"
        return False, f"no Docker engine answers ({type(exc).__name__}: {exc})"
    try:
        if image is not None and not image_present(client, image):
            return False, f"Docker image {image} is missing (run `rsigym sandbox build`)"
    finally:
        client.close()
    return True, ""


def docker_available() -> bool:
    """True when a Docker engine answers (cached per process)."""
    return _probe(None)[0]


def resolve_provider(provider: str = "auto", image: str | None = None) -> tuple[str, str | None]:
    """The provider ``open_sandbox`` would use, and why it fell back when it did.

    Args:
        provider: ``auto``, ``docker`` or ``local``.
        image: Image tag ``auto`` needs present; the recipe's tag when None.

    Returns:
        ``(provider_used, fallback_reason)``; the reason is None unless ``auto`` chose local.

    Raises:
        UserError: Unknown provider name.
    """
    if provider not in PROVIDERS:
        raise UserError(f"unknown sandbox provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    if provider != "auto":
        return provider, None
    usable, reason = _probe(image or image_tag())
    return ("docker", None) if usable else ("local", reason)


def open_sandbox(
    provider: str = "auto", limits: SandboxLimits | None = None, image: str | None = None
) -> Sandbox:
    """Open a sandbox; close it (or use ``with``) to release it.

    ``docker`` takes a warm container from the process-wide pool for ``(image, limits)``;
    ``local`` makes a LocalSandbox (no isolation); ``auto`` uses docker when the engine answers
    and the image is present, else local with a RuntimeWarning saying why. ``info`` records the
    provider used, ``requested`` and, after a fallback, ``fallback_reason``.

    Raises:
        UserError: Unknown provider name.
        SandboxUnavailable: ``docker`` was asked for and no engine answers.
        SandboxError: ``docker`` was asked for and the image is missing.
    """
    limits = limits or SandboxLimits()
    image = image or image_tag()
    used, reason = resolve_provider(provider, image)
    sandbox: LocalSandbox | DockerSandbox
    if used == "docker":
        from rsigym.sandbox.pool import shared_pool  # keeps `local` free of the docker SDK

        sandbox = shared_pool(image, limits).acquire()
    else:
        if reason is not None:
            warnings.warn(f"sandbox falls back to local (no isolation): {reason}", RuntimeWarning, stacklevel=2)
        sandbox = LocalSandbox(limits)
    extra = {"requested": provider, **({"fallback_reason": reason} if reason else {})}
    sandbox._info_extra.update(extra)
    return sandbox
