"""``rsigym/BlackBox-v0``: a kernel test fixture, budgeted maximisation of a synthetic objective."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rsigym.spaces import TEXT_CHARSET, JsonActions, text_space
from .objectives import (LAYERS_RANGE, LEARNING_RATE_RANGE, MOMENTUM_RANGE, OPTIMIZERS,
                         BlackBoxTask, make_task, task_ids)

__all__ = ["BlackBoxEnv", "VALUE_BOUND"]

# Observed values are clipped to this bound so they always lie in the observation space; the
# objective itself stays within [-20, 1], so only absurd ``noise_std`` values ever reach it.
VALUE_BOUND = 1e6
TEXT_LENGTH = 8192


class BlackBoxEnv(gym.Env[dict, dict]):
    """Maximise a deterministic synthetic objective of four hyperparameters within a trial budget.

    This env is a **test fixture of the kernel**: the shape of a hyperparameter search with none
    of its cost, so optimiser baselines (random search, TPE) and the runner can be checked end
    to end in seconds. It is not one of the published-protocol families.

    ## Description
    A task (``bb-NNN``) defines a smooth objective (see ``objectives.py``) whose best learning
    rate depends on the optimizer, the depth and the momentum; its optimum is 1.0. Each step
    evaluates one configuration (a trial) and reports its value.

    ## Observation
    ``Dict(text, last_value, best_value, trials_left)``; ``last_value`` and ``best_value`` are
    ``-VALUE_BOUND`` before the first trial. ``text`` lists every trial and its value.

    ## Action
    ``Dict(learning_rate=Box(1e-5, 1e-1, ()), momentum=Box(0, 0.99, ()),
    layers=Discrete(6, start=1), optimizer=Discrete(3))`` (float64 boxes), or the same keys as
    JSON (``action_schema``; ``learning_rate`` is marked ``"x-log": true``, ``optimizer`` is an
    integer enum: 0 sgd, 1 adam, 2 rmsprop). An invalid action returns an error observation and
    costs no trial; after ``max_invalid_actions`` of them the episode ends with ``agent_error``.

    ## Reward
    The trial's observed value (the objective plus ``noise_std`` Gaussian noise); 0 for an
    invalid action. ``info["objective"]`` carries the same value.

    ## Episode End
    Terminated when ``max_trials`` trials are spent (``budget_exhausted``). Truncation only by
    the ``TimeLimit`` wrapper.

    ## Arguments
    ``max_trials`` (20), ``noise_std`` (0.0; noise is drawn from ``self.np_random``),
    ``max_invalid_actions`` (3).

    ## Version History
    v0: initial version.
    """

    metadata = {"render_modes": []}

    def __init__(self, max_trials: int = 20, noise_std: float = 0.0, max_invalid_actions: int = 3,
                 render_mode: str | None = None) -> None:
        if max_trials < 1:
            raise ValueError(f"max_trials must be at least 1, got {max_trials}")
        if not noise_std >= 0:
            raise ValueError(f"noise_std must be >= 0, got {noise_std}")
        self.max_trials = int(max_trials)
        self.noise_std = float(noise_std)
        self.max_invalid_actions = int(max_invalid_actions)
        self.render_mode = render_mode

        value = spaces.Box(-VALUE_BOUND, VALUE_BOUND, shape=(), dtype=np.float64)
        self.observation_space = spaces.Dict({
            "text": text_space(TEXT_LENGTH),
            "last_value": value,
            "best_value": value,
            "trials_left": spaces.Discrete(self.max_trials + 1),
        })
        layers_low, layers_high = LAYERS_RANGE
        # float64 boxes: a float32 bound such as float32(1e-5) < 1e-5 would make a sampled
        # action fail the JSON schema's minimum.
        self.action_space = spaces.Dict({
            "learning_rate": spaces.Box(*LEARNING_RATE_RANGE, shape=(), dtype=np.float64),
            "momentum": spaces.Box(*MOMENTUM_RANGE, shape=(), dtype=np.float64),
            "layers": spaces.Discrete(layers_high - layers_low + 1, start=layers_low),
            "optimizer": spaces.Discrete(len(OPTIMIZERS)),
        })
        self.action_schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "learning_rate": {"type": "number", "minimum": LEARNING_RATE_RANGE[0],
                                  "maximum": LEARNING_RATE_RANGE[1], "x-log": True,
                                  "description": "step size; search it on a log scale"},
                "momentum": {"type": "number", "minimum": MOMENTUM_RANGE[0], "maximum": MOMENTUM_RANGE[1]},
                "layers": {"type": "integer", "minimum": layers_low, "maximum": layers_high,
                           "description": "network depth"},
                "optimizer": {"type": "integer", "enum": list(range(len(OPTIMIZERS))),
                              "description": ", ".join(f"{i} = {n}" for i, n in enumerate(OPTIMIZERS))},
            },
            "required": ["learning_rate", "momentum", "layers", "optimizer"],
            "additionalProperties": False,
        }
        self._actions = JsonActions(self.action_schema)
        # valid actions, as the prompt asks for them (the conformance test checks them against the schema)
        self.example_actions: list[dict[str, Any]] = [
            {"learning_rate": 1e-3, "momentum": 0.9, "layers": layers_low, "optimizer": 1}]
        self._task: BlackBoxTask | None = None

    # -- task catalogue --------------------------------------------------------------------
    def list_tasks(self, split: str | None = None) -> list[str]:
        return task_ids(split)

    # -- gymnasium protocol -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id")
        if task_id is None:  # no task named: draw one from the train split with the env's rng
            ids = task_ids("train")
            task_id = ids[int(self.np_random.integers(len(ids)))]
        self._task = make_task(task_id)
        self._trials: list[dict[str, Any]] = []
        self._invalid = 0
        return self._observation(), self._info()

    def step(self, action: Any):
        if self._task is None:
            raise RuntimeError("call reset() before step()")
        if len(self._trials) >= self.max_trials:
            raise RuntimeError("the trial budget is spent; call reset()")
        config, error = self._actions.parse(action)
        if config is None or error is not None:  # a bad agent output is an observation
            self._invalid += 1
            over = self._invalid > self.max_invalid_actions
            info = self._info(error=error, termination="agent_error" if over else None)
            return self._observation(error=error), 0.0, over, False, info
        true_value = self._task.value(config)
        noise = self.noise_std * float(self.np_random.normal()) if self.noise_std > 0 else 0.0
        value = float(np.clip(true_value + noise, -VALUE_BOUND, VALUE_BOUND))
        self._trials.append({
            "learning_rate": float(config["learning_rate"]), "momentum": float(config["momentum"]),
            "layers": int(config["layers"]), "optimizer": int(config["optimizer"]),
            "value": value, "true_value": true_value,
        })
        done = len(self._trials) >= self.max_trials
        info = self._info(objective=value, termination="budget_exhausted" if done else None)
        return self._observation(), value, done, False, info

    def snapshot(self) -> dict[str, Any]:
        """The end state graders read: every trial (observed and noise-free value) and the best."""
        assert self._task is not None, "snapshot() before reset()"
        best = self._best()
        return {
            "task_id": self._task.task_id, "trials": [dict(t) for t in self._trials],
            "best_value": best["value"] if best else None,
            "best_true_value": max((t["true_value"] for t in self._trials), default=None),
            "max_trials": self.max_trials, "noise_std": self.noise_std,
        }

    # -- views ------------------------------------------------------------------------------
    def _best(self) -> dict[str, Any] | None:
        return max(self._trials, key=lambda t: t["value"]) if self._trials else None

    def _observation(self, error: str | None = None) -> dict[str, Any]:
        best = self._best()
        left = self.max_trials - len(self._trials)
        head = [
            f"Maximise a black-box score over 4 hyperparameters; {self.max_trials} trials in all, "
            f"{left} left.",
            f"learning_rate: number in [{LEARNING_RATE_RANGE[0]:g}, {LEARNING_RATE_RANGE[1]:g}] (log scale); "
            f"momentum: number in [{MOMENTUM_RANGE[0]:g}, {MOMENTUM_RANGE[1]:g}]; "
            f"layers: integer {LAYERS_RANGE[0]}..{LAYERS_RANGE[1]}; optimizer: "
            + ", ".join(f"{i} = {n}" for i, n in enumerate(OPTIMIZERS)) + ".",
        ]
        trials = [f"Trial {i + 1}: learning_rate={t['learning_rate']:.4g}, momentum={t['momentum']:.4g}, "
                  f"layers={t['layers']}, optimizer={OPTIMIZERS[t['optimizer']]} -> {t['value']:.6g}"
                  for i, t in enumerate(self._trials)]
        tail = [f"Best so far: {best['value']:.6g} (trial {self._trials.index(best) + 1})."] if best else []
        if error:
            # The message may quote the agent's output: keep it short and inside the text charset.
            tail.append("".join(c if c in TEXT_CHARSET else "?" for c in f"Error: {error}"[:500]))
        tail.append('Reply with {"learning_rate": <number>, "momentum": <number>, "layers": <integer>, '
                    '"optimizer": <integer>}.')
        # A long history drops its oldest trials rather than the instructions at the end.
        dropped = 0
        while len("\n".join(head + trials + tail)) > TEXT_LENGTH - 40 and trials:
            trials.pop(0)
            dropped += 1
        if dropped:
            trials.insert(0, f"({dropped} earlier trials not shown)")
        return {
            "text": "\n".join(head + trials + tail)[:TEXT_LENGTH],
            "last_value": np.array(self._trials[-1]["value"] if self._trials else -VALUE_BOUND),
            "best_value": np.array(best["value"] if best else -VALUE_BOUND),
            "trials_left": np.int64(left),
        }

    def _info(self, objective: float | None = None, error: str | None = None,
              termination: str | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "task_id": self._task.task_id if self._task else None,
            "budget": {"trials_used": len(self._trials), "trials_left": self.max_trials - len(self._trials)},
            "invalid_actions": self._invalid,
        }
        if objective is not None:
            info["objective"] = objective
        if error is not None:
            info["error"] = error
        if termination is not None:
            info["termination"] = termination
        return info
