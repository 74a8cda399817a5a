"""Offline build of the sandbox image: Debian minbase with python3 and numpy.

No image registry is needed: ``debootstrap`` fetches Debian packages from a mirror (or a local
one), the root tree is packed with ``tar`` and loaded with the engine's image import (the SDK's
``import_image``, the same call as ``docker import``). The tag carries a hash of :data:`RECIPE`, so
a changed recipe gives a new tag and an old image is never mistaken for the current one.

Where a registry is reachable, ``recipe/Dockerfile`` next to this module builds an equivalent
image (``docker build -t "$(python -c 'from rsigym.sandbox import image_tag; print(image_tag())')"
core/sandbox/recipe``); it is not used by this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from typing import TYPE_CHECKING, Any, Callable

from rsigym.errors import SandboxError

if TYPE_CHECKING:
    import docker

__all__ = ["RECIPE", "DEFAULT_MIRROR", "image_tag", "image_present", "build_image"]

DEFAULT_MIRROR = "http://deb.debian.org/debian"

# Everything that decides the image's content; the tag is a hash of it. The mirror is not part
# of it: any faithful mirror of the same suite gives the same packages.
RECIPE: dict[str, Any] = {
    "format": 1,
    "suite": "bookworm",
    "variant": "minbase",
    "packages": ["python3", "python3-numpy"],
    # Removed after bootstrap to shrink the image; nothing at run time reads them.
    "prune": [
        "var/cache/apt/archives",
        "var/lib/apt/lists",
        "usr/share/doc",
        "usr/share/man",
        "usr/share/info",
        "usr/share/locale",
        "var/log",
    ],
    # Made in the root tree after the prune: the mount points of the work and harness dirs as
    # 0755 (runc gives a tmpfs the mode of the dir it is mounted on, whatever mode= says, so the
    # mounts come up closed to others, with no setup exec), and the exec wrapper: a copy of dash
    # owned by the INIT uid that only its owner may read (0711; the kernel marks a process that
    # execs a binary it cannot read as non-dumpable, so the user cannot ptrace its own wrapper to
    # skip the kill at its end), on the read-only root where no identity can change it.
    "dirs": {"work": "0755", "harness": "0755", "rsigym": "0755"},
    "wrapper": {"path": "rsigym/sh", "copy_of": "usr/bin/dash", "uid": 65532, "mode": "0711"},
    # Image config set at import time (an imported tarball has none).
    "changes": [
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ENV LANG=C.UTF-8",
        "WORKDIR /work",
        "USER 65534:65534",
        'CMD ["python3"]',
    ],
}

_REPOSITORY = "rsigym-sandbox"


def _recipe_hash() -> str:
    return hashlib.sha256(json.dumps(RECIPE, sort_keys=True).encode()).hexdigest()[:12]


def image_tag() -> str:
    """The tag of the image built from :data:`RECIPE`, e.g. ``rsigym-sandbox:1a2b3c4d5e6f``."""
    return f"{_REPOSITORY}:{_recipe_hash()}"


def image_present(client: "docker.DockerClient", tag: str) -> bool:
    """True when the engine behind ``client`` has an image tagged ``tag``."""
    import docker.errors

    try:
        client.api.inspect_image(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def _docker_client() -> "docker.DockerClient":
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - docker is a hard dependency
        raise SandboxError("the docker Python package is not installed") from exc
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "no engine"
        raise SandboxError(f"Docker engine not reachable: {exc}") from exc
    return client


def _debootstrap(root: str, mirror: str, log: Callable[[str], None]) -> None:
    """Bootstrap RECIPE's suite into ``root``; raises SandboxError with the tail of the log."""
    if shutil.which("debootstrap") is None:
        raise SandboxError(
            "debootstrap not found: install it (apt-get install debootstrap), or build "
            "core/sandbox/recipe/Dockerfile where a registry is reachable"
        )
    if os.geteuid() != 0:
        raise SandboxError("debootstrap needs root: run `sudo rsigym sandbox build`")
    argv = [
        "debootstrap",
        f"--variant={RECIPE['variant']}",
        f"--include={','.join(RECIPE['packages'])}",
        RECIPE["suite"],
        root,
        mirror,
    ]
    log(f"debootstrap {RECIPE['suite']} from {mirror} (about a minute)")
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise SandboxError(f"debootstrap failed with exit code {proc.returncode}:\n{tail}")


def _prune(root: str) -> None:
    """Remove RECIPE's ``prune`` paths, then make its ``dirs`` and its ``wrapper``."""
    for rel in RECIPE["prune"]:
        path = os.path.join(root, rel)
        if os.path.isdir(path):
            # Keep the directory itself: apt and dpkg expect some of them to exist.
            for entry in os.listdir(path):
                full = os.path.join(path, entry)
                if os.path.isdir(full) and not os.path.islink(full):
                    shutil.rmtree(full)
                else:
                    os.unlink(full)
    for rel, mode in RECIPE["dirs"].items():
        os.makedirs(os.path.join(root, rel), exist_ok=True)
        os.chmod(os.path.join(root, rel), int(mode, 8))
    wrapper = RECIPE["wrapper"]
    target = os.path.join(root, wrapper["path"])
    shutil.copyfile(os.path.join(root, wrapper["copy_of"]), target)
    os.chown(target, wrapper["uid"], wrapper["uid"])
    os.chmod(target, int(wrapper["mode"], 8))


def build_image(
    force: bool = False,
    log: Callable[[str], None] = print,
    mirror: str = DEFAULT_MIRROR,
    client: "docker.DockerClient | None" = None,
) -> str:
    """Build the sandbox image offline unless it is already present.

    Args:
        force: Rebuild even when the tag exists.
        log: Receives one line per step.
        mirror: Debian mirror URL given to debootstrap (the CLI reads RSIGYM_DEBIAN_MIRROR).
        client: A docker client; one from the environment when None.

    Returns:
        The image tag.

    Raises:
        SandboxError: debootstrap or the Docker engine is missing, or a step failed.
    """
    tag = image_tag()
    client = client or _docker_client()
    if not force and image_present(client, tag):
        log(f"{tag} already present")
        return tag
    if shutil.which("tar") is None:
        raise SandboxError("tar not found; it is needed to pack the image root")
    workspace = tempfile.mkdtemp(prefix="rsigym-image-")
    try:
        root = os.path.join(workspace, "root")
        _debootstrap(root, mirror, log)
        _prune(root)
        archive = os.path.join(workspace, "root.tar")
        log("packing the root tree")
        # --numeric-owner: ids must not be remapped through the host's user database.
        subprocess.run(["tar", "-C", root, "--numeric-owner", "-cf", archive, "."], check=True)
        log(f"importing {tag}")
        repository, _, version = tag.partition(":")
        client.api.import_image(
            src=archive,
            repository=repository,
            tag=version,
            changes=[*RECIPE["changes"], f"LABEL rsigym.recipe={_recipe_hash()}"],
        )
    except subprocess.CalledProcessError as exc:
        raise SandboxError(f"packing the image failed: {exc}") from exc
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    if not image_present(client, tag):
        raise SandboxError(f"import finished but {tag} is not in the engine")
    log(f"built {tag}")
    return tag
