"""Seeded draws of valid JSON-Schema instances; the sampler lives in the kernel (``rsigym.json_space``),
where env action spaces use it too. Kept here so existing imports keep working."""

from __future__ import annotations

from rsigym.json_space import sample_instance

__all__ = ["sample_instance"]
