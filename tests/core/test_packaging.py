"""The wheel must contain every sub-package, and an installed wheel must import from anywhere."""

import os
import subprocess
import sys
import sysconfig
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = {"core": "rsigym", "envs": "rsigym.envs", "agents": "rsigym.agents",
         "graders": "rsigym.graders", "scenarios": "rsigym.scenarios"}


def source_packages() -> set[str]:
    found = set()
    for folder, package in ROOTS.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder)
            if "__pycache__" in rel.parts:
                continue
            found.add(".".join([package, *rel.parts]) if rel.parts else package)
    return found


# Folders of package data, listed as packages so setuptools ships them without a warning.
DATA_PACKAGES = {"rsigym.schemas", "rsigym.sandbox.recipe", "rsigym.envs.workflow.specs"}


def test_every_source_package_is_listed_in_pyproject():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {p: f for f, p in ROOTS.items()}
    assert set(config["packages"]) - DATA_PACKAGES == source_packages()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(REPO)], check=True, timeout=300,
                   cwd=tmp_path_factory.mktemp("cwd"))
    return next(out.glob("rsigym-*.whl"))


def test_wheel_lists_every_subpackage_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in source_packages():
        assert f"{package.replace('.', '/')}/__init__.py" in names, package
    for data in ("rsigym/schemas/trajectory.schema.json", "rsigym/scenarios/schema.json",
                 "rsigym/scenarios/probe_smoke.yaml", "rsigym/py.typed",
                 "rsigym/envs/workflow/specs/evolved_offline.json"):
        assert data in names, data
    assert not any(n.startswith(("core/", "envs/", "tests/")) for n in names)


def test_installed_wheel_imports_from_another_directory(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, timeout=300)
    # Then the dependencies, from the test environment, by a plain path entry placed after the
    # venv's own site-packages (its .pth files, such as an editable rsigym finder, are not run),
    # so rsigym itself can only come from the wheel.
    site = subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   text=True).strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [str(python), "-c", "import rsigym, rsigym.envs, rsigym.agents, rsigym.graders, rsigym.sandbox;"
                            "print(rsigym.__file__); print(rsigym.__version__)"],
        cwd=elsewhere, env=clean_env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    location, version = out.stdout.split()
    assert location.startswith(str(env_dir)) and version != "0.0.0+source"
    cli = subprocess.run([str(env_dir / "bin" / "rsigym"), "list", "envs"], cwd=elsewhere,
                         env=clean_env, capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0 and "rsigym/Probe-v0" in cli.stdout, cli.stderr
