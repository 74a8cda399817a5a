"""The airline task catalogue: every template's drafts, spread evenly so both splits see every template."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
import numpy as np

from ...domain import TaskDraft
from . import templates_bookings as bookings
from . import templates_changes as changes
from . import templates_policy as policy
from .drafting import Snapshot

__all__ = ["generate_tasks", "TEMPLATE_COUNTS"]

# (template function, keyword arguments, drafts wanted), in a fixed order: each template draws
# from its own generator, so changing one template never reshuffles the others.
TEMPLATE_COUNTS: tuple[tuple[Callable[..., list[TaskDraft]], dict[str, bool], int], ...] = (
    (bookings.book_one_way, {}, 22),
    (bookings.book_one_stop, {}, 8),
    (changes.change_flight, {}, 16),
    (changes.upgrade_cabin, {}, 14),
    (changes.upgrade_cabin, {"with_bags": True}, 6),
    (changes.add_baggage, {}, 14),
    (changes.add_baggage, {"refused_change": True}, 6),
    (changes.update_passenger, {}, 6),
    (policy.cancel_eligible, {}, 16),
    (policy.compensation, {}, 10),
    (policy.compensation, {"cancel_too": True}, 6),
    (policy.refuse_change_basic_economy, {}, 10),
    (policy.refuse_cancel, {}, 10),
    (policy.refuse_compensation, {}, 6),
)


def generate_tasks(db: sqlite3.Connection, seed: int) -> list[TaskDraft]:
    """Draft the airline tasks for ``db`` (read only), deterministically in ``seed``.

    Args:
        db: The database of ``DB_SEED``; gold actions are replayed on copies, never on it.
        seed: Seed of the template generators.

    Returns:
        The drafts, each template spread evenly over the list (its first half becomes train).
    """
    snap = Snapshot.of(db)
    per_template = [template(snap, np.random.default_rng([seed, index]), count, **options)
                    for index, (template, options, count) in enumerate(TEMPLATE_COUNTS)]
    # each draft sits at its fractional position within its template, so every template spreads
    # evenly over the catalogue and the first-half train split takes about half of each
    order = sorted(((i + 0.5) / len(drafts), t, i) for t, drafts in enumerate(per_template) for i in range(len(drafts)))
    return [per_template[t][i] for _, t, i in order]
