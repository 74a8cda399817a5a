"""Conformance checks for one env: each takes a factory of the env and raises ``AssertionError``.

Every env rsigym runs must pass them, a plug-in's as much as a bundled one's (``check_family``
runs them all; ``tests/test_env_conformance.py`` runs them one by one over every env id):

- ``check_gym_api``: Gymnasium's own ``check_env`` (render checks skipped);
- ``check_deterministic``: reset and a fixed action sequence give the same observations,
  rewards and infos under one seed, twice;
- ``check_invalid_actions``: hostile whole actions give error observations, never exceptions,
  and the per-episode limit of invalid actions ends the episode as ``agent_error``;
- ``check_example_actions``: ``action_schema`` is valid JSON Schema, validates the env's own
  ``example_actions``, and the env accepts each of them;
- ``check_sampled_actions``: ``action_space.sample()`` gives actions the env accepts in at least
  a fifth of draws;
- ``check_fuzz``: ``rsigym.testing.fuzz`` actions raise nothing, keep every observation in its
  space and ``snapshot()`` JSON-serialisable.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium as gym

from rsigym.errors import install_hint
from rsigym.records.trajectory import canonical_json, to_jsonable
from rsigym.spaces import JsonActions

__all__ = ["EnvFactory", "INVALID_ACTIONS", "ENV_CHECKS", "check_gym_api", "check_deterministic",
           "check_invalid_actions", "check_example_actions", "check_sampled_actions", "check_fuzz", "accepted"]

EnvFactory = Callable[[], gym.Env[Any, Any]]

# Whole actions no env may accept; each must come back as an error observation.
INVALID_ACTIONS: list[Any] = [
    None, "", 42, 1.5, float("nan"), [], [1, 2], {}, {"rsigym_no_such_key": 1}, b"\xff", object(),
    {"tool": ["x"]}, {"kind": None, "message": "hi"}, {"kind": 7, "tool": 0, "message": ""},
    {"action": None}, {"decision": None}, {"guess": None}, 10**5000,
]


@contextmanager
def _made(make: EnvFactory) -> Iterator[gym.Env[Any, Any]]:
    env = make()
    try:
        yield env
    finally:
        env.close()


def _json(value: Any) -> str:
    return canonical_json(to_jsonable(value))


def accepted(info: dict[str, Any]) -> bool:
    """Whether a step's ``info`` says the action was taken (no error, no submission errors)."""
    return "error" not in info and not info.get("submission_errors")


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):  # built in a loop: a recursive builder would overflow first
        value = [value]
    return value


def check_gym_api(make: EnvFactory) -> None:
    """Gymnasium's ``check_env`` on the unwrapped env."""
    from gymnasium.utils.env_checker import check_env

    with _made(make) as env:
        check_env(env.unwrapped, skip_render_check=True)


def check_deterministic(make: EnvFactory, *, steps: int = 4, seed: int = 3) -> None:
    """Reset and ``steps`` sampled actions give the same trace in two fresh envs."""
    with _made(make) as probe:
        probe.action_space.seed(7)
        actions = [probe.action_space.sample() for _ in range(steps)]
    runs = []
    for _ in range(2):
        with _made(make) as env:
            trace = [_json(env.reset(seed=seed))]
            for action in actions:
                observation, reward, terminated, truncated, info = env.step(action)
                trace.append(_json([observation, reward, terminated, truncated, info]))
                if terminated or truncated:
                    break
            runs.append(trace)
    differ = next((i for i, (a, b) in enumerate(zip(*runs)) if a != b), None)
    assert runs[0] == runs[1], f"two runs with seed {seed} differ at step {differ}"


def check_invalid_actions(make: EnvFactory) -> None:
    """Each of ``INVALID_ACTIONS`` (and a few huge ones) gives ``info["error"]``, never an exception;
    an integer too long to print under any key of a valid-shaped action raises nothing either."""
    from .steps import step_checked

    with _made(make) as env:
        env.reset(seed=0)
        for action in [*INVALID_ACTIONS, _deep(1000), {"k": _deep(1000)}, "x" * 3_000_000]:
            _, _, terminated, truncated, info = step_checked(env, action)
            assert "error" in info, f"no error observation for {repr(action)[:80]}"
            if terminated or truncated:  # the per-episode limit of invalid actions
                assert info.get("termination") == "agent_error", info
                env.reset(seed=0)
        for action in _with_huge_ints(env):  # Python refuses to print ints past 4,300 digits
            _, _, terminated, truncated, _ = step_checked(env, action)
            if terminated or truncated:
                env.reset(seed=0)


def _with_huge_ints(env: Any) -> list[Any]:
    """A sampled typed action and each example action with each top-level value swapped for an
    integer too long to print (``str`` raises ValueError past 4,300 digits): every error message
    that quotes the value must cope."""
    env.action_space.seed(0)
    shapes = [env.action_space.sample(), *(getattr(env.unwrapped, "example_actions", None) or [])]
    return [{**shape, key: huge} for shape in shapes if isinstance(shape, dict)
            for key in shape for huge in (10**5000, -(10**5000))]


def check_example_actions(make: EnvFactory) -> None:
    """``action_schema`` validates ``example_actions``, which the env accepts."""
    import jsonschema

    from .steps import step_checked

    with _made(make) as env:
        schema = getattr(env.unwrapped, "action_schema", None)
        assert isinstance(schema, dict), "the env publishes no action_schema (a dict of JSON Schema)"
        jsonschema.Draft202012Validator.check_schema(schema)
        examples = getattr(env.unwrapped, "example_actions", None)
        assert examples, "the env publishes no example_actions"
        for example in examples:
            assert JsonActions(schema).parse(example) == (example, None), f"the schema refuses {example!r}"
            json.dumps(example)
            env.reset(seed=0)
            _, _, _, _, info = step_checked(env, example)
            assert accepted(info), (example, info.get("error"))


def check_sampled_actions(make: EnvFactory, *, draws: int = 10) -> None:
    """At least a fifth of ``action_space.sample()`` draws are accepted."""
    from .steps import step_checked

    taken = 0
    with _made(make) as env:
        env.action_space.seed(0)
        for seed in range(draws):
            env.reset(seed=seed)
            action = env.action_space.sample()
            assert env.action_space.contains(action)
            taken += accepted(step_checked(env, action)[4])
    assert taken >= draws // 5, f"{taken} of {draws} sampled actions accepted"


def check_fuzz(make: EnvFactory, *, actions: int = 50) -> None:
    """``actions`` fuzzed actions (``rsigym.testing.fuzz``) raise nothing and pass ``step_checked``."""
    try:
        from .fuzz import fuzz_env
    except ModuleNotFoundError as exc:  # the one check that needs more than a plain install
        if exc.name != "hypothesis":
            raise
        raise AssertionError(f"the fuzz check needs hypothesis: {install_hint('test', 'hypothesis')} "
                             "(or fuzz_actions=0 to skip it)") from None

    result = fuzz_env(make, actions)
    assert result.exceptions == 0, (f"{result.exceptions} of {result.actions} fuzzed actions failed; first: "
                                    + (result.failures[0] if result.failures else "?"))


# name -> check, in the order check_family runs them
ENV_CHECKS: dict[str, Callable[..., None]] = {
    "check_env": check_gym_api, "deterministic": check_deterministic, "invalid_actions": check_invalid_actions,
    "example_actions": check_example_actions, "sampled_actions": check_sampled_actions, "fuzz": check_fuzz,
}
