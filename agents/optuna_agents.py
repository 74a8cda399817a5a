"""Optimiser baselines through Optuna's ask/tell API: random search and TPE.

Each episode is one Optuna study. ``act`` asks a trial over the env's action space (mapped by
``optuna_space``) and returns it as an action; ``observe`` tells the trial its value, so the
sampler learns from every step. Both samplers are seeded from the episode seed with the same
derived seed, and TPE draws its start-up trials from a ``RandomSampler`` with that seed: on one
episode seed, TPE's first ``n_startup_trials`` actions equal random search's (common random
numbers), so a TPE-vs-random difference comes from the model-based trials alone.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from rsigym.agent import register_agent
from rsigym.records import AgentSpec, Usage

from .optuna_space import action_from_params, optuna_distributions

if TYPE_CHECKING:
    import optuna

__all__ = ["OptunaParams", "TPEParams", "RandomSearchAgent", "TPEAgent", "sampler_seed"]


@dataclass(frozen=True)
class OptunaParams:
    """``spec.params`` of every Optuna agent."""

    direction: Literal["maximize", "minimize"] = "maximize"
    """``maximize`` or ``minimize`` the told value."""
    objective_key: str | None = None
    """Tell ``info[objective_key]`` instead of the step reward (e.g. ``"objective"``)."""

    def __post_init__(self) -> None:
        # TypeError, not ValueError: make_agent turns it into a one-line "rejects params" error.
        if self.direction not in ("maximize", "minimize"):
            raise TypeError(f"direction must be 'maximize' or 'minimize', got {self.direction!r}")


@dataclass(frozen=True)
class TPEParams(OptunaParams):
    """``spec.params`` of the TPE agent: the ``TPESampler`` arguments, passed explicitly.

    The defaults suit budgets of 10-50 trials. They are set here rather than left to Optuna,
    whose defaults change between releases (5.x: 10 start-up trials, which is half of a 20-trial
    budget spent on random draws, and ``constant_liar=True``), so what ``tpe`` means here does
    not drift with the Optuna version.
    """

    n_startup_trials: int = 5
    """Random trials before the Parzen estimators are fitted."""
    n_ei_candidates: int = 24
    """Candidates scored by expected improvement per trial."""
    multivariate: bool = True
    """One joint Parzen estimator over all keys, so interactions (lr x optimizer) are modelled."""
    constant_liar: bool = False
    """Only matters for parallel trials; an episode runs its trials one after another."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_startup_trials < 0 or self.n_ei_candidates < 1:
            raise TypeError(f"need n_startup_trials >= 0 and n_ei_candidates >= 1, "
                            f"got {self.n_startup_trials} and {self.n_ei_candidates}")


def sampler_seed(seed: int) -> int:
    """The sampler seed of an episode seed; the same for both agents (common random numbers)."""
    return int(np.random.SeedSequence([seed, 0x0B7A]).generate_state(1)[0])


class _OptunaAgent(ABC):
    """Ask/tell over one in-memory study per episode; subclasses choose the sampler."""

    params_type: ClassVar[type[OptunaParams]] = OptunaParams

    def __init__(self, spec: AgentSpec) -> None:
        self.spec = spec
        self.params = self.params_type(**spec.params)
        self.last_usage = Usage()
        self._study: optuna.Study | None = None
        self._trial: optuna.Trial | None = None

    @property
    def study(self) -> optuna.Study | None:
        """The current episode's study (its trials, states and values), for inspection."""
        return self._study

    @abstractmethod
    def _sampler(self, seed: int) -> optuna.samplers.BaseSampler:
        """The sampler of one episode's study."""

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        import optuna  # lazily: importing rsigym.agents must not pay Optuna's import cost

        optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "Trial N finished" per step
        self._space = task_info["action_space"]
        self._schema = task_info.get("action_schema")
        self._distributions = optuna_distributions(self._space, self._schema)
        self._study = optuna.create_study(direction=self.params.direction,
                                          sampler=self._sampler(sampler_seed(seed)))
        self._trial = None

    def act(self, observation: dict[str, Any]) -> Any:
        if self._study is None:
            raise RuntimeError("call reset() before act()")
        if self._trial is not None:
            raise RuntimeError(f"act() called again before observe() told trial {self._trial.number} its value")
        self._trial = self._study.ask(self._distributions)
        return action_from_params(self._trial.params, self._space, self._schema)

    def observe(self, reward: float, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Tell the pending trial its value; a step the env rejected is told as FAILED."""
        from optuna.trial import TrialState

        if self._study is None or self._trial is None:
            return
        trial, self._trial = self._trial, None
        if info.get("error") is not None:
            self._study.tell(trial, state=TrialState.FAIL)
            return
        key = self.params.objective_key
        if key is not None and key not in info:
            self._study.tell(trial, state=TrialState.FAIL)
            raise KeyError(f"objective_key {key!r} is not in the step info (keys: {sorted(info)})")
        value = float(reward if key is None else info[key])
        if math.isfinite(value):
            self._study.tell(trial, value)
        else:  # Optuna would fail it too, with a warning; saying so here keeps the logs quiet
            self._study.tell(trial, state=TrialState.FAIL)


class RandomSearchAgent(_OptunaAgent):
    """Uniform random search (log-uniform on log-scaled keys) with Optuna's ``RandomSampler``.

    Unlike the ``random`` agent, which samples the Gymnasium space, it honours the schema's log
    scales and enums: the fair random reference of a hyperparameter search.
    """

    def _sampler(self, seed: int) -> optuna.samplers.BaseSampler:
        from optuna.samplers import RandomSampler

        return RandomSampler(seed=seed)


class TPEAgent(_OptunaAgent):
    """Tree-structured Parzen Estimator (Optuna's ``TPESampler``); arguments in ``TPEParams``."""

    params_type: ClassVar[type[OptunaParams]] = TPEParams

    def _sampler(self, seed: int) -> optuna.samplers.BaseSampler:
        from optuna.samplers import TPESampler

        params = self.params
        assert isinstance(params, TPEParams)
        return TPESampler(seed=seed, n_startup_trials=params.n_startup_trials,
                          n_ei_candidates=params.n_ei_candidates,
                          multivariate=params.multivariate, constant_liar=params.constant_liar)


register_agent("random_search")(RandomSearchAgent)
register_agent("tpe")(TPEAgent)
