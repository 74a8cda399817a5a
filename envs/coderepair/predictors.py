"""Predictors of a candidate's public-test outcome from its features: logistic regression
(scikit-learn), a small torch MLP, gradient-boosted trees (scikit-learn), and the hand-set static
verifier."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol

import numpy as np

from .features import FEATURE_NAMES

__all__ = ["Predictor", "LogisticPredictor", "TorchPredictor", "BoostingPredictor", "StaticPredictor", "make_predictor",
           "PREDICTOR_KINDS"]


class Predictor(Protocol):
    def fit(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> "Predictor": ...

    def predict(self, X: np.ndarray) -> np.ndarray: ...


class StaticPredictor:
    """A logistic score with hand-set weights on the same features (capacity-matched, never fitted)."""

    WEIGHTS = {"parses": 1.0, "defines_entry": 1.0, "undefined_names": -1.5, "endless_loop": -2.0,
               "agreement": 1.0, "size_deviation": -1.0, "returns_none": -0.5, "known_failure": -2.0, "round": 0.0,
               "loads": 1.0, "public_raise": -3.0, "public_timeout": -3.0, "output_agreement": 2.0,
               "type_agreement": 0.5, "boundary_raise": -0.5, "output_cluster": 1.0}
    BIAS = -2.0

    def fit(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> "StaticPredictor":
        return self  # never updated

    def predict(self, X: np.ndarray) -> np.ndarray:
        weights = np.array([self.WEIGHTS[name] for name in FEATURE_NAMES])
        return 1.0 / (1.0 + np.exp(-(X @ weights + self.BIAS)))


class _ScikitPredictor(ABC):
    """A scikit-learn classifier's probability of the positive class, or the smoothed rate of the
    one class seen when the labels hold only one (scikit-learn refuses to fit those)."""

    def __init__(self) -> None:
        self._model: Any = None
        self._constant: float | None = None

    @abstractmethod
    def _estimator(self) -> Any:
        """A fresh, unfitted scikit-learn classifier with ``predict_proba``."""

    def fit(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> "_ScikitPredictor":
        if len(np.unique(y)) < 2:  # one class only: predict its (smoothed) rate
            self._constant = float((np.sum(w * y) + 1) / (np.sum(w) + 2))
            return self
        self._model = self._estimator().fit(X, y, sample_weight=w)
        self._constant = None
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        if self._constant is not None:
            return np.full(len(X), self._constant)
        if self._model is None:
            raise RuntimeError("predict before fit")
        return self._model.predict_proba(X)[:, 1]


class LogisticPredictor(_ScikitPredictor):
    """L2-regularised logistic regression (scikit-learn), weighted by inverse propensity."""

    def __init__(self, C: float = 1.0) -> None:
        super().__init__()
        self.C = C

    def _estimator(self) -> Any:
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=self.C, max_iter=500)


class TorchPredictor:
    """A one-hidden-layer MLP trained with weighted binary cross-entropy (full batch, Adam)."""

    def __init__(self, hidden: int = 16, epochs: int = 300, lr: float = 0.02, weight_decay: float = 1e-3,
                 seed: int = 0) -> None:
        self.hidden, self.epochs, self.lr, self.weight_decay, self.seed = hidden, epochs, lr, weight_decay, seed
        self._net: Any = None

    def fit(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> "TorchPredictor":
        import torch

        generator = torch.Generator().manual_seed(self.seed)
        net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], self.hidden), torch.nn.Tanh(), torch.nn.Linear(self.hidden, 1))
        with torch.no_grad():
            for p in net.parameters():
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
        inputs = torch.as_tensor(X, dtype=torch.float32)                 # (N, F)
        targets = torch.as_tensor(y, dtype=torch.float32)                # (N,)
        weights = torch.as_tensor(w / np.mean(w), dtype=torch.float32)   # (N,)
        optimiser = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        for _ in range(self.epochs):
            optimiser.zero_grad()
            logits = net(inputs).squeeze(-1)                             # (N,)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, targets, weight=weights)
            loss.backward()
            optimiser.step()
        self._net = net
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        import torch

        if self._net is None:
            raise RuntimeError("predict before fit")
        with torch.no_grad():
            return torch.sigmoid(self._net(torch.as_tensor(X, dtype=torch.float32)).squeeze(-1)).numpy().astype(float)


class BoostingPredictor(_ScikitPredictor):
    """Gradient-boosted trees (scikit-learn's histogram boosting): a non-linear world model that can
    learn interactions (e.g. "outputs agree *and* the agreeing group is large")."""

    def __init__(self, max_iter: int = 150, max_depth: int = 3, learning_rate: float = 0.1, seed: int = 0) -> None:
        super().__init__()
        self.max_iter, self.max_depth, self.learning_rate, self.seed = max_iter, max_depth, learning_rate, seed

    def _estimator(self) -> Any:
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(max_iter=self.max_iter, max_depth=self.max_depth,
                                              learning_rate=self.learning_rate, random_state=self.seed)


PREDICTOR_KINDS = ("logistic", "torch", "boosting")


def make_predictor(kind: str, seed: int = 0) -> Predictor:
    """``logistic``, ``torch``, ``boosting`` or ``static``."""
    if kind == "boosting":
        return BoostingPredictor(seed=seed)
    if kind == "logistic":
        return LogisticPredictor()
    if kind == "torch":
        return TorchPredictor(seed=seed)
    if kind == "static":
        return StaticPredictor()
    raise ValueError(f"unknown predictor {kind!r}; expected logistic, torch, boosting or static")
