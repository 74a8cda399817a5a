"""Conformance of every env id rsigym registers: one parametrised test module, not one per family.

Each registered id (third-party families included: ids are read from Gymnasium's registry) must
pass Gymnasium's ``check_env``; reset and a fixed action sequence are deterministic under a
seed; invalid actions give error observations, never exceptions; ``action_schema`` validates the
env's own ``example_actions``, which the env accepts; ``action_space.sample()`` gives actions the
env accepts in at least a fifth of draws; and a hypothesis fuzz of valid-shaped and hostile
actions (see ``tests/security/env_fuzz_support.py``) raises nothing, keeps every observation in
its space and ``snapshot()`` JSON-serialisable. The envs run in small settings (local sandbox,
tiny pools, an analytic trial runner for HyperparamSearch); ``benchmarks/env_fuzz.py`` runs the
same fuzz with 2,000 actions per env id.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import jsonschema
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsigym.envs import JsonActions
from rsigym.records import canonical_json, to_jsonable
from tests.security.env_fuzz_support import Episodes, actions_for, env_variants, make_env, step_checked

VARIANTS = env_variants()
IDS = [f"{env_id.split('/')[1]}{'-' + label if label else ''}" for env_id, label in VARIANTS]
FUZZ_EXAMPLES = 200

# One env per variant for the fuzz: made once, reset whenever an episode ends.
_FUZZED: dict[tuple[str, str], tuple[Episodes, st.SearchStrategy[Any]]] = {}


def _json(value: Any) -> str:
    return canonical_json(to_jsonable(value))


def _accepted(info: dict[str, Any]) -> bool:
    return "error" not in info and not info.get("submission_errors")


def test_every_family_is_covered():
    ids = {env_id for env_id, _ in VARIANTS}
    assert {"rsigym/Probe-v0", "rsigym/ToolUse-v0", "rsigym/BlackBox-v0", "rsigym/HyperparamSearch-v0",
            "rsigym/ProgramEvolution-v0", "rsigym/DataSelection-v0", "rsigym/CodeRepair-v0",
            "rsigym/ExperimentForecast-v0", "rsigym/Workflow-v0"} <= ids


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
def test_check_env(env_id, label):
    env = make_env(env_id, label)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
def test_reset_and_a_fixed_action_sequence_are_deterministic(env_id, label):
    probe = make_env(env_id, label)
    probe.action_space.seed(7)
    actions = [probe.action_space.sample() for _ in range(4)]
    probe.close()
    runs = []
    for _ in range(2):
        env = make_env(env_id, label)
        try:
            trace = [_json(env.reset(seed=3))]
            for action in actions:
                observation, reward, terminated, truncated, info = env.step(action)
                trace.append(_json([observation, reward, terminated, truncated, info]))
                if terminated or truncated:
                    break
            runs.append(trace)
        finally:
            env.close()
    assert runs[0] == runs[1]


INVALID_ACTIONS = [
    None, "", 42, 1.5, float("nan"), [], [1, 2], {}, {"rsigym_no_such_key": 1}, b"\xff", object(),
    {"tool": ["x"]}, {"kind": None, "message": "hi"}, {"kind": 7, "tool": 0, "message": ""},
    {"action": None}, {"decision": None}, {"guess": None}, 10**5000,
]


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
def test_invalid_actions_give_error_observations(env_id, label):
    env = make_env(env_id, label)
    try:
        env.reset(seed=0)
        for action in [*INVALID_ACTIONS, _deep(1000), {"k": _deep(1000)}, "x" * 3_000_000]:
            _, reward, terminated, truncated, info = step_checked(env, action)
            assert "error" in info, (env_id, repr(action)[:80])
            if terminated or truncated:  # the per-episode limit of invalid actions
                assert info.get("termination") == "agent_error", info
                env.reset(seed=0)
    finally:
        env.close()


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
def test_action_schema_validates_the_envs_own_examples(env_id, label):
    env = make_env(env_id, label)
    try:
        schema = env.unwrapped.action_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        examples = getattr(env.unwrapped, "example_actions", None)
        assert examples, f"{env_id} publishes no example_actions"
        for example in examples:
            assert JsonActions(schema).parse(example) == (example, None)
            json.dumps(example)
            env.reset(seed=0)
            _, _, _, _, info = step_checked(env, example)
            assert _accepted(info), (example, info.get("error"))
    finally:
        env.close()


@pytest.mark.parametrize("env_id,label", VARIANTS, ids=IDS)
def test_action_space_samples_actions_the_env_accepts(env_id, label):
    env = make_env(env_id, label)
    draws, accepted = 10, 0
    try:
        env.action_space.seed(0)
        for seed in range(draws):
            env.reset(seed=seed)
            action = env.action_space.sample()
            assert env.action_space.contains(action)
            accepted += _accepted(step_checked(env, action)[4])
    finally:
        env.close()
    assert accepted >= draws // 5, f"{accepted} of {draws} sampled actions accepted"


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
    assert _accepted(step_checked(env, action)[4])
