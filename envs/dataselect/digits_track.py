"""The digits pool: scikit-learn's bundled 8x8 digits with injected, hidden corruptions.

The 1,797 images are split (by ``data_seed``) into a held-out test split (450), a clean base
split that trains the frozen base model (250) and the pool's source (the rest). Hidden factors
of pool rows: ``clean``; ``label_swap`` (systematic: 1->7, 3->8, 4->9, 5->6 on 30% of those
classes' rows); ``noisy`` (heavy pixel noise, 10% of rows); ``duplicate`` (near copies of rows of
classes 0 and 1, which also skews the class balance: 15% extra rows). The student is an MLP;
evaluation categories are the test images of confusable classes and of the others.
"""

from __future__ import annotations

import dataclasses

from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from .pool_spec import PoolSpec

__all__ = ["DigitsPool", "SWAPS", "DIGITS_CATEGORIES"]

SWAPS = {1: 7, 3: 8, 4: 9, 5: 6}
SWAP_SHARE, NOISY_SHARE, DUPLICATE_SHARE = 0.30, 0.10, 0.15
TEST_SIZE, BASE_SIZE = 450, 250
DIGITS_CATEGORIES = ("confusable", "other")
_CONFUSABLE = frozenset(SWAPS) | frozenset(SWAPS.values())


@dataclasses.dataclass(frozen=True)
class DigitsRecipe:
    """The fixed student recipe; all of it goes into the score cache key."""

    student: str = "digits-mlp/1"
    hidden: int = 128
    epochs: int = 150
    lr: float = 1e-2
    weight_decay: float = 1e-4


RECIPE = DigitsRecipe()


def _mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(64, RECIPE.hidden), nn.ReLU(), nn.Linear(RECIPE.hidden, 10))


def _train(x: np.ndarray, y: np.ndarray, seed: int, epochs: int = RECIPE.epochs,
           init: dict[str, torch.Tensor] | None = None) -> nn.Sequential:
    """The fixed recipe (``RECIPE``): full-batch Adam with weight decay, from ``init`` (a state
    dict: the base model's when fine-tuning) or from scratch."""
    torch.manual_seed(seed)
    model = _mlp()
    if init is not None:
        model.load_state_dict(init)
    optimizer = torch.optim.Adam(model.parameters(), lr=RECIPE.lr, weight_decay=RECIPE.weight_decay)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(epochs):
        loss = nn.functional.cross_entropy(model(xs), ys)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    return model


class DigitsPool:
    """Digits images with hidden corruptions; five groups of ``spec.group_size`` rows."""

    categories: tuple[str, ...] = DIGITS_CATEGORIES

    def __init__(self, spec: PoolSpec) -> None:
        from sklearn.datasets import load_digits

        self.spec = spec
        data = load_digits()
        pixels, labels = data.data.astype(np.float32), data.target.astype(np.int64)
        rng = np.random.default_rng([spec.data_seed, 0xD161])
        order = rng.permutation(len(labels))
        test, base, source = order[:TEST_SIZE], order[TEST_SIZE:TEST_SIZE + BASE_SIZE], order[TEST_SIZE + BASE_SIZE:]
        self._test_x, self._test_y = pixels[test] / 16.0, labels[test]
        self._base_x, self._base_y = pixels[base] / 16.0, labels[base]
        rows_x, rows_y, factors = [], [], []
        for i in source:
            x, y, factor = pixels[i].copy(), int(labels[i]), "clean"
            draw = rng.random()
            if y in SWAPS and draw < SWAP_SHARE:
                y, factor = SWAPS[y], "label_swap"
            elif draw > 1 - NOISY_SHARE:
                x, factor = np.clip(x + rng.normal(0, 6, 64), 0, 16).round(), "noisy"
            rows_x.append(x)
            rows_y.append(y)
            factors.append(factor)
        skewed = [i for i, y in enumerate(rows_y) if y in (0, 1) and factors[i] == "clean"]
        for _ in range(int(DUPLICATE_SHARE * len(source))):
            j = skewed[int(rng.integers(len(skewed)))]
            rows_x.append(np.clip(rows_x[j] + rng.integers(-1, 2, 64), 0, 16))
            rows_y.append(rows_y[j])
            factors.append("duplicate")
        keep = rng.permutation(len(rows_y))[:spec.size]
        self._x = np.stack([rows_x[i] for i in keep]).astype(np.float32)
        self._y = np.array([rows_y[i] for i in keep], dtype=np.int64)
        self.factors = [factors[i] for i in keep]
        self._base: nn.Sequential | None = None

    def __len__(self) -> int:
        return len(self._y)

    def item(self, row: int) -> dict[str, Any]:
        return {"row": int(row), "pixels": self._x[row].reshape(8, 8).astype(int).tolist(), "label": int(self._y[row])}

    def search_text(self, row: int) -> str:
        return f"label {int(self._y[row])}"

    def recipe_key(self) -> dict[str, Any]:
        return {**dataclasses.asdict(RECIPE), "start": f"base/{BASE_SIZE}"}

    def train_and_score(self, rows: Sequence[int], seed: int) -> dict[str, float]:
        torch.set_num_threads(1)
        rows_array = np.asarray(rows, dtype=np.int64)
        # students fine-tune the base model that base_losses/embed probe (as the paper fine-tunes the probed model)
        model = _train(self._x[rows_array] / 16.0, self._y[rows_array], seed, init=self._base_model().state_dict())
        with torch.no_grad():
            predicted = model(torch.from_numpy(self._test_x)).argmax(1).numpy()
        correct = predicted == self._test_y
        confusable = np.isin(self._test_y, list(_CONFUSABLE))
        scores = {"confusable": float(correct[confusable].mean()), "other": float(correct[~confusable].mean())}
        scores["score"] = float(np.mean([scores[c] for c in self.categories]))
        return scores

    def _base_model(self) -> nn.Sequential:
        if self._base is None:  # small enough to retrain per process (well under a second)
            self._base = _train(self._base_x, self._base_y, 0)
        return self._base

    def base_losses(self, rows: Sequence[int]) -> np.ndarray:
        rows_array = np.asarray(rows, dtype=np.int64)
        model = self._base_model()  # trained outside no_grad
        with torch.no_grad():
            logits = model(torch.from_numpy(self._x[rows_array] / 16.0))
            return nn.functional.cross_entropy(logits, torch.from_numpy(self._y[rows_array]), reduction="none").numpy()

    def embed(self, rows: Sequence[int]) -> np.ndarray:
        rows_array = np.asarray(rows, dtype=np.int64)
        model = self._base_model()
        with torch.no_grad():
            hidden = model[:2](torch.from_numpy(self._x[rows_array] / 16.0))
        return hidden.numpy()
