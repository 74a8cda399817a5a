"""rsigym: simulation environments for research agents.

The kernel (this package) holds what every part shares: trajectory records and their JSONL
storage, the sandbox, the registries (``rsigym.registry``), the agent and grader protocols,
spaces, conditions, statistics, scenario files, the runner, reports and the CLI. It imports
nothing above it: env families (``rsigym.envs.<family>``), generic agents (``rsigym.agents``) and
generic graders (``rsigym.graders``) join through entry points, as plug-ins do.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .errors import InfraError, RsigymError, SandboxError, SandboxUnavailable, UserError
from .records import (SCHEMA_VERSION, AgentSpec, EnvRef, FinalSnapshot, Grade, Step, Trajectory,
                      Usage, episode_key)

try:
    __version__ = version("rsigym")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+source"

__all__ = [
    "__version__", "SCHEMA_VERSION", "AgentSpec", "EnvRef", "FinalSnapshot", "Grade", "InfraError",
    "RsigymError", "SandboxError", "SandboxUnavailable", "Step", "Trajectory", "Usage", "UserError",
    "episode_key", "records_frame",
]


def __getattr__(name: str) -> object:
    # records_frame imports the report module (numpy, the registries): only when asked for
    if name == "records_frame":
        from .export import records_frame

        return records_frame
    raise AttributeError(f"module 'rsigym' has no attribute {name!r}")
