"""What a data-selection pool is (``PoolSpec``, the ``DataPool`` interface), owned apart from the
pools' loader (``pools``) so that the two tracks import this and the loader imports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

__all__ = ["DataPool", "PoolSpec", "POOL_NAMES", "DATA_VERSION"]

POOL_NAMES = ("function_calling", "digits")
DATA_VERSION = 3
"""Part of every score's cache key: bump it when a pool's items or its evaluation set change
(2: evaluation ask / no-call items made disjoint from the pool too; 3: function-calling
evaluation from held-out templates and paraphrases, students fine-tune the base model)."""


@dataclass(frozen=True)
class PoolSpec:
    """Sizes and seeds of a pool. ``group_size`` rows per submitted group (five groups)."""

    name: str = "function_calling"
    size: int = 10_000
    group_size: int = 1_000
    eval_per_category: int = 200
    data_seed: int = 0

    def key(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "eval": self.eval_per_category, "seed": self.data_seed,
                "data": DATA_VERSION}


class DataPool(Protocol):
    """The interface the env and the benchmark use."""

    spec: PoolSpec
    factors: list[str]           # hidden, one per row
    categories: tuple[str, ...]  # evaluation categories

    def __len__(self) -> int: ...

    def item(self, row: int) -> dict[str, Any]: ...  # the visible JSON of a row

    def search_text(self, row: int) -> str: ...

    def recipe_key(self) -> dict[str, Any]: ...

    def train_and_score(self, rows: Sequence[int], seed: int) -> dict[str, float]: ...

    def base_losses(self, rows: Sequence[int]) -> np.ndarray: ...

    def embed(self, rows: Sequence[int]) -> np.ndarray: ...
