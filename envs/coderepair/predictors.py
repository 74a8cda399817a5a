"""Predictors of a candidate's public-test outcome from its features: the static verifier plus a
learned correction (``offset``, the default world model), logistic regression (scikit-learn), a
small torch MLP, gradient-boosted trees (scikit-learn), and the hand-set static verifier."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol

import numpy as np

from .features import FEATURE_NAMES

__all__ = ["Predictor", "OffsetLogisticPredictor", "LogisticPredictor", "TorchPredictor", "BoostingPredictor", "StaticPredictor", "make_predictor",
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

    def logit(self, X: np.ndarray) -> np.ndarray:
        weights = np.array([self.WEIGHTS[name] for name in FEATURE_NAMES])
        return X @ weights + self.BIAS                                   # (N,)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.logit(X)))


class OffsetLogisticPredictor:
    """The static verifier's logit as a fixed offset plus a learned linear correction ``x . beta + b``.

    Fitted by weighted (inverse-propensity) log-likelihood with an L2 penalty ``l2 / 2 * (|beta|^2 +
    0.1 b^2)`` that pulls the correction to 0 (the intercept, a recalibration that keeps static's
    ranking, less), weights rescaled to mean 1 so the penalty counts as ``l2``
    rows of evidence for "no change". Unfitted, or fitted on no rows, it predicts exactly the static
    scores; with few rows it moves little; with many consistent rows it can reverse a static weight.
    The loss is convex (a penalised logistic likelihood), minimised by L-BFGS with its closed-form
    gradient.
    """

    def __init__(self, l2: float = 0.3, slopes: bool = True) -> None:
        self.l2, self.slopes = l2, slopes
        self.coef = np.zeros(len(FEATURE_NAMES))
        self.intercept = 0.0

    def fit(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> "OffsetLogisticPredictor":
        from scipy.optimize import minimize

        if len(y) == 0:
            self.coef, self.intercept = np.zeros(X.shape[1]), 0.0
            return self
        offset = StaticPredictor().logit(X)                              # (N,)
        # without slopes only the intercept moves: a recalibration that keeps static's ranking
        design = np.concatenate([X if self.slopes else np.zeros_like(X), np.ones((len(X), 1))], axis=1)  # (N, F + 1)
        weights = w / np.mean(w)                                         # (N,)
        # the intercept (a recalibration that keeps static's ranking) is penalised 10 times less
        penalty = np.r_[np.full(X.shape[1], self.l2), 0.1 * self.l2]     # (F + 1,)

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            z = offset + design @ theta                                  # (N,)
            # log(1 + e^z) - y z, written stably
            nll = float(np.sum(weights * (np.logaddexp(0.0, z) - y * z)))
            residual = weights * (1.0 / (1.0 + np.exp(-z)) - y)          # (N,)
            return nll + 0.5 * float(theta @ (penalty * theta)), design.T @ residual + penalty * theta

        result = minimize(loss, np.zeros(design.shape[1]), jac=True, method="L-BFGS-B")
        self.coef, self.intercept = result.x[:-1], float(result.x[-1])
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        z = StaticPredictor().logit(X) + X @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))


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
        from threadpoolctl import threadpool_limits

        # One OpenMP thread in this process from now on: a prediction of 4 rows runs 150 tiny
        # parallel regions whose thread hand-offs, with the runner's workers on every core, cost
        # 0.46 s per call (measured, load about 10 on 2 cores) against 2 ms alone. The fitted trees
        # and their predictions do not depend on the thread count.
        threadpool_limits(1, user_api="openmp")
        return HistGradientBoostingClassifier(max_iter=self.max_iter, max_depth=self.max_depth,
                                              learning_rate=self.learning_rate, random_state=self.seed)


PREDICTOR_KINDS = ("offset", "logistic", "torch", "boosting")


def make_predictor(kind: str, seed: int = 0) -> Predictor:
    """``offset``, ``logistic``, ``torch``, ``boosting``, ``static`` or ``recalibrated`` (static's logit
    plus a fitted intercept only: its ranking is static's)."""
    if kind == "offset":
        return OffsetLogisticPredictor()
    if kind == "recalibrated":
        return OffsetLogisticPredictor(slopes=False)
    if kind == "boosting":
        return BoostingPredictor(seed=seed)
    if kind == "logistic":
        return LogisticPredictor()
    if kind == "torch":
        return TorchPredictor(seed=seed)
    if kind == "static":
        return StaticPredictor()
    raise ValueError(f"unknown predictor {kind!r}; expected offset, logistic, torch, boosting, static or recalibrated")
