"""What the serve tests share: the replay agent that drives an episode in-process and a served
episode with the same JSON actions, and the family graders that score a record."""

from __future__ import annotations

from typing import Any

import numpy as np

from rsigym.agent import register_agent
from rsigym.records import AgentSpec, Usage, to_jsonable

__all__ = ["ReplayAgent", "replay_actions", "family_graders"]


class ReplayAgent:
    """Plays a fixed list of JSON actions (the last one again once the list is spent)."""

    def __init__(self, spec: AgentSpec) -> None:
        self.actions = list(spec.params["actions"])
        self.last_usage = Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        self._next = 0

    def act(self, observation: dict[str, Any]) -> Any:
        action = self.actions[min(self._next, len(self.actions) - 1)]
        self._next += 1
        return action


register_agent("serve_replay")(ReplayAgent)


def replay_actions(env: Any, n: int, seed: int) -> list[Any]:
    """``n`` JSON actions for ``env``: its first example action, then seeded samples of its action
    space (valid or not: the env judges them, in-process and served alike)."""
    env.action_space.seed(seed)
    examples = list(getattr(env.unwrapped, "example_actions", None) or [])
    actions = [to_jsonable(a) for a in examples[:1]]
    while len(actions) < n:
        actions.append(to_jsonable(env.action_space.sample()))
    return actions


def family_graders(env_id: str) -> list[str]:
    """The graders defined in ``env_id``'s family folder that build without parameters."""
    from rsigym.grader import available_graders, get_grader
    from rsigym.scenario.preflight import _env_module, _family

    family = _family(_env_module(env_id))
    names = []
    for name, cls in sorted(available_graders().items()):
        if family is None or _family(getattr(cls, "__module__", "") or "") != family:
            continue
        try:
            get_grader(name)
        except Exception:  # noqa: BLE001 - a grader that needs parameters (a model, a judge) is not used here
            continue
        names.append(name)
    return names


def same_values(a: Any, b: Any) -> bool:
    return bool(np.all(to_jsonable(a) == to_jsonable(b))) if not isinstance(a, (dict, list)) else to_jsonable(a) == to_jsonable(b)
