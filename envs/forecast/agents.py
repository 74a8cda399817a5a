"""Numeric forecasters for ExperimentForecast-v0: kNN, ridge, group prior, and the zero/random/oracle references.

Each reads the observation's ``data`` JSON (the visible experience and the candidates) and returns
``{"predictions": [...]}``. Features (``features``): one-hot component, knob and direction of the
group key, the signed log step of every numeric knob the diff changes (log scale), the
environment's features (modality, neural, loss metric) and whether the row is the target
environment. kNN and ridge are scikit-learn's; with fewer than ``min_rows`` experience rows they
fall back to the group prior.
"""

from __future__ import annotations

import abc
import json
from typing import Any

import numpy as np

from rsigym.records import AgentSpec, Usage

from .interventions import log_step

__all__ = ["ForecastAgent", "features", "group_prior_predictions", "KnnForecaster", "RidgeForecaster",
           "GroupPriorForecaster", "ZeroForecaster", "RandomForecaster", "OracleForecaster"]


def features(row: dict[str, Any], data: dict[str, Any]) -> dict[str, float]:
    """The feature dict of one experience or candidate row (see the module doc)."""
    group: str = row["group"]
    if group.startswith("swap:"):
        component, knob, direction = "swap", group[5:].split("=", 1)[0], group[5:]
    else:
        component, knob, direction = group.split(":")
    out: dict[str, float] = {f"component={component}": 1.0, f"knob={knob}": 1.0,
                             f"direction={direction.split('=')[0] if component != 'swap' else 'swap'}": 1.0,
                             f"group={group}": 1.0}
    environment = data["environments"].get(row["environment"], {})
    baseline = environment.get("baseline", {})
    for name, value in row["diff"].items():
        step = log_step(row["diff"], baseline, name)
        if step:
            out[f"logstep={name}"] = step
    for name, value in environment.get("features", {}).items():
        out[f"env:{name}"] = float(value)
    out["same_env"] = float(row["environment"] == data["target"])
    return out


def group_prior_predictions(data: dict[str, Any]) -> list[float]:
    """Mean observed gain of the candidate's group; else of its component and direction; else of
    the target's experience; else 0."""
    rows = data["experience"]

    def mean_of(selected: list[dict[str, Any]]) -> float | None:
        return float(np.mean([r["gain"] for r in selected])) if selected else None

    def coarse(group: str) -> str:
        return group.split("=")[0] if group.startswith("swap:") else group.split(":")[0] + ":" + group.split(":")[2]

    target_mean = mean_of([r for r in rows if r["environment"] == data["target"]])
    predictions = []
    for candidate in data["candidates"]:
        same = mean_of([r for r in rows if r["group"] == candidate["group"]])
        near = mean_of([r for r in rows if coarse(r["group"]) == coarse(candidate["group"])])
        value = next((v for v in (same, near, target_mean) if v is not None), 0.0)
        predictions.append(0.0 if candidate["group"].startswith("placebo:") else value)
    return predictions


class ForecastAgent(abc.ABC):
    """Base: parse the observation's data, call ``predict``, return the action."""

    kind = "forecast"
    allowed_params: frozenset[str] = frozenset()

    def __init__(self, spec: AgentSpec) -> None:
        unknown = set(spec.params) - self.allowed_params
        if unknown:
            raise TypeError(f"{spec.kind} takes params {sorted(self.allowed_params)}, got {sorted(unknown)}")
        self.spec = spec
        self.last_usage = Usage()
        self.params = dict(spec.params)

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 0x46435354]))

    def act(self, observation: dict[str, Any]) -> Any:
        data = json.loads(observation["data"])
        predictions = [float(np.clip(p, -100.0, 100.0)) for p in self.predict(data)]
        return {"predictions": predictions}

    @abc.abstractmethod
    def predict(self, data: dict[str, Any]) -> list[float]:
        """One predicted gain per candidate of the round's ``data``."""


class ZeroForecaster(ForecastAgent):
    """Predicts 0 (no change) for every candidate: the top 3 are then a random draw."""

    def predict(self, data: dict[str, Any]) -> list[float]:
        return [0.0] * len(data["candidates"])


class RandomForecaster(ForecastAgent):
    """Predicts independent standard-normal gains: a random ranking."""

    def predict(self, data: dict[str, Any]) -> list[float]:
        return [float(x) for x in self.rng.normal(0.0, 0.1, len(data["candidates"]))]


class OracleForecaster(ForecastAgent):
    """Predicts the true (archive mean) gains: the ceiling. Reads the shipped archive, not the observation."""

    def predict(self, data: dict[str, Any]) -> list[float]:
        from .archive import load_archive
        truth = load_archive().by_id()
        return [truth[c["intervention"]].gain for c in data["candidates"]]


class GroupPriorForecaster(ForecastAgent):
    """The group prior of ``group_prior_predictions``."""

    def predict(self, data: dict[str, Any]) -> list[float]:
        return group_prior_predictions(data)


class _SklearnForecaster(ForecastAgent):
    allowed_params = frozenset({"min_rows"})

    @abc.abstractmethod
    def _model(self, rows: int) -> Any:
        """A fresh scikit-learn regressor for ``rows`` training rows."""

    def predict(self, data: dict[str, Any]) -> list[float]:
        from sklearn.feature_extraction import DictVectorizer

        rows = data["experience"]
        if len(rows) < int(self.params.get("min_rows", 3)):
            return group_prior_predictions(data)
        vectorizer = DictVectorizer(sparse=False)
        x = vectorizer.fit_transform([features(r, data) for r in rows])          # (N, F)
        y = np.array([r["gain"] for r in rows])
        model = self._model(len(rows)).fit(x, y)
        candidates = vectorizer.transform([features(c, data) for c in data["candidates"]])
        return [float(v) for v in model.predict(candidates)]


class KnnForecaster(_SklearnForecaster):
    """Distance-weighted k nearest neighbours (k = 5, fewer when the experience is smaller)."""

    def _model(self, rows: int) -> Any:
        from sklearn.neighbors import KNeighborsRegressor
        return KNeighborsRegressor(n_neighbors=min(5, rows), weights="distance")


class RidgeForecaster(_SklearnForecaster):
    """Ridge regression (alpha 1) on the same features."""

    def _model(self, rows: int) -> Any:
        from sklearn.linear_model import Ridge
        return Ridge(alpha=1.0)
