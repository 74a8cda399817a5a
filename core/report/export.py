"""Export records: a pandas DataFrame, parquet, self-contained JSONL, or an inspect_ai eval log.

``records_frame`` has one row per (episode, grade): the episode's identity, termination, usage and
one grade (an episode without grades gets one row with empty grade columns), so
``df[df.grader == "reward"].groupby(["agent", "condition"]).score.mean()`` is the summary table.
pandas and pyarrow come with the ``export`` extra, inspect_ai with the ``inspect`` extra; without
them the export names the extra to install, in one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import UserError, install_hint
from ..records.trajectory import Trajectory
from ..records.redact import redact
from .report import condition_label

if TYPE_CHECKING:
    import pandas

__all__ = ["records_frame", "export_run", "FRAME_COLUMNS", "EXPORT_FORMATS"]

EXPORT_FORMATS = {"parquet": ".parquet", "jsonl": ".jsonl", "inspect": "_inspect"}  # inspect: a folder of logs

FRAME_COLUMNS = (
    "episode_key", "env_id", "task_id", "condition", "agent", "agent_kind", "model", "seed", "rep",
    "termination", "error", "steps", "total_reward", "prompt_tokens", "completion_tokens", "cost_usd",
    "latency_s", "env_s", "model_calls", "provider_retries", "invalid_replies", "started_at",
    "finished_at", "grader", "grader_version", "score", "grade_source", "grade_error", "grade_params",
    "grade_details", "computed_at",
)


def _load(records_or_dir: Iterable[Trajectory] | str | os.PathLike[str]) -> list[Trajectory]:
    if isinstance(records_or_dir, (str, os.PathLike)):
        from ..records.jsonl import read_records

        folder = Path(records_or_dir)
        path = folder / "records.jsonl" if folder.is_dir() else folder
        if not path.exists():
            raise UserError(f"no records.jsonl in {folder}; is it a run folder?")
        return read_records(path).records
    return list(records_or_dir)


def _import_pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise UserError(f"records_frame needs pandas: {install_hint('export', 'pandas')}") from None
    return pandas


def records_frame(records_or_dir: Iterable[Trajectory] | str | os.PathLike[str]) -> "pandas.DataFrame":
    """A pandas DataFrame with one row per (episode, grade); see ``FRAME_COLUMNS``.

    Args:
        records_or_dir: trajectories, a run folder, or a records JSONL file.
    """
    pandas = _import_pandas()
    rows = []
    for record in _load(records_or_dir):
        u = record.usage
        episode = {
            "episode_key": record.episode_key, "env_id": record.env.id, "task_id": record.env.task_id,
            "condition": condition_label(record.env.condition), "agent": record.agent.id,
            "agent_kind": record.agent.kind, "model": record.agent.model, "seed": record.seed,
            "rep": record.rep, "termination": record.termination, "error": record.error,
            "steps": len(record.steps), "total_reward": record.total_reward,
            "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
            "cost_usd": u.cost_usd, "latency_s": u.latency_s, "env_s": u.env_s, "model_calls": u.model_calls,
            "provider_retries": u.provider_retries, "invalid_replies": u.invalid_replies,
            "started_at": record.started_at, "finished_at": record.finished_at,
        }
        empty = {c: None for c in FRAME_COLUMNS if c not in episode}
        grades: list[Any] = list(record.grades) or [None]
        for grade in grades:
            row = dict(episode, **empty)
            if grade is not None:
                row.update(grader=grade.grader, grader_version=grade.version, score=grade.score,
                           grade_source=grade.source, grade_error=grade.error,
                           grade_params=json.dumps(grade.params, sort_keys=True),
                           grade_details=json.dumps(grade.details, sort_keys=True),
                           computed_at=grade.computed_at)
            rows.append(row)
    frame = pandas.DataFrame([redact(row) for row in rows], columns=list(FRAME_COLUMNS))
    frame["score"] = frame["score"].astype("float64")  # None (no grade, grader error) is NaN
    return frame


def export_run(run_dir: str | os.PathLike[str], fmt: str, out: str | os.PathLike[str] | None = None) -> Path:
    """Write the records of ``run_dir`` as ``fmt`` (parquet, jsonl or inspect) to ``out``.

    The default ``out`` is ``RUN_DIR/export.<parquet|jsonl>``, and for inspect the folder
    ``RUN_DIR/export_inspect`` holding one ``.eval`` log per (agent, condition)
    (``inspect view --log-dir FOLDER``). Returns the path written (the folder for inspect).
    """
    if fmt not in EXPORT_FORMATS:
        raise UserError(f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")
    run_dir = Path(run_dir)
    target = Path(out) if out is not None else run_dir / f"export{EXPORT_FORMATS[fmt]}"
    if fmt == "inspect" and target.suffix.lower() in (".eval", ".json"):
        raise UserError(f"export --format inspect writes a folder (one log per agent x condition); "
                        f"--out {target} names a log file: give a folder")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401  (pandas writes parquet through it)
        except ImportError:
            raise UserError(f"export --format parquet needs pandas and pyarrow: {install_hint('export', 'pandas', 'pyarrow')}") from None
        frame = records_frame(run_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(target, index=False)
        return target
    records = _load(run_dir)
    if target.exists() and (target.is_dir() != (fmt == "inspect")):
        raise UserError(f"{target} exists and is {'a folder' if target.is_dir() else 'a file'}; "
                        f"export --format {fmt} writes {'a folder' if fmt == 'inspect' else 'a file'} there")
    target.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":  # every reference resolved: the file stands alone, like a record of old
        with open(target, "w", encoding="utf-8") as f:
            for record in records:
                f.write(record.to_json() + "\n")
        return target
    from .export_inspect import write_inspect_logs

    write_inspect_logs(records, target, task=run_dir.resolve().name)
    return target

