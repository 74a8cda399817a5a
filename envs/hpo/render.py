"""What the agent reads: the task description and the trial history, and how to read it back.

The history renders scores in fixed decimal notation; the ``notation`` control of the
feedback-attribution protocol renders the very same values in scientific notation. Offline
policies parse the text back with ``parse_history`` (either notation), as an LLM would read it.
"""

from __future__ import annotations

import re
from typing import Sequence

from .space import LOSSES, LR_RANGE, OPTIMIZERS, Config

__all__ = ["task_text", "history_text", "observation_text", "parse_history"]


def task_text(description: str, budget: int) -> str:
    return (f"# Fine-tuning a pretrained neural operator (FNO)\n\n{description}\n\n"
            f"Choose the fine-tuning configuration of each trial. Allowed: learning_rate in "
            f"[{LR_RANGE[0]:g}, {LR_RANGE[1]:g}] (log scale), optimizer in {{{', '.join(OPTIMIZERS)}}}, "
            f"loss in {{{', '.join(LOSSES)}}}. Epochs and batch size are fixed. Each trial reports the "
            f"validation nRMSE of an autoregressive rollout (lower is better). You have {budget} trials; "
            f"the best-validation configuration is scored once on held-out test data at the end.")


def _score(value: float, notation: str) -> str:
    return f"{value:.3e}" if notation == "scientific" else f"{value:.6f}"


def history_text(trials: Sequence[tuple[Config, float]], notation: str = "decimal") -> str:
    if not trials:
        return "No trials yet."
    lines = [f"Trial {i + 1}: learning_rate={c.learning_rate:.3e}, optimizer={c.optimizer}, loss={c.loss} "
             f"-> validation nRMSE {_score(v, notation)}" for i, (c, v) in enumerate(trials)]
    return "\n".join(lines)


def observation_text(description: str, budget: int, trials: Sequence[tuple[Config, float]],
                     notation: str = "decimal", error: str | None = None) -> str:
    parts = [task_text(description, budget), "## History", history_text(trials, notation),
             f"Trials left: {budget - len(trials)}."]
    if error:
        parts.append(f"Error: {error}")
    parts.append('Reply with {"learning_rate": <number>, "optimizer": <name>, "loss": <name>}.')
    return "\n\n".join(parts)


_TRIAL = re.compile(r"Trial \d+: learning_rate=([0-9.eE+-]+), optimizer=(\w+), loss=(\w+) "
                    r"-> validation nRMSE ([0-9.eE+-]+|nan|inf)")


def parse_history(text: str) -> list[tuple[Config, float]]:
    """The (config, validation nRMSE) pairs of a rendered history, in either notation."""
    return [(Config(float(lr), opt, loss), float(score)) for lr, opt, loss, score in _TRIAL.findall(text)]
