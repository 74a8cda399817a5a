"""A Gymnasium env whose one step scores a configuration, as GRPO's verifiable task.

GRPO (``grpo.py``) trains on any ``VerifiableTask``; ``ConfigEnvTask`` makes one of an env such as
``rsigym/BlackBox-v0`` with ``max_trials=1``: a problem is one of the env's tasks, the prompt its
index written in digits, the response one digit string that decodes to a configuration (a fixed
number of digits per property of the env's ``action_schema``), and the reward of a response is
what the env returns for it: every rollout is an episode, ``reset(seed, task_id)`` then one
``step``. The env is injected, so the same training runs against an in-process env
(``gymnasium.make``) or a served one (``rsigym.remote.make(url)``): the rewards come from
wherever the env lives, and nothing else in GRPO changes.

Every digit string is a valid configuration (the vocabulary is the ten digits, and each property's
digits map onto its whole range), so the policy is never rewarded for an invalid action's 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Sequence

import torch

from .arithmetic import CharTokenizer

__all__ = ["ConfigEnvTask", "StepEnv", "DIGITS"]

DIGITS = "0123456789"
NUMBER_DIGITS = 2
"""digits per number property: 100 evenly spaced values over its range (log-spaced where ``x-log``)"""


class StepEnv(Protocol):
    """What the task needs of an env: Gymnasium's reset and step (``unwrapped.action_schema`` too)."""

    @property
    def unwrapped(self) -> Any: ...

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]: ...

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict]: ...


@dataclass(frozen=True)
class _Field:
    """One property of the action schema and how its digits decode."""

    name: str
    kind: str  # "number", "log_number" or "choice"
    low: float = 0.0
    high: float = 0.0
    choices: tuple[int, ...] = ()

    @property
    def digits(self) -> int:
        return NUMBER_DIGITS if self.kind != "choice" else 1

    def decode(self, digits: list[int]) -> float | int:
        if self.kind == "choice":  # 10 digits spread over the choices (at most 10) in order
            return self.choices[digits[0] * len(self.choices) // len(DIGITS)]
        top = len(DIGITS) ** self.digits - 1
        fraction = sum(d * len(DIGITS) ** (self.digits - 1 - i) for i, d in enumerate(digits)) / top  # in [0, 1]
        if self.kind == "log_number":
            return 10.0 ** (math.log10(self.low) + fraction * (math.log10(self.high) - math.log10(self.low)))
        return self.low + fraction * (self.high - self.low)


def _fields(schema: dict[str, Any]) -> list[_Field]:
    """The decodable properties of an object schema: bounded numbers and integer choices (an enum, or a
    ``minimum``..``maximum`` range of at most 10 values)."""
    fields = []
    for name, spec in (schema.get("properties") or {}).items():
        if spec.get("type") == "number" and "minimum" in spec and "maximum" in spec:
            log = bool(spec.get("x-log")) and spec["minimum"] > 0
            fields.append(_Field(name, "log_number" if log else "number", float(spec["minimum"]),
                                 float(spec["maximum"])))
        elif spec.get("type") == "integer" and ("enum" in spec or ("minimum" in spec and "maximum" in spec)):
            choices = tuple(int(v) for v in spec["enum"]) if "enum" in spec else tuple(
                range(int(spec["minimum"]), int(spec["maximum"]) + 1))
            if not 1 <= len(choices) <= len(DIGITS):
                raise ValueError(f"property {name!r} has {len(choices)} values; one digit encodes at most {len(DIGITS)}")
            fields.append(_Field(name, "choice", choices=choices))
        else:
            raise ValueError(f"property {name!r} of the action schema is neither a bounded number nor an integer "
                             f"choice: {spec}")
    if not fields:
        raise ValueError("the env's action schema has no properties to configure")
    return fields


class ConfigEnvTask:
    """GRPO's task protocol over an env that scores one configuration per episode.

    Args:
        env: The env (in-process or ``rsigym.remote``); its ``unwrapped.action_schema`` says what a
            configuration is. Each episode must end after one step (BlackBox-v0: ``max_trials=1``).
        task_ids: The env's task ids the policy trains on (a problem is an index into them; at most 100).
        seed: The first episode seed; each episode gets the next one, so two runs that score the same
            responses in the same order send the env the same seeds.
    """

    name: ClassVar[str] = "config_env"

    def __init__(self, env: StepEnv, task_ids: Sequence[str], seed: int = 0) -> None:
        if not 1 <= len(task_ids) <= 100:
            raise ValueError(f"between 1 and 100 task ids (two prompt digits), got {len(task_ids)}")
        self.env, self.task_ids = env, list(task_ids)
        self.fields = _fields(dict(env.unwrapped.action_schema))
        self.next_seed = seed
        self.played: list[tuple[int, str, float]] = []
        """every episode so far, in order: its seed, task id and reward"""

    @property
    def episodes(self) -> int:
        """Episodes played so far (one per scored response)."""
        return len(self.played)

    @property
    def prompt_length(self) -> int:
        return 2

    @property
    def response_length(self) -> int:
        return sum(f.digits for f in self.fields)

    @property
    def tokenizer(self) -> CharTokenizer:
        return CharTokenizer(DIGITS)

    def sample_problems(self, count: int, generator: torch.Generator) -> torch.Tensor:
        return torch.randint(0, len(self.task_ids), (count, 1), generator=generator)

    def eval_problems(self, count: int, seed: int = 12345) -> torch.Tensor:
        """Each task in turn (``count`` of them, cycling): the evaluation is the training tasks themselves, since
        one task's best configuration says nothing about another's (no held-out split to generalise to)."""
        return (torch.arange(count) % len(self.task_ids)).view(-1, 1)

    def prompts(self, problems: torch.Tensor) -> torch.Tensor:
        column = problems.view(-1, 1)
        return torch.cat([column // 10, column % 10], dim=1)  # (N, 2): the task index's two digits

    def demonstrations(self, problems: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Uniform random digits: the env has no teacher, so the warm start only learns the response format."""
        return torch.randint(0, len(DIGITS), (len(problems), self.response_length), generator=generator)

    def action(self, response: list[int]) -> dict[str, float | int]:
        """A response's digits as the env's action (a dict of the schema's properties)."""
        action, start = {}, 0
        for f in self.fields:
            action[f.name] = f.decode(response[start:start + f.digits])
            start += f.digits
        return action

    def score(self, responses: torch.Tensor, problems: torch.Tensor) -> torch.Tensor:
        """(N, R) responses -> (N,) rewards: one episode each, the env's reward for the decoded configuration."""
        rewards = []
        for response, (index,) in zip(responses.tolist(), problems.tolist()):
            self.env.reset(seed=self.next_seed, options={"task_id": self.task_ids[index]})
            self.next_seed += 1
            _, reward, terminated, truncated, info = self.env.step(self.action(response))
            if "error" in info:
                raise RuntimeError(f"the env refused a decoded configuration {self.action(response)}: {info['error']}")
            if not (terminated or truncated):
                raise ValueError("the env's episode did not end after one step (BlackBox-v0 needs max_trials=1)")
            rewards.append(float(reward))
            self.played.append((self.next_seed - 1, self.task_ids[index], float(reward)))
        return torch.tensor(rewards, dtype=torch.float64).float()

    def completable(self, responses: torch.Tensor, problems: torch.Tensor) -> torch.Tensor:
        """Every digit string decodes to a valid configuration, so every prefix can still become one."""
        return torch.ones_like(responses, dtype=torch.bool)
