"""Conformance of every env id rsigym registers: one parametrised test module, not one per family.

The checks ship with the package (``rsigym.testing.env_checks``; ``rsigym.testing.check_family``
runs them, with episodes and record round trips, on any family, see tests/test_family_kit.py).
Here each registered id (third-party families included, whatever their namespace: ids come from
the ``rsigym.envs`` entry points) must pass Gymnasium's ``check_env``; reset and a fixed action
sequence are deterministic under a seed; invalid actions give error observations, never
exceptions; ``action_schema`` validates the env's own ``example_actions``, which the env accepts;
``action_space.sample()`` gives actions the env accepts in at least a fifth of draws; and a
hypothesis fuzz of valid-shaped and hostile actions (``rsigym.testing.fuzz``) raises nothing,
keeps every observation in its space and ``snapshot()`` JSON-serialisable. The envs run in small
settings (``tests/security/env_fuzz_support.py``: local sandbox, tiny pools, an analytic trial
runner for HyperparamSearch); ``benchmarks/env_fuzz.py`` runs the same fuzz with 2,000 actions
per env id.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsigym.testing import (check_deterministic, check_example_actions, check_gym_api, check_invalid_actions,
                            check_sampled_actions)
from rsigym.testing.env_checks import accepted
from tests.security.env_fuzz_support import Episodes, actions_for, env_variants, make_env, step_checked

VARIANTS = env_variants()
IDS = [f"{env_id.split('/')[-1]}{'-' + label if label else ''}" for env_id, label in VARIANTS]
FUZZ_EXAMPLES = 200

# One env per variant for the fuzz: made once, reset whenever an episode ends.
_FUZZED: dict[tuple[str, str], tuple[Episodes, st.SearchStrategy[Any]]] = {}


def test_every_family_is_covered():
    ids = {env_id for env_id, _ in VARIANTS}
    assert {"rsigym/Probe-v0", "rsigym/ToolUse-v0", "rsigym/BlackBox-v0", "rsigym/HyperparamSearch-v0",
            "rsigym/ProgramEvolution-v0", "rsigym/DataSelection-v0", "rsigym/CodeRepair-v0",
            "rsigym/ExperimentForecast-v0", "rsigym/Workflow-v0"} <= ids


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
def test_check_env(env_id, label):
    check_gym_api(lambda: make_env(env_id, label))


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
def test_reset_and_a_fixed_action_sequence_are_deterministic(env_id, label):
    check_deterministic(lambda: make_env(env_id, label))


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
def test_invalid_actions_give_error_observations(env_id, label):
    check_invalid_actions(lambda: make_env(env_id, label))


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
def test_action_schema_validates_the_envs_own_examples(env_id, label):
    check_example_actions(lambda: make_env(env_id, label))


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
def test_action_space_samples_actions_the_env_accepts(env_id, label):
    check_sampled_actions(lambda: make_env(env_id, label))


def _fuzzed(env_id: str, label: str) -> tuple[Episodes, st.SearchStrategy[Any]]:
    if (env_id, label) not in _FUZZED:
        episodes = Episodes(make_env(env_id, label))
        _FUZZED[(env_id, label)] = (episodes, actions_for(episodes.env))
    return _FUZZED[(env_id, label)]


@pytest.fixture(scope="module", autouse=True)
def _close_fuzzed_envs():
    yield
    for episodes, _ in _FUZZED.values():
        episodes.env.close()
    _FUZZED.clear()


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_actions_never_raise_and_snapshots_serialise(env_id, label, data):
    episodes, actions = _fuzzed(env_id, label)
    action = data.draw(actions, label="action")
    try:
        episodes.step(action)  # step_checked: no exception, observation in space, JSON snapshot
    except BaseException:
        episodes.done = True  # the next example starts a fresh episode
        raise


def test_numpy_typed_actions_are_not_confused_with_errors():
    """The typed spaces' own dtypes (numpy ints and 0-d float arrays) are valid, not hostile."""
    env = make_env("rsigym/BlackBox-v0")
    env.reset(seed=0)
    action = {"learning_rate": np.array(1e-3), "momentum": np.float64(0.5), "layers": np.int64(2),
              "optimizer": np.int64(0)}
    assert accepted(step_checked(env, action)[4])
