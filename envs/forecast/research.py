"""The eleven research environments whose experiments fill the archive.

Each is a real, seeded training with a fixed compute budget that takes well under a few seconds
on one CPU thread (the charlm twins about ten). ``ENVIRONMENT_GROUPS`` sorts them by kind of task
(text, image, tabular classification, regression, sequence) for the leave-one-group-out transfer
benchmark. ``run(environment, diff, seed)`` applies an intervention's diff to the
baseline config and trains; the archive compares it with the baseline run of the same seed.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping

from .charlm import CHARLM_BASELINE, VOCAB_SIZE, train_charlm
from .digits import DIGITS_CNN_BASELINE, DIGITS_MLP_BASELINE, train_digits
from .regression import REGRESSION_BASELINE, target_variance, train_regression
from .runs import RunResult
from .sequence import SEQUENCE_BASELINE, series, train_sequence
from .tabular import TABULAR_BASELINE, train_tabular
from .tabular_mlp import BC_MLP_BASELINE, train_bc_mlp
from .wine import WINE_BASELINE, train_wine

__all__ = ["ResearchEnvironment", "RESEARCH_ENVIRONMENTS", "ENVIRONMENT_GROUPS", "group_of", "research_environment",
           "run", "gain"]


@dataclass(frozen=True)
class ResearchEnvironment:
    """A training recipe with a fixed budget, the metric it reports and what a crash counts as.

    Attributes:
        name: ``charlm-pydoc``, ``digits-mlp``, ``tabular-bc``, ``regress-diabetes``, ``seq-ar``, ...
        description: one paragraph for the forecaster (task, model, data, budget).
        metric: what the run reports (lower is better for both kinds).
        metric_kind: ``loss`` (gain = log(baseline / intervention)) or ``error`` (gain = relative
            error reduction, (baseline - intervention) / baseline).
        floor_metric: the metric a crashed run is scored with (a trivial predictor's).
        baseline: the baseline config; interventions are diffs on it.
        train: ``(config, seed) -> RunResult``.
        features: numeric environment features for the regression forecasters.
        budget: the budget in words, where the baseline's knobs do not say it.
    """

    name: str
    description: str
    metric: str
    metric_kind: Literal["loss", "error"]
    floor_metric: float
    baseline: Mapping[str, Any]
    train: Callable[[dict[str, Any], int], RunResult] = field(repr=False)
    features: Mapping[str, float] = field(default_factory=dict)
    budget: str = ""

    def budget_text(self) -> str:
        if self.budget:
            return self.budget
        cfg = self.baseline
        if "tokens" in cfg:
            return f"{cfg['tokens']} training tokens ({cfg['tokens'] // (cfg['batch_size'] * cfg['context'])} steps)"
        if "epochs" in cfg:
            return f"{cfg['epochs']} epochs"
        return f"{5 * 2} fits (2 repeats of 5 folds)"


_MODALITY = {"text": 0.0, "image": 0.0, "tabular": 0.0, "sequence": 0.0}
_CV = "10 fits (2 repeats of 5 folds)"


def _features(modality: str, neural: bool, loss_metric: bool) -> dict[str, float]:
    return {**_MODALITY, modality: 1.0, "neural": float(neural), "loss_metric": float(loss_metric)}


RESEARCH_ENVIRONMENTS: dict[str, ResearchEnvironment] = {
    env.name: env for env in [
        ResearchEnvironment(
            "charlm-pydoc",
            "A 2-layer character-level transformer (d_model 48, 4 heads, context 32) trained with AdamW "
            "on the text of CPython's pydoc topics (English prose about Python, with code samples); "
            "metric: validation loss in nats per character on the last 10% of the text.",
            "validation nats/char", "loss", math.log(VOCAB_SIZE), CHARLM_BASELINE,
            functools.partial(train_charlm, "pydoc_topics"), _features("text", True, True)),
        ResearchEnvironment(
            "charlm-stdlib",
            "The same 2-layer character-level transformer and recipe as charlm-pydoc, trained on CPython "
            "standard-library source code (argparse, difflib, functools, ...); metric: validation loss in "
            "nats per character on the last 10% of the text.",
            "validation nats/char", "loss", math.log(VOCAB_SIZE), CHARLM_BASELINE,
            functools.partial(train_charlm, "stdlib_source"), _features("text", True, True)),
        ResearchEnvironment(
            "digits-mlp",
            "A one-hidden-layer MLP (width 64, ReLU) trained with Adam on scikit-learn's 8x8 digits "
            "(half the 1,797 images for training, half for test); metric: test cross-entropy.",
            "test cross-entropy", "loss", math.log(10), DIGITS_MLP_BASELINE,
            functools.partial(train_digits, "mlp"), _features("image", True, True)),
        ResearchEnvironment(
            "digits-cnn",
            "A small CNN (one 3x3 convolution with 8 channels, max pooling, a 32-unit dense layer) trained "
            "with Adam on scikit-learn's 8x8 digits (half for training, half for test); metric: test "
            "error rate.",
            "test error rate", "error", 0.9, DIGITS_CNN_BASELINE,
            functools.partial(train_digits, "cnn"), _features("image", True, False)),
        ResearchEnvironment(
            "tabular-bc",
            "A standardised L2 logistic regression (C = 1, lbfgs) on scikit-learn's breast cancer data "
            "(569 tumours, 30 features); metric: error rate pooled over 2 repeats of stratified 5-fold "
            "cross-validation.",
            "cross-validated error rate", "error", 212 / 569, TABULAR_BASELINE,
            train_tabular, _features("tabular", False, False)),
        ResearchEnvironment(
            "tabular-wine",
            "A standardised multinomial L2 logistic regression (C = 1, lbfgs) on scikit-learn's wine data "
            "(178 wines, 3 cultivars, 13 chemical measurements); metric: cross-entropy of the predicted class "
            "probabilities pooled over 2 repeats of stratified 5-fold cross-validation.",
            "cross-validated log-loss (nats)", "loss", math.log(3), WINE_BASELINE, train_wine,
            _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "bc-mlp",
            "A one-hidden-layer MLP (width 32, ReLU) trained with Adam for 10 epochs on scikit-learn's breast "
            "cancer data (standardised; half the 569 tumours for training, half for test); metric: test "
            "cross-entropy.",
            "test cross-entropy", "loss", math.log(2), BC_MLP_BASELINE, train_bc_mlp,
            _features("tabular", True, True)),
        ResearchEnvironment(
            "regress-diabetes",
            "A standardised ridge regression (alpha = 1) on scikit-learn's diabetes data (442 patients, 10 "
            "features, disease progression after a year); metric: out-of-fold mean squared error pooled over "
            "2 repeats of 5-fold cross-validation.",
            "cross-validated MSE", "loss", target_variance("diabetes"), REGRESSION_BASELINE,
            functools.partial(train_regression, "diabetes"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "regress-friedman",
            "The same ridge regression recipe as regress-diabetes on scikit-learn's make_friedman1 (400 rows, "
            "10 features of which 5 matter through a smooth non-linear function, noise 1, drawn once); metric: "
            "out-of-fold mean squared error pooled over 2 repeats of 5-fold cross-validation.",
            "cross-validated MSE", "loss", target_variance("friedman"), REGRESSION_BASELINE,
            functools.partial(train_regression, "friedman"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "seq-ar",
            "One-step-ahead forecasting of a synthetic non-linear autoregressive sequence (800 steps, a fresh "
            "realisation per seed) with a standardised ridge regression (alpha = 1) on the last 4 values; "
            "trained on the first 70% of the windows; metric: test mean squared error on the last 30%.",
            "test MSE", "loss", float(series("ar", 0).var()), SEQUENCE_BASELINE,
            functools.partial(train_sequence, "ar"), _features("sequence", False, True), budget="one fit"),
        ResearchEnvironment(
            "seq-season",
            "The same lag-window ridge recipe as seq-ar on a synthetic sequence with a 12-step season and a "
            "slow upward trend (800 steps, a fresh realisation per seed); metric: test mean squared error on "
            "the last 30% of the windows.",
            "test MSE", "loss", float(series("season", 0).var()), SEQUENCE_BASELINE,
            functools.partial(train_sequence, "season"), _features("sequence", False, True), budget="one fit"),
    ]
}

# kinds of task, for leave-one-group-out transfer: no group shares a dataset or a recipe with another
ENVIRONMENT_GROUPS: dict[str, tuple[str, ...]] = {
    "text": ("charlm-pydoc", "charlm-stdlib"),
    "image": ("digits-mlp", "digits-cnn"),
    "tabular-classification": ("tabular-bc", "tabular-wine", "bc-mlp"),
    "regression": ("regress-diabetes", "regress-friedman"),
    "sequence": ("seq-ar", "seq-season"),
}


def group_of(environment: str) -> str:
    """The group of ``environment`` in ``ENVIRONMENT_GROUPS``."""
    return next(name for name, members in ENVIRONMENT_GROUPS.items() if environment in members)


def research_environment(name: str) -> ResearchEnvironment:
    """The research environment called ``name`` (a clear error naming the known ones otherwise)."""
    try:
        return RESEARCH_ENVIRONMENTS[name]
    except KeyError:
        raise ValueError(f"unknown research environment {name!r}; known: {', '.join(RESEARCH_ENVIRONMENTS)}") from None


def run(environment: str, diff: Mapping[str, Any], seed: int) -> RunResult:
    """Train ``environment``'s baseline with ``diff`` applied, seeded by ``seed``."""
    env = research_environment(environment)
    unknown = set(diff) - set(env.baseline)
    if unknown:
        raise ValueError(f"{environment}: unknown knobs {sorted(unknown)}")
    return env.train({**env.baseline, **diff}, seed)


def gain(environment: str, baseline_metric: float, metric: float) -> float:
    """The gain of an intervention over the baseline (positive = better), per the metric kind."""
    env = research_environment(environment)
    if env.metric_kind == "loss":
        return math.log(baseline_metric / metric)
    return (baseline_metric - metric) / max(baseline_metric, 1e-9)
