"""Simulated customers: a scripted user (deterministic from the task) and an LLM user.

A user opens the conversation with the task's request, answers the agent's questions, and ends
the conversation by saying ``STOP`` (``###STOP###``). The env injects the user through its
constructor, so tests and batteries choose the simulator.
"""

from __future__ import annotations

import random
from typing import Any, Protocol, runtime_checkable

from rsigym.llm import LLMError, RetryPolicy, complete
from rsigym.records import Usage

from .domain import Task

__all__ = ["STOP", "UserSimulator", "ScriptedUser", "LLMUser", "make_user"]

STOP = "###STOP###"


@runtime_checkable
class UserSimulator(Protocol):
    def reset(self, task: Task, seed: int) -> str:
        """Start a conversation; returns the user's opening message."""

    def reply(self, agent_message: str) -> str:
        """The user's answer to an agent message; contains ``STOP`` when the user is done."""


class ScriptedUser:
    """Answers from the task's instructions: a question gets the matching answer, a statement ends.

    A message with a question mark is a question: the user answers with the first entry of
    ``instructions["answers"]`` whose keyword appears in it, else confirms ("yes"). A message
    without one closes the conversation. ``max_replies`` bounds a looping agent.
    """

    def __init__(self, max_replies: int = 10) -> None:
        self.max_replies = max_replies

    def reset(self, task: Task, seed: int) -> str:
        self._answers = dict(task.instructions.get("answers") or {})
        self._replies = 0
        return str(task.instructions["request"])

    def reply(self, agent_message: str) -> str:
        self._replies += 1
        if "?" not in agent_message or self._replies > self.max_replies:
            return f"Thank you, that is all. {STOP}"
        lowered = agent_message.lower()
        for keyword, answer in self._answers.items():
            if keyword.lower() in lowered:
                return str(answer)
        return "Yes, please go ahead."


_LLM_USER_PROMPT = """You are a customer talking to a customer-service agent. Stay in character.
Your goal: {intent}
What you know: {identity}
Your opening request was: {request}
Answers you can give if asked: {answers}
Reveal information only when asked. Never invent facts you were not given. When your request is
handled (or the agent cannot help), end with the exact text {stop}."""


class LLMUser:
    """An LLM playing the customer (through ``rsigym.llm.client``), seeded, ending with ``STOP``.

    Args:
        model: LiteLLM model string.
        temperature: Sampling temperature.
        max_replies: Replies before the user stops on its own (bounds a looping agent).
        api_base: Base URL of an OpenAI-compatible server.
        max_retries, backoff_base_s, timeout_s: Provider-error retries and per-request timeout.
        litellm_kwargs: Any other ``litellm.completion`` arguments.

    ``usage`` holds the episode's LLM usage so far, failed attempts included.
    """

    def __init__(self, model: str, temperature: float = 0.0, max_replies: int = 10, api_base: str | None = None,
                 max_retries: int = 4, backoff_base_s: float = 1.0, timeout_s: float = 120.0,
                 litellm_kwargs: dict[str, Any] | None = None) -> None:
        self.model, self.temperature, self.max_replies = model, temperature, max_replies
        self.api_base, self.timeout_s = api_base, timeout_s
        self.retry = RetryPolicy(max_retries, backoff_base_s)
        self.litellm_kwargs = dict(litellm_kwargs or {})
        self.usage = Usage()

    def reset(self, task: Task, seed: int) -> str:
        i = task.instructions
        self._rng = random.Random(seed)
        self._seed = self._rng.randrange(2**31)
        self._messages = [{"role": "system", "content": _LLM_USER_PROMPT.format(
            intent=i.get("intent", ""), identity=i.get("identity", {}), request=i["request"],
            answers=i.get("answers", {}), stop=STOP)}, {"role": "assistant", "content": i["request"]}]
        self._replies = 0
        self.usage = Usage()
        return str(i["request"])

    def reply(self, agent_message: str) -> str:
        self._replies += 1
        if self._replies > self.max_replies:
            return STOP
        self._messages.append({"role": "user", "content": agent_message})
        params = {"temperature": self.temperature, "seed": self._seed, **self.litellm_kwargs}
        try:
            answer = complete(self._messages, model=self.model, role="user", api_base=self.api_base, params=params,
                              retry=self.retry, timeout_s=self.timeout_s, rng=self._rng)
        except LLMError as exc:  # counted, then the episode ends as infra_error
            self.usage = self.usage + exc.usage
            raise
        self.usage = self.usage + answer.usage
        text = answer.text or STOP
        self._messages.append({"role": "assistant", "content": text})
        return text


def make_user(spec: str | dict[str, Any] | UserSimulator) -> UserSimulator:
    """``"scripted"``, ``{"kind": "llm", "model": ...}``, or a simulator instance."""
    if isinstance(spec, UserSimulator):
        return spec
    if spec == "scripted":
        return ScriptedUser()
    if isinstance(spec, dict):
        params = {k: v for k, v in spec.items() if k != "kind"}
        if spec.get("kind") == "scripted":
            return ScriptedUser(**params)
        if spec.get("kind") == "llm":
            return LLMUser(**params)
    raise ValueError(f"user must be 'scripted' or {{kind: scripted|llm, ...}}, got {spec!r}")
