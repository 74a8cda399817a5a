"""What is computed from records after a run: reports, statistics and exports.

Owns the report (``report``: ``summary``, ``write_report``, analyses), the parts its sections share
(``report_parts``), score cells, costs and reply-format rates (``score_cells``, ``costs``,
``reply_quality``), statistics and the crossed bootstrap (``stats``, ``crossed``) and the exports
(``export``, ``export_inspect``, ``inspect_messages``). It may import ``rsigym.records``,
``rsigym.registry``, ``rsigym.spaces`` and ``rsigym.errors``, never the runner, the scenario or the
CLI. The report API of ``report`` is re-exported here, loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .report import (
    ReportSection, register_analysis, available_analyses, summary, write_report, bootstrap_ci,
    condition_label, md_text, md_code, md_file_name,
    )

__all__ = [
    'ReportSection', 'register_analysis', 'available_analyses', 'summary', 'write_report', 'bootstrap_ci',
    'condition_label', 'md_text', 'md_code', 'md_file_name',
]


def __getattr__(name: str) -> Any:
    # The re-exported names load with .report on first use (PEP 562).
    if name in __all__:
        return getattr(importlib.import_module(".report", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
