"""``rsigym/Workflow-v0``: a multi-agent research workflow (PettingZoo AEC) with MASS-style evolution.

PettingZoo's way: ``env(**kwargs)`` is the AEC env with PettingZoo's standard wrappers,
``raw_env(**kwargs)`` the bare ``WorkflowAECEnv``. ``rsigym/Workflow-v0`` (``WorkflowEnv``) is
its single-controller Gymnasium face for the scenario runner. No ``parallel_env``: roles act one
at a time by construction (only the role on top of the call stack may act).
"""

from __future__ import annotations

from typing import Any

from pettingzoo.utils import wrappers

from .aec import WorkflowAECEnv
from .env import WORKFLOW_CONDITIONS, WorkflowEnv, bundled_specs, resolve_spec
from .mutations import MUTATION_SCHEMA, apply_mutation
from .spec import SPEC_SCHEMA, seed_spec, validate_spec
from .tasks import grade_workspace, make_task, task_ids

__all__ = ["env", "raw_env", "WorkflowAECEnv", "WorkflowEnv", "WORKFLOW_CONDITIONS", "SPEC_SCHEMA",
           "MUTATION_SCHEMA", "apply_mutation", "seed_spec", "validate_spec", "resolve_spec", "bundled_specs",
           "make_task", "task_ids", "grade_workspace"]


def raw_env(**kwargs: Any) -> WorkflowAECEnv:
    """The bare AEC env (see ``WorkflowAECEnv`` for the arguments)."""
    return WorkflowAECEnv(**kwargs)


def env(**kwargs: Any) -> Any:
    """The AEC env wrapped the PettingZoo way (order enforcing, bounds on misuse)."""
    return wrappers.OrderEnforcingWrapper(WorkflowAECEnv(**kwargs))
