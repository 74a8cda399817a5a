"""``rsigym regrade``: new grades on fixed trajectories, into a new run folder or in place.

Both ways hold the run folder's lock (``rsigym.runner.lock``), so a regrade never races a run
that is still appending; both check that the grader fits the env of every record, write the
records atomically and rewrite the report.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any, Callable

from ..errors import UserError
from ..scenario.safe_yaml import load_yaml

__all__ = ["regrade_command", "default_regrade_folder"]


def default_regrade_folder(run_dir: Path, grader: str) -> Path:
    """``<run folder>-regrade-<grader>``, or the first free ``-2``, ``-3``, ... after it."""
    from ..scenario.manifest import next_free_folder

    return next_free_folder(run_dir.with_name(f"{run_dir.name}-regrade-{grader}"))


def regrade_command(args: argparse.Namespace,
                    records_or_error: Callable[..., tuple[Path, Any]]) -> int:
    """The ``regrade`` command; ``records_or_error`` reads a run folder's records (the CLI's helper)."""
    from ..grader import get_grader
    from ..records.jsonl import rewrite_records
    from ..scenario.manifest import holds_a_run
    from ..scenario.preflight import grader_fits
    from ..regrade import regrade
    from ..registry import GRADERS
    from ..runner import RECORDS_FILE
    from ..runner.lock import RunFolderLock

    if args.out is not None and args.in_place:
        raise UserError("regrade: give --out DIR or --in-place, not both")
    params = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--param expects KEY=VALUE, got {item!r}")
        params[key] = load_yaml(value, f"--param {key}")
    grader = get_grader(args.grader, **params)
    if not (args.run_dir / RECORDS_FILE).exists():
        raise UserError(f"no {RECORDS_FILE} in {args.run_dir}; is it a run folder?")
    with RunFolderLock(args.run_dir):
        path, result = records_or_error(args.run_dir, rewriting=args.in_place)
        misfits = sorted({r.env.id for r in result.records if not grader_fits(GRADERS[args.grader], r.env.id)})
        if misfits:
            raise UserError(f"grader {args.grader!r} does not fit {', '.join(misfits)} records; "
                            f"graders that fit: {', '.join(g for g in GRADERS if _fits(g, misfits[0]))}")
        graded = regrade(result.records, grader)
        if args.in_place:
            rewrite_records(path, graded, expected_size=result.size_bytes)
            target = args.run_dir
        else:
            target = args.out if args.out is not None else default_regrade_folder(args.run_dir, args.grader)
            if holds_a_run(target):  # RUN_DIR itself included: in place is --in-place
                raise UserError(f"{target} already holds a run; regrade into a new folder (--out) or use --in-place")
            with RunFolderLock(target):
                _new_folder(args.run_dir, target, args.grader, params)
                rewrite_records(target / RECORDS_FILE, graded)
        report = _rewrite_report(target, graded)
    scores = [r.grades[-1].score for r in graded]
    valid = [s for s in scores if s is not None]
    mean = f"{sum(valid) / len(valid):.3f}" if valid else "n/a"
    print(f"regraded {len(graded)} records with {grader.name} v{grader.version}: mean {mean}, "
          f"{len(scores) - len(valid)} grader errors; original grades kept")
    print(f"records in {target / RECORDS_FILE}; report: {report}")
    return 0


def _fits(name: str, env_id: str) -> bool:
    from ..scenario.preflight import grader_fits
    from ..registry import GRADERS

    try:
        return grader_fits(GRADERS[name], env_id)
    except (KeyError, UserError):
        return False


def _new_folder(source: Path, target: Path, grader: str, params: dict[str, Any]) -> None:
    """Make ``target`` a run folder derived from ``source``: its scenario copy and manifest,
    the manifest saying which regrade made it. Refuses a folder that already holds a run."""
    from ..scenario.manifest import MANIFEST_FILE, SCENARIO_COPY, holds_a_run
    from ..records.redact import redact

    if holds_a_run(target):
        raise UserError(f"{target} already holds a run; regrade into a new folder (--out) or use --in-place")
    if (source / SCENARIO_COPY).exists():
        shutil.copyfile(source / SCENARIO_COPY, target / SCENARIO_COPY)
    manifest: dict[str, Any] = {}
    if (source / MANIFEST_FILE).exists():
        try:
            manifest = json.loads((source / MANIFEST_FILE).read_text())
        except ValueError:
            manifest = {}
    manifest["regraded_from"] = {"run_dir": str(source), "grader": grader, "params": redact(params)}
    (target / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, default=str) + "\n")


def _rewrite_report(run_dir: Path, records: list[Any]) -> Path:
    from ..report.report import write_report
    from ..scenario.spec import NamedSpec

    analyses: list[Any] = ["summary"]
    scenario_file = run_dir / "scenario.yaml"
    if scenario_file.exists():
        raw = load_yaml(scenario_file.read_text(), str(scenario_file)) or {}
        analyses = [NamedSpec.parse(a) for a in raw.get("analyses") or ["summary"]]
    return write_report(run_dir, records, analyses, title=f"rsigym report: {run_dir.name}")
