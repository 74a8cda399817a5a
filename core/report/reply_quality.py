"""Reply-format failures as a first-class outcome: per agent and role, how many replies failed.

A small model behind a server that ignores ``response_format`` may echo the schema on every turn;
such a run used to read "3 episodes, 0 infra errors" with the failures only in the last column of
the cost table. ``reply_rates`` counts, per (agent, role), the replies received, those fed back as
invalid (they failed parsing or the action schema) and those without a tool call where native
tools were offered, plus the tool modes the records say were used. ``reply_warnings`` turns a rate
above ``WARN_RATE`` into one line each: the CLI summary and the report headline show them.

Replies received = model calls minus provider retries (a call that failed for good still counts
as one, so an episode that ended in an LLM infra error adds one reply that never came: the rate
errs low, never high). Text-only replies are warned about with the single ``act`` function, where
text is never an action. With an env's own tools (``env_tools``) text is a message to the env's
user, counted and shown; but in an episode without a single tool call the agent never acted (a
task is done only through the env's tools), so there every text reply counts as invalid: a model
that never calls a tool reads 100% invalid, not 0%.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from ..records.trajectory import Trajectory

__all__ = ["WARN_RATE", "ReplyRate", "reply_rates", "reply_warnings", "reply_lines"]

WARN_RATE = 0.20  # an invalid-reply share above this is a warning in the summary and the report


@dataclass
class ReplyRate:
    """Replies of one role of one agent over a set of records."""

    agent: str
    role: str
    replies: int = 0
    invalid: int = 0
    text_only: int = 0
    no_tool_episodes: int = 0  # env_tools episodes whose replies were all text: counted as invalid
    tool_modes: Counter[str] = field(default_factory=Counter)  # records per tool mode used

    @property
    def invalid_rate(self) -> float:
        return min(1.0, self.invalid / self.replies) if self.replies else 0.0

    @property
    def text_rate(self) -> float:
        return min(1.0, self.text_only / self.replies) if self.replies else 0.0


def reply_rates(records: Iterable[Trajectory]) -> list[ReplyRate]:
    """One ``ReplyRate`` per (agent, role) that called a model, sorted by agent then role."""
    rates: dict[tuple[str, str], ReplyRate] = {}
    for record in records:
        for role, usage in record.usage_by_role.items():
            if not usage.model_calls:
                continue
            rate = rates.setdefault((record.agent.id, role), ReplyRate(record.agent.id, role))
            replies = max(0, usage.model_calls - usage.provider_retries)
            rate.replies += replies
            invalid = usage.invalid_replies
            if role == "agent" and record.tool_mode == "env_tools" and replies and usage.text_replies >= replies:
                # not one tool call in the episode: text is a message to the user, but a task is
                # done only through the env's tools, so each of these replies failed to act
                invalid = max(invalid, usage.text_replies)
                rate.no_tool_episodes += 1
            rate.invalid += invalid
            rate.text_only += usage.text_replies
            if role == "agent" and record.tool_mode:
                rate.tool_modes[record.tool_mode] += 1
    return [rates[key] for key in sorted(rates)]


def _modes(rate: ReplyRate) -> str:
    return ", ".join(sorted(rate.tool_modes)) or "-"


def reply_warnings(rates: Iterable[ReplyRate], threshold: float = WARN_RATE) -> list[str]:
    """One line per (agent, role) whose invalid replies (or text-only replies where only the `act`
    function was offered) pass ``threshold``."""
    lines = []
    for rate in rates:
        if rate.replies and rate.invalid_rate > threshold:
            no_tool = (f"; {rate.no_tool_episodes} episode{'s' if rate.no_tool_episodes != 1 else ''} without a "
                       f"single tool call count their text replies" if rate.no_tool_episodes else "")
            lines.append(f"agent {rate.agent} ({rate.role}, {_modes(rate)}): {rate.invalid_rate:.0%} of "
                         f"{rate.replies} replies failed the reply format ({rate.invalid} invalid{no_tool}; "
                         f"warning above {threshold:.0%})")
        if rate.replies and rate.text_rate > threshold and set(rate.tool_modes) == {"tools"}:
            lines.append(f"agent {rate.agent} ({rate.role}, tools): {rate.text_rate:.0%} of {rate.replies} "
                         f"replies were text without the tool call (warning above {threshold:.0%})")
    return lines


def reply_lines(rates: Iterable[ReplyRate]) -> list[str]:
    """One summary line per (agent, role): tool mode, replies, invalid and text-only shares."""
    return [f"agent {r.agent} ({r.role}, tool mode {_modes(r)}): {r.replies} replies, {r.invalid} invalid "
            f"({r.invalid_rate:.0%}), {r.text_only} text-only ({r.text_rate:.0%})" for r in rates]
