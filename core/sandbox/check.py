"""``rsigym sandbox check``: what works on this machine, one line per property."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from rsigym.errors import SandboxError
from rsigym.sandbox.base import ExecResult, SandboxLimits
from rsigym.sandbox.image import image_present, image_tag
from rsigym.sandbox.local import LocalSandbox

if TYPE_CHECKING:
    from rsigym.sandbox.docker import DockerSandbox

__all__ = ["check_sandbox"]

# Interfaces first: only with loopback alone is a connection attempted, to TEST-NET-1 (RFC 5737,
# never routed), so a broken isolation can never send a packet anywhere real.
_NET_PROBE = ("import os, socket\nnets = sorted(os.listdir('/sys/class/net'))\nif nets != ['lo']:\n"
              "    print('interfaces', nets)\nelse:\n    try:\n"
              "        socket.create_connection(('192.0.2.1', 9), timeout=2)\n        print('connected')\n"
              "    except OSError as e:\n        print('blocked', e)")


def _expect(result: ExecResult, wanted: str) -> tuple[bool, str]:
    text = " / ".join(line for line in (result.stdout + result.stderr).splitlines() if line.strip())
    return (result.ok and wanted in result.stdout), text[-200:] or f"exit {result.exit_code}"


def check_sandbox(image: str | None = None, limits: SandboxLimits | None = None) -> list[tuple[str, bool, str]]:
    """Run the sandbox self-checks.

    Args:
        image: Image tag to check; the recipe's tag when None.
        limits: Limits of the test container.

    Returns:
        ``(check name, passed, detail)`` per check; checks after a failed prerequisite are
        reported as failed with "skipped: ...".
    """
    image = image or image_tag()
    limits = limits or SandboxLimits(memory_mb=256)
    results: list[tuple[str, bool, str]] = []

    with LocalSandbox(limits) as local:
        ok, detail = _expect(local.exec(["python3", "-c", "import numpy; print('numpy', numpy.__version__)"]), "numpy")
        results.append(("local provider runs python3 with numpy", ok, detail))

    try:
        import docker
    except ImportError:
        return results + [("docker SDK installed", False, "pip install docker")]
    try:
        client = docker.from_env(timeout=10)
        version = client.version().get("Version", "?")
        results.append(("Docker engine reachable", True, f"engine {version}"))
    except Exception as exc:  # noqa: BLE001 - report, do not raise
        return results + [("Docker engine reachable", False, str(exc)[:200])]

    present = image_present(client, image)
    results.append(("sandbox image present", present, image if present else f"{image} missing: run `rsigym sandbox build`"))
    if not present:
        return results

    from rsigym.sandbox.docker import DockerSandbox

    try:
        sandbox = DockerSandbox(image, limits, client=client)
    except SandboxError as exc:
        return results + [("container starts", False, str(exc)[:200])]
    results.append(("container starts", True, sandbox.container_id[:12]))
    probes: list[tuple[str, Callable[[], tuple[bool, str]]]] = [
        ("exec round trip (stdin to stdout)", lambda: _expect(sandbox.exec(["cat"], stdin="ping"), "ping")),
        ("runs as an unprivileged user", lambda: _expect(sandbox.exec(["id", "-u"]), "65534")),
        ("python3 with numpy", lambda: _expect(sandbox.exec(["python3", "-c", "import numpy; print('numpy', numpy.__version__)"]), "numpy")),
        ("network blocked", lambda: _expect(sandbox.exec(["python3", "-c", _NET_PROBE]), "blocked")),
        ("read-only root", lambda: _expect(sandbox.exec(["sh", "-c", "touch /var/tmp/rsigym 2>&1 || echo refused"]), "refused")),
        ("no capabilities (empty bounding set)", lambda: _expect(sandbox.exec(["grep", "CapBnd", "/proc/self/status"]), "0000000000000000")),
        ("PID 1 under a uid no exec has", lambda: _expect(sandbox.exec(["sh", "-c", "kill -0 1 2>&1 || echo refused"]), "refused")),
        ("work dir writable", lambda: _round_trip(sandbox)),
    ]  # fmt: skip
    try:
        for name, probe in probes:
            try:
                ok, detail = probe()
            except SandboxError as exc:
                ok, detail = False, str(exc)[:200]
            results.append((name, ok, detail))
    finally:
        sandbox.remove()
        client.close()
    return results


def _round_trip(sandbox: "DockerSandbox") -> tuple[bool, str]:
    sandbox.write_files({"check.txt": "rsigym"})
    data = sandbox.read_file("check.txt")
    return data == b"rsigym", f"read back {data[:20]!r}"
