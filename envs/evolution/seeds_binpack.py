"""Hand-written seed programs for ``bin_packing_online``: ``priority(item, bins) -> scores``.

``bins`` holds the remaining capacities of the bins the item fits in (the last entry is an empty
bin); the item goes to the bin with the highest score. ``first_fit`` (a poor start) is the
initial program; the others, of varied quality, are the library block crossover draws from.
"""

from __future__ import annotations

__all__ = ["BINPACK_SEEDS"]

_FIRST_FIT = '''
import numpy as np


def score_fit(item, bins):
    """Earlier (lower-index) bins first: first fit. The room left is ignored (weight 0)."""
    order = -np.arange(len(bins), dtype=float)
    left = bins - item
    return 1.0 * order + 0.0 * left


def priority(item, bins):
    return score_fit(item, bins)
'''

_BEST_FIT = '''
import numpy as np


def score_fit(item, bins):
    """The tightest fit wins: best fit."""
    return -(bins - item)


def priority(item, bins):
    return score_fit(item, bins)
'''

_WORST_FIT = '''
import numpy as np


def score_fit(item, bins):
    """The emptiest bin wins: worst fit."""
    return bins - item


def priority(item, bins):
    return score_fit(item, bins)
'''

_SHAPED = '''
import numpy as np


def score_fit(item, bins):
    """Prefer tight fits, but avoid leaving a sliver no later item can use."""
    left = bins - item
    score = -left
    score = np.where((left > 0) & (left < 8), score - 20.0, score)
    return score


def penalty_new(item, bins):
    """Opening a new bin (the last, full one) costs a constant."""
    extra = np.zeros(len(bins))
    extra[-1] = -5.0
    return extra


def priority(item, bins):
    return score_fit(item, bins) + penalty_new(item, bins)
'''

_RATIO = '''
import numpy as np


def score_fit(item, bins):
    """Fill ratio after placing the item, squared, with a bonus for an exact fit."""
    fill = item / bins
    score = fill ** 2
    score = np.where(bins - item == 0, score + 1.0, score)
    return score


def priority(item, bins):
    return score_fit(item, bins)
'''

BINPACK_SEEDS: dict[str, str] = {"first_fit": _FIRST_FIT.lstrip(), "best_fit": _BEST_FIT.lstrip(),
                                 "worst_fit": _WORST_FIT.lstrip(), "shaped": _SHAPED.lstrip(),
                                 "ratio": _RATIO.lstrip()}
