"""Exceptions shared across rsigym.

Two families matter to callers:

* ``UserError``: something the user can fix (a malformed scenario, an unknown grader name, a
  missing file). The CLI prints its message on one line and exits with status 2.
* ``InfraError``: the machinery failed (a dead container, a crashed worker). The runner records
  such an episode with termination ``infra_error``; it is never counted as an agent failure.
"""

from __future__ import annotations

__all__ = ["RsigymError", "UserError", "InfraError", "SandboxError", "SandboxUnavailable", "install_hint"]


def install_hint(extra: str, *packages: str) -> str:
    """How to install an optional extra, in words that work from an index and from a checkout
    (rsigym is installed from its repository: ``pip install 'rsigym[x]'`` alone fails there)."""
    return (f"pip install {' '.join(packages)} (or rsigym's '{extra}' extra: pip install -e '.[{extra}]' in a "
            f"checkout, pip install 'rsigym[{extra}]' from an index)")


class RsigymError(Exception):
    """Base class of every error rsigym raises on purpose."""


class UserError(RsigymError):
    """A mistake the user can fix; the CLI shows only the message and exits with status 2."""


class InfraError(RsigymError):
    """Infrastructure failed; the episode is recorded as ``infra_error``, not as an agent failure."""


class SandboxError(InfraError):
    """A sandbox could not do what was asked (not a failure of the program it ran)."""


class OutputLost(SandboxError):
    """A command ran but its output did not all reach the harness (an engine's stream ended early
    under load). Never the command's result; safe to retry only where the command is."""


class SandboxUnavailable(SandboxError):
    """The sandbox is gone (container dead, engine unreachable). Never scored as a success."""

    def __init__(self, message: str, *, container_id: str | None = None) -> None:
        super().__init__(message if container_id is None else f"{message} (container {container_id[:12]})")
        self.container_id = container_id
