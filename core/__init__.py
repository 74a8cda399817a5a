"""rsigym: simulation environments for research agents.

The kernel (this package) holds what every part shares: trajectory records and their JSONL
storage, the sandbox, the registries (``rsigym.registry``), the agent and grader protocols,
spaces, conditions, statistics, scenario files, the runner, reports and the CLI. It imports
nothing above it: env families (``rsigym.envs.<family>``), generic agents (``rsigym.agents``) and
generic graders (``rsigym.graders``) join through entry points, as plug-ins do.

The kernel is cut by concern, each sub-package's ``__init__`` saying what it owns and what it may
import: ``records`` (the record, JSONL, redaction), ``llm`` (the one client and provider limits),
``report`` (reports, statistics, exports), ``scenario`` (scenario files, preflight, manifest),
``runner``, ``sandbox``, ``viewer``, ``testing``, ``scaffold`` and ``cli``; the plug-in protocols
(``agent``, ``grader``, ``registry``, ``conditions``, ``spaces``, ``json_space``), ``errors``,
``cache`` and ``regrade`` stay flat. ``tests/core/test_import_graph.py`` keeps it so: no import
circle, no circle between sub-packages at import time, at most 15 flat modules.

The public API, the import paths a user, a plug-in family or a scenario file may rely on:

- ``rsigym``: ``Trajectory``, ``Step``, ``Grade``, ``Usage``, ``AgentSpec``, ``EnvRef``,
  ``FinalSnapshot``, ``SCHEMA_VERSION``, ``episode_key``, ``records_frame``, the errors;
- ``rsigym.records`` (the record API, re-exported from ``rsigym.records.trajectory``) and
  ``rsigym.records.jsonl`` (``read_records``, ``RecordWriter``, ...), ``rsigym.records.redact``;
- ``rsigym.registry`` (``ENVS``, ``AGENTS``, ``GRADERS``, ``ANALYSES``, ``CONDITIONS``, ...),
  ``rsigym.agent``, ``rsigym.grader``, ``rsigym.conditions``, ``rsigym.spaces``,
  ``rsigym.json_space``, ``rsigym.errors``, ``rsigym.cache``, ``rsigym.regrade``;
- ``rsigym.scenario`` (``load_scenario``, ``parse_scenario``, ``expand``, ``Scenario``, ...,
  re-exported from ``rsigym.scenario.spec``) and ``rsigym.runner`` (``run_scenario``);
- ``rsigym.report`` (``summary``, ``write_report``, ``register_analysis``, ``ReportSection``, ...,
  re-exported from ``rsigym.report.report``), ``rsigym.report.stats``, ``rsigym.report.crossed``,
  ``rsigym.report.export`` (``records_frame``, ``export_run``);
- ``rsigym.llm`` (``complete``, ``LLMReply``, ``LLMError``, ``RetryPolicy``, ..., re-exported from
  ``rsigym.llm.client``), ``rsigym.llm.limits``;
- ``rsigym.sandbox`` (``open_sandbox``), ``rsigym.testing`` (``check_family``), ``rsigym.viewer``
  (``write_view``) and ``rsigym.cli`` (``main``).

The re-exports load on first use, so ``import rsigym.records.redact`` costs no numpy and a refused
CLI flag no scenario. From the flat layout each moved module kept its name inside its package
(``jsonl`` is now ``rsigym.records.jsonl``, ``stats`` is ``rsigym.report.stats``), but for
the five whose name became a package: ``records.trajectory``, ``llm.client``, ``report.report``,
``scenario.spec``, ``cli.commands`` (``cli_run`` and ``cli_regrade`` are ``cli.run_command`` and
``cli.regrade_command``).
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version

# LiteLLM downloads its model price map at import unless told to read its bundled copy; any code
# that imports rsigym first (the CLI, workers, a user's script with a custom handler) then never
# tries the network for it. A value the user set ("False" to fetch it) is kept.
if not os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"):  # unset or empty
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from typing import TYPE_CHECKING

from .errors import InfraError, RsigymError, SandboxError, SandboxUnavailable, UserError

if TYPE_CHECKING:
    from .report.export import records_frame
    from .records.trajectory import (
        SCHEMA_VERSION, AgentSpec, EnvRef, FinalSnapshot, Grade, Step, Trajectory, Usage, episode_key,
    )

try:
    __version__ = version("rsigym")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+source"

__all__ = [
    "__version__", "SCHEMA_VERSION", "AgentSpec", "EnvRef", "FinalSnapshot", "Grade", "InfraError",
    "RsigymError", "SandboxError", "SandboxUnavailable", "Step", "Trajectory", "Usage", "UserError",
    "episode_key", "records_frame",
]


_RECORDS = ("SCHEMA_VERSION", "AgentSpec", "EnvRef", "FinalSnapshot", "Grade", "Step", "Trajectory", "Usage",
            "episode_key")


def __getattr__(name: str) -> object:
    # Imported on first use: records imports numpy, which `rsigym --version` has no use for, and
    # records_frame the report module (numpy, the registries).
    if name in _RECORDS:
        from .records import trajectory as records

        return getattr(records, name)
    if name == "records_frame":
        from .report.export import records_frame

        return records_frame
    raise AttributeError(f"module 'rsigym' has no attribute {name!r}")
