"""The forty-six research environments whose experiments fill the archive.

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
from .classify import (BOOSTING_BASELINE, KNN_BASELINE, LOGREG_BASELINE, SVM_BASELINE, TABULAR_BASELINE,
                       WINE_BASELINE, class_share, train_classifier)
from .digits import DIGITS_CNN_BASELINE, DIGITS_MLP_BASELINE, train_digits
from .regression import REGRESSION_BASELINE, target_variance, train_regression
from .runs import RunResult
from .sequence import SEQUENCE_BASELINE, series, train_sequence
from .tabular_mlp import BC_MLP_BASELINE, train_bc_mlp
from .text_bow import TEXT_LOGREG_BASELINE, TEXT_NB_BASELINE, majority_share, train_text

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
            functools.partial(train_classifier, "bc", "error"), _features("tabular", False, False)),
        ResearchEnvironment(
            "tabular-wine",
            "A standardised multinomial L2 logistic regression (C = 1, lbfgs) on scikit-learn's wine data "
            "(178 wines, 3 cultivars, 13 chemical measurements); metric: cross-entropy of the predicted class "
            "probabilities pooled over 2 repeats of stratified 5-fold cross-validation.",
            "cross-validated log-loss (nats)", "loss", math.log(3), WINE_BASELINE,
            functools.partial(train_classifier, "wine", "log_loss"),
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
        ResearchEnvironment(
            "seq-threshold",
            "The same lag-window ridge recipe as seq-ar on a synthetic threshold autoregression whose dynamics "
            "switch with the sign of the last value (800 steps, a fresh realisation per seed); metric: test mean "
            "squared error on the last 30% of the windows.",
            "test MSE", "loss", float(series("threshold", 0).var()), SEQUENCE_BASELINE,
            functools.partial(train_sequence, "threshold"), _features("sequence", False, True), budget="one fit"),
        ResearchEnvironment(
            "clf-moons",
            "A standardised L2 logistic regression (C = 1, lbfgs) on scikit-learn's make_moons (500 points, "
            "noise 0.3, drawn once): two interleaved half circles a straight boundary cannot separate; metric: "
            "error rate pooled over 2 repeats of stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("moons"), LOGREG_BASELINE,
            functools.partial(train_classifier, "moons", "error"), _features("tabular", False, False), budget=_CV),
        ResearchEnvironment(
            "clf-sparse",
            "A standardised L2 logistic regression (C = 1, lbfgs) on scikit-learn's make_classification (400 "
            "rows, 50 features of which 5 informative and 5 redundant, 5% flipped labels, drawn once); metric: "
            "cross-entropy of the predicted probabilities pooled over 2 repeats of stratified 5-fold "
            "cross-validation.",
            "cross-validated log-loss (nats)", "loss", math.log(2), LOGREG_BASELINE,
            functools.partial(train_classifier, "sparse", "log_loss"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "clf-circles",
            "An RBF support vector machine (C = 1, gamma 'scale', standardised inputs) on scikit-learn's "
            "make_circles (500 points, a noisy ring around a disc, drawn once); metric: error rate pooled over "
            "2 repeats of stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("circles"), SVM_BASELINE,
            functools.partial(train_classifier, "circles", "error"), _features("tabular", False, False), budget=_CV),
        ResearchEnvironment(
            "clf-hastie",
            "Gradient boosting (30 trees of depth 2, learning rate 0.1) on scikit-learn's make_hastie_10_2 (400 "
            "rows, 10 Gaussian features; the class is whether their squared sum exceeds the chi-square median); "
            "metric: error rate pooled over 2 repeats of stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("hastie"), BOOSTING_BASELINE,
            functools.partial(train_classifier, "hastie", "error"), _features("tabular", False, False), budget=_CV),
        ResearchEnvironment(
            "knn-blobs",
            "k-nearest neighbours (k = 5, uniform weights, Euclidean, standardised inputs) on scikit-learn's "
            "make_classification (500 rows, 4 classes of two clusters each, 8 features, drawn once); metric: "
            "error rate pooled over 2 repeats of stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("blobs"), KNN_BASELINE,
            functools.partial(train_classifier, "blobs", "error"), _features("tabular", False, False), budget=_CV),
        ResearchEnvironment(
            "knn-digits",
            "The same k-nearest-neighbour recipe as knn-blobs (k = 5, standardised pixels) on scikit-learn's 8x8 "
            "digits (1,797 images); metric: error rate pooled over 2 repeats of stratified 5-fold "
            "cross-validation.",
            "cross-validated error rate", "error", class_share("digits"), KNN_BASELINE,
            functools.partial(train_classifier, "digits", "error"), _features("image", False, False), budget=_CV),
        ResearchEnvironment(
            "text-topics",
            "Multinomial naive Bayes (alpha 1) on word counts of a generated corpus (600 documents of 5-85 words "
            "over a 400-word Zipf vocabulary, 4 topics); metric: error rate pooled over 2 repeats of stratified "
            "5-fold cross-validation.",
            "cross-validated error rate", "error", majority_share("topics"), TEXT_NB_BASELINE,
            functools.partial(train_text, "topics", "error"), _features("text", False, False), budget=_CV),
        ResearchEnvironment(
            "text-spam",
            "An L2 logistic regression (C = 1) on TF-IDF weighted word counts of generated short messages (700 "
            "messages of 3-33 words over a 400-word Zipf vocabulary, a quarter positive, marked by a weak shift "
            "towards 30 words); metric: cross-entropy of the predicted probabilities pooled over 2 repeats of "
            "stratified 5-fold cross-validation.",
            "cross-validated log-loss (nats)", "loss", math.log(2), TEXT_LOGREG_BASELINE,
            functools.partial(train_text, "spam", "log_loss"), _features("text", False, True), budget=_CV),
        ResearchEnvironment(
            "regress-friedman3",
            "The same ridge regression recipe as regress-diabetes on scikit-learn's make_friedman3 (400 rows, the "
            "arctangent of a ratio of 4 features, noise 0.1, drawn once); metric: out-of-fold mean squared error "
            "pooled over 2 repeats of 5-fold cross-validation.",
            "cross-validated MSE", "loss", target_variance("friedman3"), REGRESSION_BASELINE,
            functools.partial(train_regression, "friedman3"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "regress-sparse",
            "The same ridge regression recipe as regress-diabetes on scikit-learn's make_regression (200 rows, 60 "
            "features of which 8 matter linearly, noise 20, drawn once); metric: out-of-fold mean squared error "
            "pooled over 2 repeats of 5-fold cross-validation.",
            "cross-validated MSE", "loss", target_variance("sparse"), REGRESSION_BASELINE,
            functools.partial(train_regression, "sparse"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "regress-friedman2",
            "The same ridge regression recipe as regress-diabetes on scikit-learn's make_friedman2 (400 rows, 4 "
            "features entering through the square root of a sum of a square and a squared product, noise 30, drawn "
            "once); metric: out-of-fold mean squared error pooled over 2 repeats of 5-fold cross-validation.",
            "cross-validated MSE", "loss", target_variance("friedman2"), REGRESSION_BASELINE,
            functools.partial(train_regression, "friedman2"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "regress-lowrank",
            "The same ridge regression recipe as regress-diabetes on scikit-learn's make_regression with a low "
            "effective rank (300 rows, 20 strongly collinear features of effective rank 4, 10 of them in the "
            "linear target, noise 5, drawn once); metric: out-of-fold mean squared error pooled over 2 repeats of "
            "5-fold cross-validation.",
            "cross-validated MSE", "loss", target_variance("lowrank"), REGRESSION_BASELINE,
            functools.partial(train_regression, "lowrank"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "regress-uncorrelated",
            "The same ridge regression recipe as regress-diabetes on scikit-learn's make_sparse_uncorrelated (300 "
            "rows, 10 independent Gaussian features of which 4 enter the target linearly, unit noise, drawn once); "
            "metric: out-of-fold mean squared error pooled over 2 repeats of 5-fold cross-validation.",
            "cross-validated MSE", "loss", target_variance("uncorrelated"), REGRESSION_BASELINE,
            functools.partial(train_regression, "uncorrelated"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "seq-chaos",
            "The same lag-window ridge recipe as seq-ar on a noisy logistic map (x_t = 3.8 x_{t-1} (1 - x_{t-1}) "
            "plus a little noise, kept inside (0, 1); 800 steps, a fresh realisation per seed): deterministic "
            "chaos; metric: test mean squared error on the last 30% of the windows.",
            "test MSE", "loss", float(series("chaos", 0).var()), SEQUENCE_BASELINE,
            functools.partial(train_sequence, "chaos"), _features("sequence", False, True), budget="one fit"),
        ResearchEnvironment(
            "seq-arma",
            "The same lag-window ridge recipe as seq-ar on a synthetic ARMA(1, 2) sequence (an autoregression "
            "on the last value plus moving-average terms of the last two shocks; 800 steps, a fresh realisation "
            "per seed); metric: test mean squared error on the last 30% of the windows.",
            "test MSE", "loss", float(series("arma", 0).var()), SEQUENCE_BASELINE,
            functools.partial(train_sequence, "arma"), _features("sequence", False, True), budget="one fit"),
        ResearchEnvironment(
            "seq-period7",
            "The same lag-window ridge recipe as seq-ar on a synthetic sequence with a 7-step season on top of "
            "an autoregression (800 steps, a fresh realisation per seed); metric: test mean squared error on the "
            "last 30% of the windows.",
            "test MSE", "loss", float(series("period7", 0).var()), SEQUENCE_BASELINE,
            functools.partial(train_sequence, "period7"), _features("sequence", False, True), budget="one fit"),
        ResearchEnvironment(
            "svm-moons",
            "An RBF support vector machine (C = 1, gamma 'scale', standardised inputs) on the same make_moons "
            "data as clf-moons (500 points, noise 0.3, drawn once); metric: error rate pooled over 2 repeats of "
            "stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("moons"), SVM_BASELINE,
            functools.partial(train_classifier, "moons", "error"), _features("tabular", False, False), budget=_CV),
        ResearchEnvironment(
            "svm-bc",
            "An RBF support vector machine (C = 1, gamma 'scale', standardised inputs) on scikit-learn's breast "
            "cancer data (569 tumours, 30 features); metric: error rate pooled over 2 repeats of stratified "
            "5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("bc"), SVM_BASELINE,
            functools.partial(train_classifier, "bc", "error"), _features("tabular", False, False), budget=_CV),
        ResearchEnvironment(
            "knn-wine",
            "k-nearest neighbours (k = 5, uniform weights, Euclidean, standardised inputs) on scikit-learn's wine "
            "data (178 wines, 3 cultivars, 13 chemical measurements on very different scales); metric: error rate "
            "pooled over 2 repeats of stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("wine"), KNN_BASELINE,
            functools.partial(train_classifier, "wine", "error"), _features("tabular", False, False), budget=_CV),
        ResearchEnvironment(
            "clf-quantiles",
            "A standardised L2 logistic regression (C = 1, lbfgs) on scikit-learn's make_gaussian_quantiles (400 "
            "points in 4 dimensions; the class is whether a point lies farther from the centre than the median, "
            "a boundary no hyperplane follows; drawn once); metric: error rate pooled over 2 repeats of "
            "stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("quantiles"), LOGREG_BASELINE,
            functools.partial(train_classifier, "quantiles", "error"), _features("tabular", False, False), budget=_CV),
        # round six: fourteen more, on data no environment used before or with another model family, to
        # strengthen the small groups (text, image) and give the experience verdict more targets
        ResearchEnvironment(
            "text-sentiment",
            "An L2 logistic regression (C = 1) on TF-IDF weighted word counts of generated reviews (800 reviews of "
            "20-120 words over a 400-word Zipf vocabulary, half positive; each leans by a random amount towards 40 "
            "positive or 40 negative words and a little towards the other set); metric: error rate pooled over 2 "
            "repeats of stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", majority_share("sentiment"), TEXT_LOGREG_BASELINE,
            functools.partial(train_text, "sentiment", "error"), _features("text", False, False), budget=_CV),
        ResearchEnvironment(
            "text-authors",
            "Multinomial naive Bayes (alpha 1) on word counts of a generated corpus of 5 authors (600 documents of "
            "30-150 words over a 400-word Zipf vocabulary; the authors share no topic words and differ only in how "
            "often they use each word, a log-normal factor of spread 0.35); metric: cross-entropy of the predicted "
            "probabilities pooled over 2 repeats of stratified 5-fold cross-validation.",
            "cross-validated log-loss (nats)", "loss", math.log(5), TEXT_NB_BASELINE,
            functools.partial(train_text, "authors", "log_loss"), _features("text", False, True), budget=_CV),
        ResearchEnvironment(
            "text-topics-lr",
            "An L2 logistic regression (C = 1) on TF-IDF weighted word counts of the text-topics corpus (600 "
            "documents, 4 topics); metric: cross-entropy of the predicted probabilities pooled over 2 repeats of "
            "stratified 5-fold cross-validation.",
            "cross-validated log-loss (nats)", "loss", math.log(4), TEXT_LOGREG_BASELINE,
            functools.partial(train_text, "topics", "log_loss"), _features("text", False, True), budget=_CV),
        ResearchEnvironment(
            "text-spam-nb",
            "Multinomial naive Bayes (alpha 1) on word counts of the text-spam messages (700 short messages, a "
            "quarter positive); metric: error rate pooled over 2 repeats of stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", majority_share("spam"), TEXT_NB_BASELINE,
            functools.partial(train_text, "spam", "error"), _features("text", False, False), budget=_CV),
        ResearchEnvironment(
            "knn-patches",
            "k-nearest neighbours (k = 5, standardised inputs) on 600 grey 8x8 patches cut once from scikit-learn's "
            "two sample photographs (a Chinese temple and a flower; 4 classes: the top or bottom half of either), "
            "each patch brought to mean 0 and unit spread so only texture tells them apart; metric: error rate "
            "pooled over 2 repeats of stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("patches"), KNN_BASELINE,
            functools.partial(train_classifier, "patches", "error"), _features("image", False, False), budget=_CV),
        ResearchEnvironment(
            "svm-patches",
            "An RBF support vector machine (C = 1, gamma 'scale', standardised inputs) on the knn-patches data (600 "
            "grey 8x8 texture patches of the two sample photographs, 4 classes); metric: error rate pooled over 2 "
            "repeats of stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("patches"), SVM_BASELINE,
            functools.partial(train_classifier, "patches", "error"), _features("image", False, False), budget=_CV),
        ResearchEnvironment(
            "logreg-patches",
            "A standardised multinomial L2 logistic regression (C = 1, lbfgs) on the knn-patches data (600 grey 8x8 "
            "texture patches of the two sample photographs, 4 classes); metric: error rate pooled over 2 repeats of "
            "stratified 5-fold cross-validation.",
            "cross-validated error rate", "error", class_share("patches"), LOGREG_BASELINE,
            functools.partial(train_classifier, "patches", "error"), _features("image", False, False), budget=_CV),
        ResearchEnvironment(
            "clf-iris",
            "A standardised multinomial L2 logistic regression (C = 1, lbfgs) on scikit-learn's iris data (150 "
            "flowers, 3 species, 4 measurements); metric: cross-entropy of the predicted class probabilities "
            "pooled over 2 repeats of stratified 5-fold cross-validation.",
            "cross-validated log-loss (nats)", "loss", math.log(3), LOGREG_BASELINE,
            functools.partial(train_classifier, "iris", "log_loss"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "regress-scurve",
            "The same ridge regression recipe as regress-diabetes on scikit-learn's make_s_curve (400 points on an "
            "S-shaped sheet in 3 dimensions with noise 0.3, drawn once): predict a point's position along the S from "
            "its coordinates, a non-linear, non-monotone map; metric: out-of-fold mean squared error pooled over 2 "
            "repeats of 5-fold cross-validation.",
            "cross-validated MSE", "loss", target_variance("scurve"), REGRESSION_BASELINE,
            functools.partial(train_regression, "scurve"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "regress-swissroll",
            "The same ridge regression recipe as regress-diabetes on scikit-learn's make_swiss_roll (400 points on "
            "a rolled-up sheet in 3 dimensions with noise 1, drawn once): predict a point's position along the roll "
            "from its coordinates; metric: out-of-fold mean squared error pooled over 2 repeats of 5-fold "
            "cross-validation.",
            "cross-validated MSE", "loss", target_variance("swissroll"), REGRESSION_BASELINE,
            functools.partial(train_regression, "swissroll"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "regress-linnerud",
            "The same ridge regression recipe as regress-diabetes on scikit-learn's linnerud data (20 middle-aged "
            "men): predict waist size from the chins, sit-ups and jumps each managed; 16 rows per fit, so variance "
            "dominates; metric: out-of-fold mean squared error pooled over 2 repeats of 5-fold cross-validation.",
            "cross-validated MSE", "loss", target_variance("linnerud"), REGRESSION_BASELINE,
            functools.partial(train_regression, "linnerud"), _features("tabular", False, True), budget=_CV),
        ResearchEnvironment(
            "seq-walk",
            "The same lag-window ridge recipe as seq-ar on a random walk with drift whose steps are autocorrelated "
            "(x_t = x_{t-1} + 0.05 + 0.5 (x_{t-1} - x_{t-2}) + e_t; 800 steps, a fresh realisation per seed): the "
            "test span lies outside the training range; metric: test mean squared error on the last 30% of the "
            "windows.",
            "test MSE", "loss", float(series("walk", 0).var()), SEQUENCE_BASELINE,
            functools.partial(train_sequence, "walk"), _features("sequence", False, True), budget="one fit"),
        ResearchEnvironment(
            "seq-twoseason",
            "The same lag-window ridge recipe as seq-ar on a synthetic sequence with a 12-step and a 5-step season "
            "on top of an autoregression (800 steps, a fresh realisation per seed); metric: test mean squared error "
            "on the last 30% of the windows.",
            "test MSE", "loss", float(series("twoseason", 0).var()), SEQUENCE_BASELINE,
            functools.partial(train_sequence, "twoseason"), _features("sequence", False, True), budget="one fit"),
        ResearchEnvironment(
            "seq-resonant",
            "The same lag-window ridge recipe as seq-ar on a lightly damped oscillation, a linear AR(2) whose roots "
            "lie near the unit circle (x_t = 1.8 x_{t-1} - 0.9 x_{t-2} + e_t, a quasi-period of about 20 steps; 800 "
            "steps, a fresh realisation per seed): the linear baseline already matches the process; metric: test "
            "mean squared error on the last 30% of the windows.",
            "test MSE", "loss", float(series("resonant", 0).var()), SEQUENCE_BASELINE,
            functools.partial(train_sequence, "resonant"), _features("sequence", False, True), budget="one fit"),
    ]
}

# kinds of task, for leave-one-group-out transfer: no group shares a dataset with another (a model family,
# a k-nearest-neighbour or a logistic regression, recurs across groups as it does across research areas)
ENVIRONMENT_GROUPS: dict[str, tuple[str, ...]] = {
    "text": ("charlm-pydoc", "charlm-stdlib", "text-topics", "text-spam", "text-sentiment", "text-authors",
             "text-topics-lr", "text-spam-nb"),
    "image": ("digits-mlp", "digits-cnn", "knn-digits", "knn-patches", "svm-patches", "logreg-patches"),
    "tabular-classification": ("tabular-bc", "tabular-wine", "bc-mlp", "clf-moons", "clf-sparse", "clf-circles",
                               "clf-hastie", "knn-blobs", "svm-moons", "svm-bc", "knn-wine", "clf-quantiles", "clf-iris"),
    "regression": ("regress-diabetes", "regress-friedman", "regress-friedman3", "regress-sparse", "regress-friedman2",
                   "regress-lowrank", "regress-uncorrelated", "regress-scurve", "regress-swissroll",
                   "regress-linnerud"),
    "sequence": ("seq-ar", "seq-season", "seq-threshold", "seq-chaos", "seq-arma", "seq-period7", "seq-walk", "seq-twoseason",
                 "seq-resonant"),
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
