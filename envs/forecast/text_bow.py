"""Bag-of-words text classification on generated corpora (``text-topics``, ``text-spam``,
``text-topics-lr``, ``text-spam-nb``, ``text-sentiment``, ``text-authors``).

No corpus is downloaded: documents are drawn once (fixed ``random_state``) from a topic model over a
400-word vocabulary whose background frequencies follow Zipf's law, as word counts do in real text.
``topics``: 600 documents of 5-85 words from 4 topics; each class mixes its own topic's words
(Dirichlet 0.05 over the vocabulary, a third of the mass) into the background, and a fifth of each
document comes from another random topic. ``spam``: 700 short messages (3-33 words), a quarter of
them positive, whose signal is a weak shift towards 30 indicative words. ``sentiment``: 800 reviews (20-120 words), half positive, each leaning
by a random amount towards 40 words of its side and by half as much towards the other side's 40.
``authors``: 600 documents (30-150 words) by 5 authors with no topic words, who differ only in a
log-normal factor (spread 0.35) on each word's frequency, as function-word style does. Counts are a sparse
matrix; the recipe's extra steps (``weighting``: raw counts, binary presence, TF-IDF or sublinear
TF-IDF; ``select_k``: keep the k words with the highest chi-square score on the training fold) run
inside each fold, then ``sklearn_recipe`` fits and scores the model.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .runs import RunResult
from .sklearn_recipe import SKLEARN_KNOBS, classifier, cross_validated, errors, log_loss, pipeline

__all__ = ["TEXT_NB_BASELINE", "TEXT_LOGREG_BASELINE", "train_text", "majority_share", "VOCABULARY"]

VOCABULARY = 400
_TEXT: dict[str, Any] = {
    "weighting": "counts", "select_k": 0, "scaler": "none", "nb_alpha": 1.0, "C": 1.0, "penalty": "l2",
    "solver": "lbfgs", "max_iter": 200, "class_weight": "none", "n_neighbors": 5, "n_estimators": 30,
    "max_depth": 0, "learning_rate": 0.1, **SKLEARN_KNOBS,
}
TEXT_NB_BASELINE: dict[str, Any] = {**_TEXT, "model": "multinomial_nb"}
TEXT_LOGREG_BASELINE: dict[str, Any] = {**_TEXT, "model": "logreg", "weighting": "tfidf"}


def _background(rng: np.random.Generator) -> np.ndarray:
    zipf = 1.0 / np.arange(1, VOCABULARY + 1)
    return rng.permutation(zipf / zipf.sum())                              # (V,)


@functools.lru_cache(maxsize=None)
def _corpus(name: str) -> tuple[Any, np.ndarray]:
    from scipy import sparse
    if name not in ("topics", "spam", "sentiment", "authors"):
        raise ValueError(f"unknown corpus {name!r}")
    rng = np.random.default_rng({"topics": 101, "spam": 202, "sentiment": 303, "authors": 404}[name])
    background = _background(rng)
    if name == "topics":
        topics = rng.dirichlet(np.full(VOCABULARY, 0.05), size=4)            # (K, V)
        words = 0.67 * background + 0.33 * topics                            # (K, V)
        labels = rng.integers(0, 4, 600)
        lengths = rng.integers(5, 86, 600)
        rows = [rng.multinomial(n, 0.8 * words[k] + 0.2 * words[rng.integers(0, 4)]) for k, n in zip(labels, lengths)]
    elif name == "spam":
        indicative = rng.choice(VOCABULARY, 30, replace=False)
        shifted = background.copy()
        shifted[indicative] += 0.004
        shifted /= shifted.sum()
        labels = (rng.random(700) < 0.25).astype(int)
        lengths = rng.integers(3, 34, 700)
        rows = [rng.multinomial(n, shifted if k else background) for k, n in zip(labels, lengths)]
    elif name == "sentiment":      # two opposed sets of 40 words; each review leans one way, with noise
        positive, negative = rng.choice(VOCABULARY, (2, 40), replace=False)
        labels = rng.integers(0, 2, 800)
        lengths = rng.integers(20, 121, 800)
        rows = []
        for k, n in zip(labels, lengths):
            lean = background.copy()
            lean[positive if k else negative] += rng.uniform(0.0, 0.006)
            lean[negative if k else positive] += rng.uniform(0.0, 0.003)
            rows.append(rng.multinomial(n, lean / lean.sum()))
    else:                           # authors: 5 writers who differ only in how often they use common words
        labels = rng.integers(0, 5, 600)
        lengths = rng.integers(30, 151, 600)
        styles = background * np.exp(rng.normal(0.0, 0.35, (5, VOCABULARY)))         # (5, V)
        styles /= styles.sum(axis=1, keepdims=True)
        rows = [rng.multinomial(n, styles[k]) for k, n in zip(labels, lengths)]
    return sparse.csr_matrix(np.array(rows, dtype=float)), labels           # (N, V) counts


def majority_share(name: str) -> float:
    """The error rate of always predicting the majority class."""
    labels = _corpus(name)[1]
    return 1.0 - float(np.bincount(labels).max()) / len(labels)


def _first_steps(cfg: dict[str, Any]) -> tuple[Any, ...]:
    from sklearn import feature_extraction, feature_selection, preprocessing
    steps: list[Any] = []
    if int(cfg["select_k"]) > 0:
        steps.append(feature_selection.SelectKBest(feature_selection.chi2, k=int(cfg["select_k"])))
    weighting = cfg["weighting"]
    if weighting == "binary":
        steps.append(preprocessing.Binarizer())
    elif weighting in ("tfidf", "sublinear_tfidf"):
        steps.append(feature_extraction.text.TfidfTransformer(sublinear_tf=weighting == "sublinear_tfidf"))
    elif weighting != "counts":
        raise ValueError(f"unknown weighting {weighting!r}")
    return tuple(steps)


def train_text(corpus: str, metric: str, cfg: dict[str, Any], seed: int) -> RunResult:
    """Pooled ``metric`` (``error`` or ``log_loss``) over repeated stratified 5-fold CV set by ``seed``."""
    x, y = _corpus(corpus)
    probabilistic = metric == "log_loss"
    estimator = pipeline(cfg, classifier(cfg, seed, probability=probabilistic), first=_first_steps(cfg))
    score = log_loss(int(y.max()) + 1) if probabilistic else errors
    return cross_validated(x, y, estimator, cfg, seed, score=score, stratified=True)
