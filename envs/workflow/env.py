"""``rsigym/Workflow-v0``: the Gymnasium face of the workflow AEC env, for the scenario runner.

The runner plays one agent per episode; here that agent plays every role, in turn, as MASS
has one model play all roles. Each ``step`` is the turn of the role on top of the call stack
(``observation["role"]``); the wrapper forwards the action to the AEC env and returns the next
acting role's observation. An agent that keeps one conversation per role and call
(``WorkflowRolesAgent``) sees exactly what separate role agents would see, and the record keeps
one step per role turn, so trajectories, usage and grades are written the normal way.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Callable

import gymnasium as gym

from rsigym.conditions import Condition, ConditionRegistry
from rsigym.sandbox import Sandbox

from .aec import WorkflowAECEnv
from .spec import SpecError, seed_spec, validate_spec
from .tasks import task_ids

__all__ = ["WorkflowEnv", "WORKFLOW_CONDITIONS", "resolve_spec", "bundled_specs"]

WORKFLOW_CONDITIONS: ConditionRegistry[Callable[[], dict[str, Any]]] = ConditionRegistry("workflow")


def bundled_specs() -> list[str]:
    """Names of the specs shipped in ``rsigym.envs.workflow.specs`` (plus ``seed``)."""
    folder = resources.files("rsigym.envs.workflow") / "specs"
    return ["seed"] + sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def resolve_spec(value: str | dict[str, Any] | None) -> dict[str, Any]:
    """A spec from a dict, a bundled name (``seed``, ``evolved_offline``) or a ``.json`` path."""
    if value is None or value == "seed":
        return seed_spec()
    if isinstance(value, dict):
        return validate_spec(value)
    if not isinstance(value, str):
        raise SpecError(f"spec must be a name, a .json path or a dict, got {type(value).__name__}")
    if value.endswith(".json"):
        try:
            with open(value, encoding="utf-8") as handle:
                return validate_spec(json.load(handle))
        except (OSError, ValueError) as exc:
            raise SpecError(f"cannot read workflow spec {value}: {exc}") from None
    path = resources.files("rsigym.envs.workflow") / "specs" / f"{value}.json"
    if not path.is_file():
        raise SpecError(f"unknown workflow spec {value!r}; bundled: {', '.join(bundled_specs())}")
    return validate_spec(json.loads(path.read_text(encoding="utf-8")))


@WORKFLOW_CONDITIONS.register("spec")
def _use_spec(name: str | None = None, spec: dict[str, Any] | None = None) -> Callable[[], dict[str, Any]]:
    """Run under another workflow spec (bundled name, .json path, or inline): the intervention
    that compares workflows with the same role agent."""
    resolved = resolve_spec(spec if spec is not None else name)
    return lambda: resolved


class WorkflowEnv(gym.Env[dict, Any]):
    """A workflow run as a single-controller Gymnasium env: the agent acts for the role on turn.

    ## Observation / Action / Reward / Episode End
    As ``WorkflowAECEnv``: ``Dict(role, invocation, message, text)`` of Text; JSON actions per
    ``action_schema`` or the typed Dict; reward is the workspace score at the end.
    ``info["acting_role"]`` names the role whose action the step took.

    ## Arguments
    ``spec`` (bundled name, .json path or dict; default ``seed``), ``condition``
    (``workflow.spec``), ``sandbox``, ``max_steps``, ``max_invalid_actions``, ``python_timeout_s``,
    ``task_salt`` (see ``WorkflowAECEnv``).

    ## Version History
    v0: initial version.
    """

    metadata = {"render_modes": []}

    def __init__(self, spec: str | dict[str, Any] | None = None, sandbox: str | Sandbox = "auto",
                 max_steps: int = 80, max_invalid_actions: int = 10, python_timeout_s: float = 60.0,
                 condition: Condition | dict[str, Any] | str | None = None, render_mode: str | None = None,
                 task_salt: str | None = None) -> None:
        self.condition = Condition.parse(condition)
        if self.condition is not None:
            resolved = WORKFLOW_CONDITIONS.build(self.condition)()
        else:
            resolved = resolve_spec(spec)
        self.aec = WorkflowAECEnv(resolved, sandbox=sandbox, max_steps=max_steps,
                                  max_invalid_actions=max_invalid_actions, python_timeout_s=python_timeout_s,
                                  task_salt=task_salt)
        self.render_mode = render_mode
        role = self.aec.possible_agents[0]
        self.observation_space = self.aec.observation_space(role)
        self.action_space = self.aec.action_space(role)
        self.action_schema = self.aec.action_schema
        self.example_actions: list[dict[str, Any]] = [
            {"op": "delegate", "role": self.aec.spec["call_order"][0] if self.aec.spec["call_order"]
             else self.aec.possible_agents[-1], "instruction": "Analyse data.csv and answer the task."},
            {"op": "finish", "summary": "Nothing was done."}]

    def list_tasks(self, split: str | None = None) -> list[str]:
        return task_ids(split)

    @property
    def spec_dict(self) -> dict[str, Any]:
        return self.aec.spec

    @property
    def sandbox_info(self) -> dict[str, Any] | None:
        return self.aec.sandbox_info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.aec.reset(seed=seed, options=options)
        role = self.aec.agent_selection
        return self.aec.observe(role), dict(self.aec.infos[role])

    def step(self, action: Any):
        if not self.aec.agents or self.aec._termination is not None:
            raise RuntimeError("call reset() before step() (a new episode after the last one ended)")
        acting = self.aec.agent_selection
        self.aec.step(action)
        info = dict(self.aec.infos[acting])
        info["acting_role"] = acting
        done = self.aec.terminations[acting] or self.aec.truncations[acting]
        reward = float(self.aec.rewards[acting])
        observation = self.aec.observe(self.aec.agent_selection)
        return observation, reward, bool(self.aec.terminations[acting]), bool(self.aec.truncations[acting] and done), info

    def snapshot(self) -> dict[str, Any]:
        return self.aec.snapshot()

    def close(self) -> None:
        self.aec.close()
        super().close()
