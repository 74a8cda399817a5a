"""The number HyperparamSearch-v0 shows for a diverged trial, owned here so that the env and the
trial runner (``training``, which imports torch) share it without importing each other."""

from __future__ import annotations

__all__ = ["NRMSE_CAP"]

NRMSE_CAP = 10.0  # shown for a diverged trial; keeps every observation finite
