"""Small settings of rsigym's own env ids for the conformance checks and the fuzz.

The checks themselves ship with the package (``rsigym.testing``: ``rsigym.testing.fuzz`` holds the
hostile-action strategies and the fuzz loop, ``rsigym.testing.env_checks`` the conformance
checks); this module says how each bundled env id is made small for them (local sandbox, tiny
pools, an analytic trial runner for HyperparamSearch). Shared by ``tests/test_env_conformance.py``,
``tests/test_family_kit.py``, ``tests/security/test_env_fuzz.py`` and ``benchmarks/env_fuzz.py``
(which runs 2,000 actions per env id).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import gymnasium as gym

import rsigym.envs  # noqa: F401  (registers the ids)
from rsigym.registry import register_gym_envs
from rsigym.testing.fuzz import (PYTHON_OBJECTS, Episodes, FuzzResult, actions_for, from_schema, hostile_values,
                                 step_checked)
from rsigym.testing.fuzz import fuzz_env as _fuzz_env

__all__ = ["registered_env_ids", "env_variants", "env_kwargs", "make_env", "actions_for", "from_schema",
           "hostile_values", "PYTHON_OBJECTS", "FuzzResult", "fuzz_env", "step_checked", "Episodes",
           "AnalyticTrials"]


# -- which envs, made small ----------------------------------------------------------------------

def registered_env_ids() -> list[str]:
    """Every env id of the ``rsigym.envs`` entry points (installed plug-ins' ids included, whatever
    their namespace) and every id Gymnasium knows in the ``rsigym`` namespace."""
    return sorted(set(register_gym_envs()) | {k for k in gym.registry if k.startswith("rsigym/")})


@dataclass(frozen=True)
class _TrialResult:
    val_nrmse: float
    checkpoint_sha256: str = "0" * 64


class AnalyticTrials:
    """A deterministic stand-in for the FNO trial runner (HyperparamSearch-v0): a bowl in
    log10(learning rate). The env protocol is what is fuzzed here; real training is tested in
    tests/envs/test_hpo_training.py and would cost seconds per valid action."""

    def run(self, condition: str, seed: int, config: Any) -> _TrialResult:
        return _TrialResult(0.02 + 0.05 * (math.log10(config.learning_rate) + 3.0) ** 2 + 0.001 * seed)

    def test(self, condition: str, seed: int, config: Any) -> float:
        return 1.1 * self.run(condition, seed, config).val_nrmse


_TINY_BINPACK = {"bin_packing_online": {"instances": 5, "partial_instances": 2, "items": 40}}

# env id -> [(label, kwargs)]: the smallest settings that still run the real env code (local
# sandbox, tiny pools). An env id not listed here (a third-party family) is made with no kwargs.
_VARIANTS: dict[str, list[tuple[str, Callable[[], dict[str, Any]]]]] = {
    "rsigym/Probe-v0": [("local", lambda: {"sandbox": "local"})],
    "rsigym/Workflow-v0": [("local", lambda: {"sandbox": "local"})],
    "rsigym/ToolUse-v0": [("retail", lambda: {"domain": "retail"}),
                          ("airline", lambda: {"domain": "airline"})],
    "rsigym/BlackBox-v0": [("", dict)],
    "rsigym/HyperparamSearch-v0": [("analytic", lambda: {"trials": AnalyticTrials(), "budget": 5})],
    "rsigym/ProgramEvolution-v0": [("binpack", lambda: {"sandbox": "local", "task": "bin_packing_online",
                                                        "task_params": _TINY_BINPACK, "budget": 3})],
    "rsigym/CodeRepair-v0": [("local", lambda: {"sandbox": "local", "problems": 2, "rounds": 2})],
    "rsigym/DataSelection-v0": [("digits", lambda: {"pool": "digits", "pool_size": 400, "group_size": 20,
                                                    "student_seeds": 1, "n_random": 2, "sandbox": "local_unsafe",
                                                    "python_timeout_s": 30.0})],
}


def env_variants() -> list[tuple[str, str]]:
    """(env id, variant label) for every registered env id."""
    return [(env_id, label) for env_id in registered_env_ids()
            for label, _ in _VARIANTS.get(env_id, [("", dict)])]


def make_env(env_id: str, label: str = "") -> gym.Env[Any, Any]:
    """The env of ``env_id`` in its small test settings (see ``_VARIANTS``)."""
    factory = dict(_VARIANTS.get(env_id, [("", dict)])).get(label, dict)
    return gym.make(env_id, **factory())


def env_kwargs(env_id: str) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    """(label, kwargs factory) of each small variant of ``env_id`` (for ``rsigym.testing.check_family``)."""
    return list(_VARIANTS.get(env_id, [("", dict)]))


def fuzz_env(env_id: str, label: str, n_actions: int, *, keep_failures: int = 5) -> FuzzResult:
    """Step ``n_actions`` hypothesis-drawn actions through one small variant; count exceptions, never raise."""
    return _fuzz_env(lambda: make_env(env_id, label), n_actions, env_id=env_id, label=label,
                     keep_failures=keep_failures)
