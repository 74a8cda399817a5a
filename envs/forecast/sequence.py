"""One-step-ahead forecasting of synthetic sequences with lag-window regressors (``seq-ar``, ``-season``,
``-threshold``, ``-chaos``, ``-arma``, ``-period7``, ``-walk``, ``-twoseason``,
``-resonant``).

A seed draws a fresh realisation of the process (800 steps; its innovations are the run-to-run
noise) and sets the models' random state; the first 70% of the lag windows train, the last 30%
test. ``ar`` is a stationary non-linear autoregression (``x_t = 0.5 x_{t-1} - 0.3 x_{t-2} +
0.8 tanh(x_{t-3}) + e_t``, e ~ N(0, 0.5^2)): a few lags and a non-linear model win. ``season``
has a 12-step season and a slow trend (``x_t = 0.6 x_{t-1} + 1.5 sin(2 pi t / 12) + 0.004 t +
e_t``): season features and differencing matter, and trees cannot extrapolate the trend.
``threshold`` switches between two linear regimes by the sign of the last value (``0.9 x_{t-1} -
0.4 x_{t-2}`` above 0, ``-0.5 x_{t-1} + 0.3 x_{t-2}`` below): one linear fit averages them, trees
and neighbours can split them. ``chaos`` is a noisy logistic map (``x_t = 3.8 x_{t-1} (1 -
x_{t-1}) + 0.01 e_t``, clipped to (0, 1)): deterministic but non-linear, so trees and neighbours
beat any linear fit. ``arma`` is an ARMA(1, 2) (``x_t = 0.7 x_{t-1} + e_t + 0.6 e_{t-1} - 0.3
e_{t-2}``): the moving-average part reaches further back than a few lags. ``period7`` has a
7-step season (``x_t = 0.5 x_{t-1} + 1.2 sin(2 pi t / 7) + e_t``) that the 12-step phase features
miss and 8 or more lags catch. ``walk`` is a random walk with drift whose steps are
autocorrelated (``x_t = x_{t-1} + 0.05 + 0.5 (x_{t-1} - x_{t-2}) + e_t``): the test span leaves the
training range, so differencing wins and trees and neighbours, which cannot extrapolate, lose.
``twoseason`` adds a 5-step season to a 12-step one (``x_t = 0.4 x_{t-1} + sin(2 pi t / 12) + 0.8
sin(2 pi t / 5) + e_t``): the phase features catch one of them, long lag windows both. ``resonant`` is a lightly damped linear oscillation (``x_t = 1.8 x_{t-1} -
0.9 x_{t-2} + e_t``, a quasi-period of about 20 steps): the linear baseline already matches it, so
most changes can only lose. Models come from ``sklearn_recipe.regressor``. The
metric is the test MSE (a loss); a crash is scored as the series' variance.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .runs import RunResult
from .sklearn_recipe import pipeline, regressor

__all__ = ["SEQUENCE_BASELINE", "train_sequence", "series", "SERIES_LENGTH"]

SEQUENCE_BASELINE: dict[str, Any] = {
    "model": "ridge", "alpha": 1.0, "lags": 4, "season_features": False, "difference": False,
    "scaler": "standard", "train_fraction": 1.0, "n_estimators": 30, "max_depth": 0, "learning_rate": 0.1,
    "n_neighbors": 5, "log_every": 1,
    "run_name": "baseline", "model_seed_offset": 0, "data_seed_offset": 0,
}
SERIES_LENGTH = 800
TEST_SHARE = 0.3
PERIOD = 12


def series(process: str, seed: int) -> np.ndarray:
    """One realisation of ``process`` (``ar``, ``season``, ``threshold``, ``chaos``, ``arma``, ``period7``, ``walk``,
    ``twoseason`` or ``resonant``)
    of ``SERIES_LENGTH`` steps."""
    rng = np.random.default_rng(seed * 2909 + 17)
    noise = rng.normal(0.0, 0.5, SERIES_LENGTH + 50)
    x = np.zeros(SERIES_LENGTH + 50)
    for t in range(3, len(x)):
        if process == "ar":
            x[t] = 0.5 * x[t - 1] - 0.3 * x[t - 2] + 0.8 * math.tanh(x[t - 3]) + noise[t]
        elif process == "season":
            x[t] = 0.6 * x[t - 1] + 1.5 * math.sin(2 * math.pi * t / PERIOD) + 0.004 * t + noise[t]
        elif process == "threshold":     # two regimes: the sign of the last value picks the dynamics
            x[t] = (0.9 * x[t - 1] - 0.4 * x[t - 2] if x[t - 1] > 0 else -0.5 * x[t - 1] + 0.3 * x[t - 2]) + noise[t]
        elif process == "chaos":         # a noisy logistic map, kept inside (0, 1)
            x[t] = min(0.999, max(0.001, 3.8 * x[t - 1] * (1.0 - x[t - 1]) + 0.02 * noise[t]))
        elif process == "arma":          # ARMA(1, 2): moving-average terms make longer lag windows pay
            x[t] = 0.7 * x[t - 1] + noise[t] + 0.6 * noise[t - 1] - 0.3 * noise[t - 2]
        elif process == "period7":       # a 7-step season the 12-step phase features do not match
            x[t] = 0.5 * x[t - 1] + 1.2 * math.sin(2 * math.pi * t / 7) + noise[t]
        elif process == "walk":          # a random walk with drift whose steps are autocorrelated
            x[t] = x[t - 1] + 0.05 + 0.5 * (x[t - 1] - x[t - 2]) + noise[t]
        elif process == "twoseason":     # a 12-step and a 5-step season on top of an autoregression
            x[t] = (0.4 * x[t - 1] + 1.0 * math.sin(2 * math.pi * t / PERIOD) + 0.8 * math.sin(2 * math.pi * t / 5)
                    + noise[t])
        elif process == "resonant":      # a lightly damped linear oscillation (AR(2), quasi-period ~20 steps)
            x[t] = 1.8 * x[t - 1] - 0.9 * x[t - 2] + noise[t]
        else:
            raise ValueError(f"unknown process {process!r}")
    return x[50:]                                       # drop the burn-in


def _windows(x: np.ndarray, cfg: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(features, targets, level, time) of every lag window; targets are differences when asked."""
    lags = int(cfg["lags"])
    if lags < 1:
        raise ValueError(f"lags must be >= 1, got {lags}")
    rows = np.arange(lags, len(x))
    lagged = np.stack([x[rows - k] for k in range(1, lags + 1)], axis=1)           # (N, lags)
    level = x[rows - 1]
    target = x[rows] - level if cfg["difference"] else x[rows]
    features = lagged - level[:, None] if cfg["difference"] else lagged
    if cfg["season_features"]:
        phase = 2 * np.pi * rows / PERIOD
        features = np.column_stack([features, np.sin(phase), np.cos(phase)])
    return features, target, level, rows


def train_sequence(process: str, cfg: dict[str, Any], seed: int) -> RunResult:
    """Fit on the first 70% of the windows (the most recent ``train_fraction`` of them), MSE on the rest."""
    x = series(process, seed + int(cfg["data_seed_offset"]))
    try:
        features, target, level, _ = _windows(x, cfg)
        split = int(len(target) * (1 - TEST_SHARE))
        start = split - max(2 * features.shape[1], int(split * float(cfg["train_fraction"])))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = pipeline(cfg, regressor(cfg, seed, lasso_alpha=float(cfg["alpha"]) * 0.01)).fit(features[start:split], target[start:split])
        predicted = model.predict(features[split:])
        if cfg["difference"]:
            predicted = predicted + level[split:]
        actual = target[split:] + level[split:] if cfg["difference"] else target[split:]
        squared = (predicted - actual) ** 2
    except (ValueError, np.linalg.LinAlgError):
        return RunResult(metric=float("nan"), crashed=True)
    every = max(1, len(squared) // (8 * int(cfg["log_every"])))
    curve = [round(float(np.mean(squared[: i + every])), 4) for i in range(0, len(squared), every)]
    metric = float(np.mean(squared))
    if not math.isfinite(metric):
        return RunResult(metric=float("nan"), curve=curve, crashed=True)
    return RunResult(metric=metric, curve=curve, crashed=False)
