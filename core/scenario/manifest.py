"""The run manifest: what a run folder holds a run of, checked before every resume.

``manifest.json`` in a run folder holds the resolved scenario (secrets redacted), the hash of the
part that defines episodes and grades, the rsigym version, the git revision of the source tree
(when there is one), Python and the versions of the packages that shape results. A resume with a
different scenario (another model, ``max_steps``, grader, env kwarg, or another rsigym version)
would mix two runs under one report, so ``check_or_write_manifest`` refuses it with the
differences, one per line.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Sequence

import yaml

from ..errors import UserError
from ..records.trajectory import canonical_json, utc_now
from ..records.redact import redact, redact_text
from .safe_yaml import load_yaml
from .spec import Scenario

__all__ = ["MANIFEST_FILE", "SCENARIO_COPY", "ManifestMismatch", "build_manifest", "run_defining", "planned_tool_modes",
           "record_ray", "check_or_write_manifest", "scenario_diff", "holds_a_run", "next_free_folder"]

MANIFEST_FILE = "manifest.json"
SCENARIO_COPY = "scenario.yaml"
# Keys that change neither an episode nor its grades: how to run, how to describe, what to report.
_NOT_RUN_DEFINING = ("runner", "description", "analyses")
_PACKAGES = ("gymnasium", "numpy", "litellm", "torch", "scipy", "scikit-learn", "optuna", "jsonschema",
             "docker", "pettingzoo", "ray")


def run_defining(scenario_raw: dict[str, Any], rsigym_version: str) -> dict[str, Any]:
    """The part of a scenario a resume must match, plus the rsigym version that ran it."""
    part = {k: v for k, v in redact(scenario_raw).items() if k not in _NOT_RUN_DEFINING}
    return {"scenario": part, "rsigym_version": rsigym_version}


def _git_revision() -> str | None:
    source = Path(__file__).resolve().parent.parent
    if not (source / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _package_versions() -> dict[str, str]:
    found = {}
    for name in _PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def build_manifest(scenario: Scenario, tool_modes: dict[str, str] | None = None) -> dict[str, Any]:
    """The manifest of a new run of ``scenario``; ``tool_modes``: what the endpoint check's probe
    chose for ``tool_mode: auto`` agents (over LiteLLM's map)."""
    import rsigym

    defining = run_defining(scenario.raw, rsigym.__version__)
    return {
        "manifest": "rsigym.manifest/1",
        "created_at": utc_now(),
        "scenario_source": scenario.source,
        "scenario": redact(scenario.raw),
        "scenario_sha256": hashlib.sha256(canonical_json(defining).encode()).hexdigest(),
        "rsigym_version": rsigym.__version__,
        "git_revision": _git_revision(),
        "python": platform.python_version(),
        "packages": _package_versions(),
        "tool_modes": planned_tool_modes(scenario.raw, tool_modes),
    }


def planned_tool_modes(raw: dict[str, Any], probed: dict[str, str] | None = None) -> dict[str, str]:
    """Per LLM agent (kind ``llm``) of a scenario: the tool mode it will use (``rsigym.llm``; an
    ``auto`` agent the endpoint check probed takes ``probed[id]``, tools or json); each record says
    what was used in the end."""
    from ..llm.client import planned_tool_mode

    modes = {}
    for agent in raw.get("agents") or []:
        if not isinstance(agent, dict) or agent.get("kind") != "llm" or not isinstance(agent.get("model"), str):
            continue
        params: dict[str, Any] = agent["params"] if isinstance(agent.get("params"), dict) else {}
        asked = str(params.get("tool_mode", "auto"))
        agent_id = str(agent.get("id", agent["model"]))
        probe = (probed or {}).get(agent_id) if asked == "auto" else None
        planned = planned_tool_mode(agent["model"], probe or asked, params.get("api_base"))
        modes[agent_id] = (planned if asked != "auto" else
                           f"{planned} (auto: {'probe call' if probe else 'LiteLLM model map'})")
    return modes


def _flatten(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(_flatten(sub, f"{path}.{key}" if path else str(key)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, sub in enumerate(value):
            out.update(_flatten(sub, f"{path}[{i}]"))
        return out
    return {path: value}


def scenario_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``key.path: old -> new`` for every leaf that differs (``(absent)`` where one side lacks it)."""
    before, after = _flatten(old), _flatten(new)
    lines = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key, "(absent)"), after.get(key, "(absent)")
        if a != b:
            lines.append(f"{key}: {json.dumps(a, default=str)[:80]} -> {json.dumps(b, default=str)[:80]}")
    return lines


class ManifestMismatch(UserError):
    """A resume with a scenario other than the one the folder holds a run of."""


def holds_a_run(out_dir: Path) -> bool:
    """Whether ``out_dir`` already holds (part of) a run."""
    return any((out_dir / name).exists() for name in (MANIFEST_FILE, SCENARIO_COPY, "records.jsonl"))


def next_free_folder(out_dir: Path) -> Path:
    """``out_dir`` itself when it holds no run, else the first of ``out_dir-2``, ``-3``, ... that does not."""
    if not holds_a_run(out_dir):
        return out_dir
    n = 2
    while holds_a_run(out_dir.with_name(f"{out_dir.name}-{n}")):
        n += 1
    return out_dir.with_name(f"{out_dir.name}-{n}")


def _old_defining(out_dir: Path) -> dict[str, Any] | None:
    manifest = out_dir / MANIFEST_FILE
    if manifest.exists():
        try:
            data = json.loads(manifest.read_text())
            return run_defining(data["scenario"], data["rsigym_version"])
        except (ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{manifest}: unreadable manifest ({exc}); move the folder aside or use "
                            "--force-new") from exc
    copy = out_dir / SCENARIO_COPY
    if copy.exists():  # a run folder from before manifests: its scenario copy, version unknown
        raw = load_yaml(copy.read_text(), str(copy)) or {}
        return {"scenario": run_defining(raw, "")["scenario"]}
    return None


def early_warnings(raw: dict[str, Any], checked: Any = None, notes: Sequence[str] = ()) -> list[str]:
    """What a user must see before the first episode: the capacity plan's notes, the endpoint
    check's warnings (429s, 5xx), each as ``warning: ...``, and every automatic choice (what
    ``tool_mode: auto`` chose)."""
    lines = [f"warning: {redact_text(n)}" for n in notes]
    lines += [f"warning: {redact_text(w)}" for w in (getattr(checked, "warnings", None) or [])]
    for agent_id, mode in planned_tool_modes(raw, getattr(checked, "tool_modes", None)).items():
        if "(auto:" in mode:
            lines.append(f"agent {agent_id}: tool_mode auto chose {mode.split()[0]} ({mode.split('auto: ')[1].rstrip(')')})")
    return lines


def record_warnings(out_dir: Path, warnings: Sequence[str]) -> None:
    """Add this invocation's early warnings to the manifest (``warnings``: one entry per invocation
    that had any, with its time); the run-defining fields are untouched."""
    path = out_dir / MANIFEST_FILE
    if not warnings or not path.exists():
        return
    manifest = json.loads(path.read_text())
    manifest.setdefault("warnings", []).append({"at": utc_now(), "lines": list(warnings)})
    _write_atomic(path, json.dumps(manifest, indent=2) + "\n")


def record_ray(out_dir: Path, entry: dict[str, Any]) -> None:
    """Add a Ray invocation's nodes and runners (at the start and at the end, nodes lost and
    refused: ``RayStats.manifest_entry``) to the manifest's ``ray`` list; the run-defining fields
    are untouched."""
    path = out_dir / MANIFEST_FILE
    if not path.exists():
        return
    manifest = json.loads(path.read_text())
    manifest.setdefault("ray", []).append(entry)
    _write_atomic(path, json.dumps(manifest, indent=2) + "\n")


def check_or_write_manifest(out_dir: Path, scenario: Scenario, *, tool_modes: dict[str, str] | None = None) -> bool:
    """Refuse a resume of another scenario; write the manifest of a new run. True when new.

    Raises:
        ManifestMismatch: The folder holds a run of a different scenario; the message lists the
            differences, one per line, after a first line that says what to do.
    """
    import rsigym

    old = _old_defining(out_dir)
    new = run_defining(scenario.raw, rsigym.__version__)
    if old is not None:
        if "rsigym_version" not in old:
            new = {"scenario": new["scenario"]}
        diff = scenario_diff(old, new)
        if diff:
            raise ManifestMismatch(
                f"{out_dir} holds a run of a different scenario; resume refused ({len(diff)} "
                "differences below). Use --force-new for a new run folder, or --out DIR\n"
                + "\n".join(f"  {line}" for line in diff))
        if (out_dir / MANIFEST_FILE).exists():
            return False
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_atomic(out_dir / MANIFEST_FILE, json.dumps(build_manifest(scenario, tool_modes), indent=2) + "\n")
    if not (out_dir / SCENARIO_COPY).exists():
        _write_atomic(out_dir / SCENARIO_COPY, yaml.safe_dump(redact(scenario.raw), sort_keys=False))
    return old is None


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
