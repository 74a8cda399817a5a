"""``rsigym/ExperimentForecast-v0``: forecast the gains of candidate interventions from an experiment archive."""

from __future__ import annotations

import json
import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rsigym.conditions import Condition
from rsigym.spaces import JsonActions, clean_text, text_space

from .archive import Archive, ArchiveRecord, load_archive
from .experience import FORECAST_CONDITIONS, ExperienceCondition, observed_gain, shuffled_sources
from .metrics import round_metrics, top_k
from .render import candidate_line, experience_line, round_text
from .research import RESEARCH_ENVIRONMENTS

__all__ = ["ExperimentForecastEnv", "PREDICTION_BOUND", "TEXT_CHARS", "DATA_CHARS"]

PREDICTION_BOUND = 100.0
TEXT_CHARS = 400_000
DATA_CHARS = 600_000


class ExperimentForecastEnv(gym.Env[dict, dict]):
    """Predict the gain of 16 candidate interventions per round; the predicted top 3 are executed.

    ## Description
    A task is a target research environment (``charlm-pydoc``, ``digits-mlp``, ``tabular-bc``,
    ``regress-diabetes``, ``seq-ar``, ... : ``research.RESEARCH_ENVIRONMENTS``) whose interventions
    were all run with paired seeds when the archive was built (``rsigym archive build``). At reset
    the seed splits the target's interventions into a candidate pool (``candidates + select *
    (rounds - 1)`` of them, a uniform draw: placebos enter it as often as real interventions) and
    the rest. Each round shows 16 unexecuted pool members drawn uniformly, the visible archive of
    the condition, and everything executed so far; the forecaster predicts each candidate's gain, the env scores the round and "executes"
    the predicted top 3 (an archive lookup; ties broken by the episode's generator).

    ## Observation
    ``Dict(text, data, round, best_gain)``: ``text`` is the prompt (environment descriptions with
    the baseline config, budget and a training-curve summary; experience; executed; candidates);
    ``data`` the same as JSON for numeric forecasters; ``best_gain`` the best *shown* gain executed
    so far (0 before any: the baseline). Nothing the agent receives is derived from a true gain it
    is not shown: under ``shuffled_gains`` and ``single_seed`` the best gain and the reward follow
    the shown gains, and the round's scores (which need every candidate's true gain) go to the
    end-state snapshot only (``leakcheck`` tests it by moving hidden truths).

    ## Action
    ``{"predictions": [16 numbers]}`` (``action_schema``) or ``Dict(predictions=Box(-100, 100,
    (16,)))``, one predicted gain per candidate in candidate order. An invalid action is an error
    observation and costs no round, up to ``max_invalid_actions``.

    ## Reward
    The increase of ``max(0, best shown gain executed so far)``: the episode's rewards sum to the
    shown improvement over the baseline. The snapshot's rounds hold MAE, Spearman (None when the
    predictions are constant; ``spearman_nan`` counts it), NDCG@3 on shifted relevance, its
    chance level and lift, Regret@3 best-of-3 and mean-of-3 (see ``metrics``), and
    ``best_is_noise`` (the round's truly best candidate is a placebo or not significant).

    ## Episode End
    Terminated after ``rounds`` rounds (``budget_exhausted``): ``rounds * select`` selections.

    ## Arguments
    ``condition`` (``no_experience``, ``in_env``, ``cross_env``, ``shuffled_gains``, each with
    ``params: {observed: mean | single_seed}``; default ``in_env``), ``rounds`` (8),
    ``candidates`` (16), ``select`` (3), ``pool`` (candidate pool size; default and minimum
    ``candidates + select * (rounds - 1)``: a larger pool leaves room the selections cannot
    exhaust), ``max_invalid_actions`` (3), ``archive`` (an ``Archive``; default the shipped one).

    ## Version History
    v0: initial version.
    """

    metadata = {"render_modes": []}

    def __init__(self, condition: Condition | dict[str, Any] | str | None = None, rounds: int = 8,
                 candidates: int = 16, select: int = 3, pool: int | None = None, max_invalid_actions: int = 3,
                 archive: Archive | None = None, render_mode: str | None = None) -> None:
        if not 1 <= select <= candidates or rounds < 1:
            raise ValueError(f"need rounds >= 1 and 1 <= select <= candidates, got {rounds}, {select}, {candidates}")
        parsed = Condition.parse(condition)
        self.condition = parsed.to_dict() if parsed else {"name": "in_env", "params": {}}
        self.experience: ExperienceCondition = (FORECAST_CONDITIONS.build(parsed) if parsed
                                                else ExperienceCondition())
        self.archive = archive if archive is not None else load_archive()
        self.rounds, self.candidates, self.select = int(rounds), int(candidates), int(select)
        self.pool_size = self.candidates + self.select * (self.rounds - 1)
        if pool is not None:
            if int(pool) < self.pool_size:
                raise ValueError(f"pool must be >= candidates + select * (rounds - 1) = {self.pool_size}, got {pool}")
            self.pool_size = int(pool)
        self.max_invalid_actions = int(max_invalid_actions)
        self.render_mode = render_mode
        self.action_schema = {
            "type": "object",
            "properties": {"predictions": {
                "type": "array", "minItems": self.candidates, "maxItems": self.candidates,
                "items": {"type": "number", "minimum": -PREDICTION_BOUND, "maximum": PREDICTION_BOUND},
                "description": "predicted gain of each candidate, in candidate order"}},
            "required": ["predictions"], "additionalProperties": False,
        }
        self._actions = JsonActions(self.action_schema)
        self.example_actions: list[dict[str, Any]] = [{"predictions": [0.0] * self.candidates}]
        self.action_space = spaces.Dict({"predictions": spaces.Box(-PREDICTION_BOUND, PREDICTION_BOUND,
                                                                   (self.candidates,), np.float64)})
        self.observation_space = spaces.Dict({
            "text": text_space(TEXT_CHARS), "data": text_space(DATA_CHARS),
            "round": spaces.Discrete(self.rounds + 1),
            "best_gain": spaces.Box(-np.inf, np.inf, shape=(), dtype=np.float64),
        })
        self._target: str | None = None

    def list_tasks(self, split: str | None = None) -> list[str]:
        """The target environments with enough archive records for a full episode."""
        if split not in (None, "all", "test"):
            raise ValueError(f"ExperimentForecast-v0 has one split, all; got {split!r}")
        return [env for env in RESEARCH_ENVIRONMENTS if len(self.archive.of(env)) >= self.pool_size]

    # -- gymnasium protocol -------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        tasks = self.list_tasks()
        if not tasks:
            raise ValueError(f"no environment in the archive has {self.pool_size} records for a full episode")
        target = (options or {}).get("task_id") or tasks[int(self.np_random.integers(len(tasks)))]
        if target not in tasks:
            raise ValueError(f"unknown or too small target environment {target!r}; known: {', '.join(tasks)}")
        self._target, self._seed = target, int(seed or 0)
        rng = self.np_random
        records = self.archive.of(target)
        # a uniform draw: a placebo enters the pool exactly as often as a real intervention
        self._pool = [records[i] for i in rng.permutation(len(records))[: self.pool_size]]
        pool_ids = {r.intervention for r in self._pool}
        self._visible = self.experience.visible(target, self.archive.records, pool_ids)
        # what each target record shows: itself, or (shuffled_gains) another record of the target
        self._shown_source = (shuffled_sources(records, rng) if self.experience.name == "shuffled_gains"
                              else {r.intervention: r for r in records})
        self._seed_draw = {r.intervention: float(rng.random()) for r in self.archive.records}
        self._executed: list[tuple[int, ArchiveRecord]] = []
        self._rounds_log: list[dict[str, Any]] = []
        self._invalid = 0
        self._draw_candidates()
        return self._observation(), self._info()

    def step(self, action: Any):
        if self._target is None:
            raise RuntimeError("call reset() before step()")
        if len(self._rounds_log) >= self.rounds:
            raise RuntimeError("the episode is over; call reset()")
        value, error = self._actions.parse(action)
        if value is None or error is not None:
            self._invalid += 1
            over = self._invalid > self.max_invalid_actions
            return (self._observation(error), 0.0, over, False,
                    self._info(error=error, termination="agent_error" if over else None))
        predicted = [float(p) for p in value["predictions"]]
        true = [r.gain for r in self._current]
        chosen = top_k(predicted, self.select, self.np_random)
        metrics = round_metrics(true, predicted, chosen, self.select)
        best = self._current[int(np.argmax(true))]
        before = max(0.0, self._best_shown())
        round_index = len(self._rounds_log)
        self._executed += [(round_index, self._current[i]) for i in chosen]
        self._rounds_log.append({
            "round": round_index, "candidates": [r.intervention for r in self._current],
            "placebos": [i for i, r in enumerate(self._current) if r.placebo],
            "true": true, "predicted": predicted, "chosen": chosen, "metrics": _json_metrics(metrics),
            "best_is_noise": bool(best.placebo or not best.significant)})
        reward = max(0.0, self._best_shown()) - before
        done = len(self._rounds_log) >= self.rounds
        if not done:
            self._draw_candidates()
        info = self._info(termination="budget_exhausted" if done else None)
        return self._observation(), float(reward), done, False, info

    def snapshot(self) -> dict[str, Any]:
        """The end state graders read: every round's candidates, true gains, predictions and metrics."""
        assert self._target is not None, "snapshot() before reset()"
        executed_gains = [r.gain for _, r in self._executed]
        return {
            "target": self._target, "seed": self._seed, "condition": self.condition,
            "rounds": self._rounds_log, "pool": [r.intervention for r in self._pool],
            "visible_records": len(self._visible), "executed": [r.intervention for _, r in self._executed],
            "executed_gains": executed_gains, "shown_gains": [self._shown(r)[0] for _, r in self._executed],
            "best_gain_by_selection": [max(executed_gains[: i + 1]) for i in range(len(executed_gains))],
            "best_gain": max(executed_gains) if executed_gains else None,
            "pool_best_gain": max(r.gain for r in self._pool),
            # the scale the experience analysis normalises regrets by (gains differ 50x across targets)
            "target_gain_sd": float(np.std([r.gain for r in self.archive.of(self._target)], ddof=1)),
            "archive_provenance": {k: self.archive.provenance.get(k) for k in ("built_at", "git_revision", "complete")},
        }

    # -- helpers ------------------------------------------------------------------------------
    def _best_shown(self) -> float:
        """The best gain the agent was shown for its executed candidates (-inf before any)."""
        return max((self._shown(r)[0] for _, r in self._executed), default=-math.inf)

    def _draw_candidates(self) -> None:
        done = {r.intervention for _, r in self._executed}
        left = [r for r in self._pool if r.intervention not in done]
        self._current: list[ArchiveRecord] = [left[i] for i in self.np_random.permutation(len(left))[: self.candidates]]

    def _shown(self, record: ArchiveRecord) -> tuple[float, float | None]:
        source = self._shown_source.get(record.intervention, record)
        return observed_gain(source, self.experience.observed, self._seed_draw[record.intervention])

    def _data(self) -> dict[str, Any]:
        assert self._target is not None
        def row(record: ArchiveRecord, source: str) -> dict[str, Any]:
            gain, se = self._shown(record)
            return {"source": source, "environment": record.environment, "intervention": record.intervention,
                    "group": record.group, "diff": record.diff, "text": record.text, "gain": gain, "se": se}
        environments = sorted({self._target, *(r.environment for r in self._visible)})
        return {
            "target": self._target, "condition": self.experience.name, "observed": self.experience.observed,
            "environments": {name: {"features": dict(RESEARCH_ENVIRONMENTS[name].features),
                                    "baseline": dict(RESEARCH_ENVIRONMENTS[name].baseline)} for name in environments},
            "experience": [row(r, "archive") for r in self._visible] + [row(r, "executed") for _, r in self._executed],
            "candidates": [{"environment": r.environment, "intervention": r.intervention, "group": r.group,
                            "diff": r.diff, "text": r.text} for r in self._current],
            "round": len(self._rounds_log), "select": self.select,
        }

    def _observation(self, error: str | None = None) -> dict[str, Any]:
        assert self._target is not None
        data = self._data()
        def line(row: dict[str, Any]) -> str:
            return experience_line(row["source"], row["environment"], row["intervention"], row["group"],
                                   row["text"], row["diff"], row["gain"], row["se"])
        text = round_text(
            archive=self.archive, target=self._target, environments=sorted(data["environments"]),
            condition=self.experience.name, observed=self.experience.observed,
            round_index=min(len(self._rounds_log), self.rounds - 1), rounds=self.rounds, select=self.select,
            experience=[line(r) for r in data["experience"] if r["source"] == "archive"],
            executed=[line(r) for r in data["experience"] if r["source"] == "executed"],
            candidates=[candidate_line(i + 1, c["environment"], c["intervention"], c["group"], c["text"], c["diff"])
                        for i, c in enumerate(data["candidates"])],
            error=clean_text(error, 1000) if error else None)
        best = self._best_shown()
        return {"text": text[:TEXT_CHARS], "data": json.dumps(data, sort_keys=True)[:DATA_CHARS],
                "round": np.int64(len(self._rounds_log)),
                "best_gain": np.array(best if math.isfinite(best) else 0.0, dtype=np.float64)}

    def _info(self, error: str | None = None, termination: str | None = None) -> dict[str, Any]:
        used = len(self._rounds_log) * self.select
        info: dict[str, Any] = {
            "task_id": self._target, "invalid_actions": self._invalid,
            "budget": {"selections_used": used, "selections_left": self.rounds * self.select - used,
                       "rounds_left": self.rounds - len(self._rounds_log)},
            "visible_records": len(self._visible),
        }
        if error is not None:
            info["error"] = error
        if termination is not None:
            info["termination"] = termination
        return info


def _json_metrics(metrics: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}
    out["spearman_nan"] = int(out["spearman"] is None)
    return out
