"""``rsigym/HyperparamSearch-v0``: configure fine-tuning runs of a pretrained neural operator."""

from __future__ import annotations

import math
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rsigym.spaces import JsonActions, clean_text, text_space
from .render import observation_text
from .metric import NRMSE_CAP
from .space import ACTION_SCHEMA, Config, action_space, config_from_action

__all__ = ["HyperparamSearchEnv", "TrialRunnerLike", "task_description", "NRMSE_CAP"]



class TrialRunnerLike(Protocol):
    """What the env needs from a trial runner (``training.TrialRunner``, or a test double)."""

    def run(self, condition: str, seed: int, config: Config) -> Any: ...  # .val_nrmse, .checkpoint_sha256

    def test(self, condition: str, seed: int, config: Config) -> float: ...  # test nRMSE of that trial


def task_description(condition: str, *, target: Any = None) -> str:
    """The task as the agent reads it; the ``Source:`` / ``Target:`` lines are machine-readable.

    ``target`` replaces the condition's target equation in the text only (the cold-start
    description swap of the feedback-attribution protocol).
    """
    from .adaptations import ADAPTATIONS

    adaptation = ADAPTATIONS[condition]
    target = target or adaptation.target
    return (f"A neural operator was pretrained on the source equation; fine-tune it for the target.\n"
            f"Source: {adaptation.source.key}\nTarget: {target.key}\n\n"
            f"Source equation. {adaptation.source.describe()}\n\nTarget equation. {target.describe()}")


class HyperparamSearchEnv(gym.Env[dict, dict]):
    """Propose fine-tuning configurations; each step is one real fine-tuning trial.

    ## Description
    A task is a source-to-target adaptation (``adv0.4->adv1.0``, ...): an FNO pretrained on the
    source equation is fine-tuned on the target's training data with the proposed learning rate,
    optimizer and loss, and scored by the validation nRMSE of an autoregressive rollout. Trials
    are cached by a hash of their inputs, so replays and baselines never train twice.

    ## Observation
    ``Dict(text, best_val_nrmse, trials_left)``; ``text`` holds the task description, the allowed
    ranges and the history of (config, validation nRMSE).

    ## Action
    ``{"learning_rate": float, "optimizer": name, "loss": name}`` (``action_schema``) or the typed
    ``Dict(learning_rate=Box, optimizer=Discrete(4), loss=Discrete(4))``. Invalid actions are error
    observations and cost no trial, up to ``max_invalid_actions``.

    ## Reward
    ``-validation nRMSE`` of the trial (so maximisers minimise the error).

    ## Episode End
    After ``budget`` trials (``budget_exhausted``): the best-validation configuration is scored
    once on the test set, reported as ``info["test_nrmse"]``.

    ## Arguments
    ``preset`` (tiny, default, paper), ``budget`` (20), ``max_invalid_actions``, ``trials`` (a
    trial runner; built from ``preset`` when None).

    ## Version History
    v0: initial version.
    """

    # CPU-heavy steps (training in the worker): the runner keeps one episode in flight per core.
    metadata = {"render_modes": [], "rsigym.cpu_heavy": True}

    def __init__(self, preset: str = "default", budget: int = 20, max_invalid_actions: int = 3,
                 trials: TrialRunnerLike | None = None, render_mode: str | None = None) -> None:
        if trials is None:
            from .training import TrialRunner

            trials = TrialRunner(preset)
        self.trials, self.preset, self.budget = trials, preset, int(budget)
        self.max_invalid_actions = max_invalid_actions
        self.render_mode = render_mode
        self.action_schema = ACTION_SCHEMA
        self._actions = JsonActions(ACTION_SCHEMA)
        # valid actions, as the prompt asks for them (the conformance test checks them against the schema)
        self.example_actions: list[dict[str, Any]] = [{"learning_rate": 1e-3, "optimizer": "adam", "loss": "mse"}]
        self.action_space = action_space()
        self.observation_space = spaces.Dict({
            "text": text_space(20_000),
            "best_val_nrmse": spaces.Box(0.0, NRMSE_CAP, shape=(), dtype=np.float64),
            "trials_left": spaces.Discrete(self.budget + 1),
        })
        self._task: str | None = None

    def list_tasks(self, split: str | None = None) -> list[str]:
        from .adaptations import ADAPTATIONS

        names = list(ADAPTATIONS)
        if split not in (None, "all"):
            raise ValueError(f"HyperparamSearch-v0 has one split, all; got {split!r}")
        return names

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        names = self.list_tasks()
        task = (options or {}).get("task_id") or names[int(self.np_random.integers(len(names)))]
        if task not in names:
            raise ValueError(f"unknown adaptation condition {task!r}; known: {', '.join(names)}")
        self._task, self._seed = task, int(seed or 0)
        self.description = task_description(task)
        self._history: list[tuple[Config, float, str]] = []  # config, val, checkpoint
        self._test: float | None = None
        self._invalid = 0
        return self._observation(), self._info()

    def step(self, action: Any):
        if self._task is None:
            raise RuntimeError("call reset() before step()")
        value, error = self._actions.parse(config_from_action(action))
        if value is None or error is not None:
            self._invalid += 1
            over = self._invalid > self.max_invalid_actions
            return (self._observation(error), 0.0, over, False,
                    self._info(error=error, termination="agent_error" if over else None))
        config = Config(float(value["learning_rate"]), value["optimizer"], value["loss"])
        result = self.trials.run(self._task, self._seed, config)
        val = _finite(result.val_nrmse)
        self._history.append((config, val, result.checkpoint_sha256))
        done = len(self._history) >= self.budget
        info = self._info(termination="budget_exhausted" if done else None)
        if done:  # the test set is read once, for the best-validation configuration only
            self._test = info["test_nrmse"] = _finite(self.trials.test(self._task, self._seed, self._best()[0]))
        return self._observation(), -val, done, False, info

    def _best(self) -> tuple[Config, float, str]:
        return min(self._history, key=lambda h: h[1])

    def snapshot(self) -> dict[str, Any]:
        assert self._task is not None, "snapshot() before reset()"
        done = len(self._history) >= self.budget
        return {
            "task_id": self._task, "seed": self._seed, "preset": self.preset, "budget": self.budget,
            "description": self.description,
            "trials": [{**c.to_dict(), "val_nrmse": v} for c, v, _ in self._history],
            "best": ({**self._best()[0].to_dict(), "val_nrmse": self._best()[1]} if self._history else None),
            "test_nrmse": self._test if done else None,
            "checkpoint_sha256": self._history[0][2] if self._history else None,
            # the runner's counters so far in this process: replays and reruns show up as hits
            "trial_cache": {name: int(getattr(self.trials, name, 0))
                            for name in ("hits", "misses", "train_calls", "test_calls")},
        }

    def _observation(self, error: str | None = None) -> dict[str, Any]:
        trials = [(c, v) for c, v, _ in self._history]
        best = min((v for _, v in trials), default=NRMSE_CAP)
        error = clean_text(error, 1000) if error else error  # it may quote the agent's output
        return {"text": observation_text(self.description, self.budget, trials, error=error)[:20_000],
                "best_val_nrmse": np.array(best, dtype=np.float64), "trials_left": np.int64(self.budget - len(trials))}

    def _info(self, error: str | None = None, termination: str | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {"task_id": self._task, "invalid_actions": self._invalid,
                                "budget": {"trials_used": len(self._history),
                                           "trials_left": self.budget - len(self._history)}}
        if self._history:
            info["objective"] = -self._history[-1][1]
        if error is not None:
            info["error"] = error
        if termination is not None:
            info["termination"] = termination
        return info


def _finite(value: float) -> float:
    return float(value) if math.isfinite(value) else NRMSE_CAP
