"""``bin_packing_noisy``: online bin packing scored through a noisy evaluator.

The paper's partial-versus-full problem is noisy: a partial evaluation on a few instances can
rank candidates differently from the full one. This task is ``bin_packing_online`` (same
instances, harness, partial subset and host-side check) with measurement noise added to each
instance's excess-bins percentage, Gaussian with standard deviation ``noise_sd`` percentage
points. So a partial score (mean of ``partial_instances`` noisy values) is noisier than the full
score (mean of all), and the two can disagree on which candidate is better.

The noise is fixed per candidate: the generator of instance ``i`` is seeded by a SHA-256 of
``noise_seed``, ``i`` and the candidate's returned assignment for that instance, so
re-evaluating the same candidate (or a behaviourally identical one) gives the same score, a
``rest`` evaluation merged with a ``partial`` one equals the ``full`` evaluation, and on-disk
caching stays valid. A different ``noise_seed`` gives an independent draw of the noise.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .bin_packing import BinPackingTask
from .task_base import EvalResult, register_task

__all__ = ["NoisyBinPackingTask", "instance_noise"]


def instance_noise(noise_seed: int, index: int, assignment: str, sd: float) -> float:
    """The fixed noise of one instance's result: N(0, sd) seeded by (noise_seed, index, assignment)."""
    digest = hashlib.sha256(f"{noise_seed}:{index}:{assignment}".encode()).digest()
    return float(np.random.default_rng(int.from_bytes(digest[:8], "little")).normal(0.0, sd))


class NoisyBinPackingTask(BinPackingTask):
    """Online bin packing with per-instance, per-candidate fixed evaluation noise (see the module docstring)."""

    name = "bin_packing_noisy"

    def __init__(self, noise_sd: float = 1.0, noise_seed: int = 0, **params: Any) -> None:
        super().__init__(**params)
        if not noise_sd >= 0:
            raise ValueError(f"noise_sd must be >= 0, got {noise_sd}")
        self.noise_sd, self.noise_seed = float(noise_sd), int(noise_seed)
        self.description = BinPackingTask.description + (
            f" Scores are measured with noise (sd {self.noise_sd:g} percentage points per instance), so partial "
            "scores, on fewer instances, are noisier than full ones.")

    def spec(self) -> dict[str, Any]:
        return {**super().spec(), "name": self.name, "noise_sd": self.noise_sd, "noise_seed": self.noise_seed}

    def score(self, kind: str, payload: dict[str, Any]) -> EvalResult:
        result = super().score(kind, payload)
        if not result.ok or self.noise_sd == 0:
            return result
        first = int(result.details["first"])
        noisy = [value + instance_noise(self.noise_seed, first + j, str(text), self.noise_sd)
                 for j, (value, text) in enumerate(zip(result.details["excess_pct"], payload["assignments"]))]
        return EvalResult(kind, -float(np.mean(noisy)), "", result.cost, {**result.details, "excess_pct": noisy})


register_task(NoisyBinPackingTask.name)(NoisyBinPackingTask)
