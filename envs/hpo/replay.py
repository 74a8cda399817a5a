"""Feedback attribution by replay: ask the agent again at recorded decision points.

No trial is run here: the agent is rebuilt from the record's spec and shown re-rendered
observations, so a replay costs agent calls only and never trains a model.

A replay resends the recorded conversation up to the decision point: every earlier observation
and the action the agent took after it (``LLMAgent.add_recorded_turn``; an agent without that
method is shown the earlier observations in order and its answers are discarded), then the
decision point's observation. For a deterministic model the replayed ``original`` is therefore
the recorded decision (``DecisionReplay.reproduced``). Variants:

* ``permute_scores``: the validation scores are deranged among the evaluated configurations (every
  configuration shows another score than before: ties are not swapped with each other), in every
  observation of the resent history (consistently);
* ``notation``: the same scores in scientific notation, everywhere (the control);
* cold start (``cold_start_replay``): the step-0 observation with the target equation's
  description swapped, against two resampling controls: the same observation re-asked (other
  seeds) and a no-op edit (one trailing space).

Feedback sensitivity at a decision point = mean distance(original, permuted) - mean
distance(original, notation) over K proposals each (``space.config_distance``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from rsigym.records import Trajectory

from .render import history_text, observation_text, parse_history
from .space import ACTION_SCHEMA, Config, action_space, config_distance

__all__ = ["derangement", "score_derangement", "propose", "DecisionReplay", "replay_decision_points", "ColdStartReplay",
           "cold_start_replay", "cold_start_shift", "NOOP_EDIT"]

NOOP_EDIT = " "  # appended to the step-0 observation: a change of the prompt that means nothing


def derangement(n: int, rng: np.random.Generator) -> list[int]:
    """A permutation of range(n) with no fixed point (n >= 2), uniformly by rejection."""
    if n < 2:
        raise ValueError("a derangement needs at least two items")
    while True:
        order = [int(i) for i in rng.permutation(n)]
        if all(i != j for i, j in enumerate(order)):
            return order


def score_derangement(labels: Sequence[str], rng: np.random.Generator, tries: int = 1000) -> list[int] | None:
    """A permutation moving a different rendered score into every position, or None.

    Deranging positions is not enough when scores tie (diverged trials all show the cap): two
    equal scores swapped leave the observation unchanged, and the replay would then measure no
    change as "no sensitivity". Here every position must show another value than before; None
    when rejection sampling finds no such order (e.g. one value holds most positions).
    """
    n = len(labels)
    if n < 2:
        return None
    for _ in range(tries):
        order = [int(i) for i in rng.permutation(n)]
        if all(labels[j] != labels[i] for i, j in enumerate(order)):
            return order
    return None


def _config(action: Any) -> Config | None:
    try:
        return Config(float(action["learning_rate"]), str(action["optimizer"]), str(action["loss"]))
    except (KeyError, TypeError, ValueError):
        return None


def propose(agent_spec: Any, task_id: str, text: str, seed: int,
            history: Sequence[tuple[str, Any]] = ()) -> Config | None:
    """One proposal of a freshly built agent shown ``history`` then ``text`` (None when invalid).

    Args:
        agent_spec: the record's agent spec.
        task_id: the adaptation.
        text: the observation at the decision point.
        seed: the episode seed the agent is reset with (the recorded one reproduces the episode).
        history: earlier (observation text, recorded action) turns, resent before ``text``.
    """
    from rsigym.agents import make_agent

    agent = make_agent(agent_spec)
    agent.reset({"env_id": "rsigym/HyperparamSearch-v0", "task_id": task_id, "condition": None,
                 "action_space": action_space(), "observation_space": None, "action_schema": ACTION_SCHEMA,
                 "info": {}, "tools": None, "rep": 0}, seed)
    add_turn = getattr(agent, "add_recorded_turn", None)
    for shown, action in history:
        if add_turn is not None:
            add_turn(shown, action)
        else:  # an optimiser has no conversation: it is walked through the same observations
            agent.act({"text": shown})
    return _config(agent.act({"text": text}))


@dataclass(frozen=True)
class DecisionReplay:
    """Distances at one decision point (after ``evaluated`` trials) of one record.

    ``reproduced``: whether the replayed original with the recorded seed equals the recorded
    action (always expected for a deterministic model; a sampling LLM may differ).
    """

    episode_key: str
    task_id: str
    evaluated: int
    permuted_distance: float
    notation_distance: float
    reproduced: bool = True

    @property
    def sensitivity(self) -> float:
        return self.permuted_distance - self.notation_distance


def _trials(record: Trajectory) -> list[tuple[Config, float]]:
    state = record.final.state if record.final else {}
    return [(Config(t["learning_rate"], t["optimizer"], t["loss"]), float(t["val_nrmse"]))
            for t in (state or {}).get("trials", [])]


def _mean_distance(a: Sequence[Config | None], b: Sequence[Config | None]) -> float:
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    return float(np.mean([config_distance(x, y) for x, y in pairs])) if pairs else float("nan")


def _turns(record: Trajectory) -> list[tuple[str, Any, int]]:
    """(observation text, action, trials shown) of every recorded step."""
    out = []
    for step in record.steps:
        text = str(step.observation.get("text", "")) if isinstance(step.observation, dict) else str(step.observation)
        out.append((text, step.action, len(parse_history(text))))
    return out


def _rewrite(text: str, trials: Sequence[tuple[Config, float]], variant: Sequence[tuple[Config, float]],
             notation: str) -> str:
    """``text`` with its rendered history of ``trials`` replaced by ``variant`` in ``notation``."""
    if not trials:
        return text
    original = history_text(trials)
    if original not in text:
        raise ValueError("a recorded observation does not render its own history; cannot rewrite it")
    return text.replace(original, history_text(variant, notation), 1)


def replay_decision_points(record: Trajectory, *, k: int = 3, max_points: int = 4, seed: int = 0,
                           resend_history: bool = True, control_notation: str = "scientific") -> list[DecisionReplay]:
    """Replays at up to ``max_points`` decision points (>= 2 evaluated trials) of one record.

    Proposal ``i`` of every variant resets the agent with seed ``record.seed + i``: ``i = 0`` is
    the recorded seed, so the original reproduces the recorded decision; ``seed`` drives the
    derangements only.

    Args:
        resend_history: False asks with the decision point's observation alone, as a fresh
            single-turn prompt (the old replay; kept to show what it gets wrong).
        control_notation: the notation of the control variant. ``"decimal"`` makes the control
            identical to the original, i.e. breaks it (used by the calibration to show that the
            stochastic blind control then fails).
    """
    state = record.final.state if record.final else None
    trials = _trials(record)
    turns = _turns(record)
    if not state or len(trials) < 3 or not turns:
        return []
    rng = np.random.default_rng([seed, int(record.episode_key[:8], 16)])
    points = np.unique(np.linspace(2, len(trials) - 1, num=min(max_points, len(trials) - 2)).astype(int))
    out = []
    for evaluated in points:
        # the agent's first attempt at proposing trial evaluated + 1
        at = next((t for t, (_, _, n) in enumerate(turns) if n == evaluated), None)
        if at is None:
            continue
        shown = trials[:evaluated]
        order = score_derangement([history_text([(c, v)]).rsplit(" ", 1)[-1] for c, v in shown], rng)
        if order is None:  # too many tied scores: no permutation changes every shown score
            continue
        permuted = [(c, shown[j][1]) for (c, _), j in zip(shown, order)]
        variants: dict[str, list[str]] = {"original": [], "permuted": [], "notation": []}
        for text, _, n in turns[:at + 1]:  # each earlier observation shows the first n trials
            variants["original"].append(text)
            variants["permuted"].append(_rewrite(text, shown[:n], permuted[:n], "decimal"))
            variants["notation"].append(_rewrite(text, shown[:n], shown[:n], control_notation))
        actions = [action for _, action, _ in turns[:at]]
        if not resend_history:
            variants = {name: texts[-1:] for name, texts in variants.items()}
            actions = []
        proposals = {name: [propose(record.agent, state["task_id"], texts[-1], record.seed + i,
                                    list(zip(texts[:-1], actions))) for i in range(k)]
                     for name, texts in variants.items()}
        recorded = _config(turns[at][1])
        out.append(DecisionReplay(record.episode_key, str(state["task_id"]), int(evaluated),
                                  _mean_distance(proposals["original"], proposals["permuted"]),
                                  _mean_distance(proposals["original"], proposals["notation"]),
                                  recorded is not None and proposals["original"][0] == recorded))
    return out


@dataclass(frozen=True)
class ColdStartReplay:
    """First-learning-rate shifts (decades) of one agent on one adaptation, K proposals each.

    ``swap[i]``: |log10 lr(original, seed i) - log10 lr(swapped description, seed i)|;
    ``reask[i]``: the same observation asked again with another seed; ``noop[i]``: the
    observation with one trailing space, seed i. A task-conditioned agent moves more under
    the swap than under either control.
    """

    task_id: str
    swap: tuple[float, ...]
    reask: tuple[float, ...]
    noop: tuple[float, ...]

    def excess(self, control: str) -> float:
        """Mean of swap - control over the proposals where both are defined."""
        pairs = [(s, c) for s, c in zip(self.swap, getattr(self, control)) if math.isfinite(s) and math.isfinite(c)]
        return float(np.mean([s - c for s, c in pairs])) if pairs else math.nan


def _decades(a: Config | None, b: Config | None) -> float:
    if a is None or b is None:
        return math.nan
    return abs(math.log10(a.learning_rate) - math.log10(b.learning_rate))


def cold_start_replay(agent_spec: Any, task_id: str, budget: int, swapped_description: str, *,
                      k: int = 3, seed: int = 0) -> ColdStartReplay:
    """Ask for the first configuration of ``task_id`` under the swap and the two controls.

    Seeds ``seed .. seed + k - 1`` are paired across original, swap and no-op edit; the re-ask
    uses ``seed + k .. seed + 2k - 1``.
    """
    from .env import task_description

    original = observation_text(task_description(task_id), budget, [])
    swapped = observation_text(swapped_description, budget, [])

    def ask(text: str, offset: int) -> list[Config | None]:
        return [propose(agent_spec, task_id, text, seed + offset + i) for i in range(k)]

    base = ask(original, 0)
    return ColdStartReplay(task_id,
                           tuple(_decades(a, b) for a, b in zip(base, ask(swapped, 0))),
                           tuple(_decades(a, b) for a, b in zip(base, ask(original, k))),
                           tuple(_decades(a, b) for a, b in zip(base, ask(original + NOOP_EDIT, 0))))


def cold_start_shift(record: Trajectory, swapped_description: str, *, k: int = 3, seed: int = 0) -> float:
    """Mean |log10 change| of the first proposed learning rate when the description is swapped.

    The uncontrolled measure (no verdict can rest on it alone: see ``cold_start_replay``).
    """
    state = record.final.state if record.final else None
    if not state:
        return float("nan")
    replay = cold_start_replay(record.agent, state["task_id"], state["budget"], swapped_description, k=k, seed=seed)
    values = [v for v in replay.swap if math.isfinite(v)]
    return float(np.mean(values)) if values else float("nan")
