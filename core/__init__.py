"""rsigym: simulation environments for research agents.

The kernel (this package) holds what every part shares: trajectory records and their JSONL
storage, the sandbox, the registries (``rsigym.registry``), the agent and grader protocols,
spaces, conditions, statistics, scenario files, the runner, reports and the CLI. It imports
nothing above it: env families (``rsigym.envs.<family>``), generic agents (``rsigym.agents``) and
generic graders (``rsigym.graders``) join through entry points, as plug-ins do.
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
