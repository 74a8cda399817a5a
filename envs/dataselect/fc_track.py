"""The function-calling pool: generated items, the hidden evaluation, the student and the base model."""

from __future__ import annotations

import io
import json
from typing import Any, Sequence

import numpy as np
import torch

from rsigym.cache import atomic_write_bytes, cache_dir, cache_key

from .fc_eval import EVAL_CATEGORIES, generate_eval
from .fc_pool import generate_base_pool, generate_pool
from .fc_student import FcRecipe, FcStudent, encode_items, item_correct, label_losses, predict, train_student
from .pool_spec import PoolSpec

__all__ = ["FunctionCallingPool", "BASE_POOL_SIZE"]

BASE_POOL_SIZE = 3000
BASE_VERSION = "dataselect-fc-base/2"
"""Part of the base model's cache key and of every student's: bump it when the base pool changes."""


class FunctionCallingPool:
    """BFCL-like function-calling items over the retail and airline tool schemas."""

    categories: tuple[str, ...] = EVAL_CATEGORIES

    def __init__(self, spec: PoolSpec, recipe: FcRecipe | None = None) -> None:
        self.spec = spec
        self.recipe = recipe or FcRecipe()
        self.items, self.factors = generate_pool(spec.size, spec.data_seed)
        # The evaluation: held-out templates and paraphrases (fc_eval), a separate seed, checked
        # disjoint from the pool by (tool, arguments) and by normalised request text.
        self._eval_items, self._eval_categories = generate_eval(spec.eval_per_category, spec.data_seed + 10_007, self.items)
        self._encoded = encode_items(self.items)
        self._eval_encoded = encode_items(self._eval_items)
        self._base: FcStudent | None = None

    def __len__(self) -> int:
        return len(self.items)

    def item(self, row: int) -> dict[str, Any]:
        item = self.items[row]
        return {"row": int(row), "domain": item["domain"], "tools": list(item["tools"]),
                "history": item["history"], "request": item["request"], "target": item["target"]}

    def search_text(self, row: int) -> str:
        return json.dumps(self.item(row)).lower()

    def recipe_key(self) -> dict[str, Any]:
        # students fine-tune the base model (the one base_losses/embed probe), so it is part of the key
        return {**self.recipe.key(), "start": f"{BASE_VERSION}/{BASE_POOL_SIZE}"}

    def train_and_score(self, rows: Sequence[int], seed: int) -> dict[str, float]:
        """Fine-tune the base model (the model ``base_losses``/``embed`` expose) on ``rows`` with
        the fixed recipe and student seed ``seed``; accuracy per evaluation category."""
        torch.set_num_threads(1)
        model = train_student(self._encoded, rows, seed, self.recipe, init=self.base_model().state_dict())
        predictions = predict(model, self._eval_encoded)
        correct = np.array([item_correct(p, item["target"]) for p, item in zip(predictions, self._eval_items)])
        categories = np.array(self._eval_categories)
        scores = {c: float(correct[categories == c].mean()) for c in self.categories}
        scores["score"] = float(np.mean([scores[c] for c in self.categories]))
        return scores

    # -- the frozen base model ----------------------------------------------------------------
    def base_model(self) -> FcStudent:
        """The student architecture trained once on a disjoint pool of correctly labelled items of
        every skill (``fc_pool.BASE_SHARES``; cached): probed by ``base_losses``/``embed``, and the
        starting point of every student."""
        if self._base is None:
            key = cache_key(BASE_VERSION, BASE_POOL_SIZE, self.spec.data_seed, self.recipe.key())
            path = cache_dir("dataselect", "base") / f"{key}.pt"
            model = FcStudent(self.recipe)
            if path.exists():
                model.load_state_dict(torch.load(path, weights_only=True))
            else:
                torch.set_num_threads(1)
                base_items = generate_base_pool(BASE_POOL_SIZE, self.spec.data_seed + 20_011)
                model = train_student(encode_items(base_items), range(BASE_POOL_SIZE), 0, self.recipe)
                buffer = io.BytesIO()
                torch.save(model.state_dict(), buffer)
                atomic_write_bytes(path, buffer.getvalue())
            model.eval()
            self._base = model
        return self._base

    def base_losses(self, rows: Sequence[int]) -> np.ndarray:
        losses, _ = label_losses(self.base_model(), self._encoded, rows)
        return losses

    def embed(self, rows: Sequence[int]) -> np.ndarray:
        _, embeddings = label_losses(self.base_model(), self._encoded, rows)
        return embeddings

    def base_predictions(self, rows: Sequence[int]) -> list[dict[str, Any]]:
        return predict(self.base_model(), self._encoded, rows)

    def eval_items(self) -> tuple[list[dict[str, Any]], list[str]]:
        """The hidden evaluation (for tests and the benchmark; never shown to the agent)."""
        return self._eval_items, self._eval_categories
