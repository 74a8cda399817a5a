"""Hand-written seed programs for ``circle_packing_26``, of deliberately varied quality.

Each splits into ``place()`` (centres) and ``radii_for(centres)`` (the largest radii it finds for
them), so block crossover can combine one seed's placement with another's radius rule. ``rings``
is the initial program of every episode (about 0.96); the others are the library crossover draws
blocks from.
"""

from __future__ import annotations

__all__ = ["CIRCLE_SEEDS"]

_RINGS = '''
import numpy as np


def place():
    """A centre circle, a ring of 8 and a ring of 17, pulled inside the square."""
    centres = [[0.5, 0.5]]
    for k in range(8):
        angle = 2 * np.pi * k / 8
        centres.append([0.5 + 0.3 * np.cos(angle), 0.5 + 0.3 * np.sin(angle)])
    for k in range(17):
        angle = 2 * np.pi * k / 17
        centres.append([0.5 + 0.7 * np.cos(angle), 0.5 + 0.7 * np.sin(angle)])
    return np.clip(np.array(centres), 0.01, 0.99)


def radii_for(centres):
    """Start at the distance to the border, then shrink each overlapping pair in proportion."""
    n = len(centres)
    radii = np.minimum(np.minimum(centres[:, 0], 1 - centres[:, 0]), np.minimum(centres[:, 1], 1 - centres[:, 1]))
    for i in range(n):
        for j in range(i + 1, n):
            d = np.sqrt(np.sum((centres[i] - centres[j]) ** 2))
            if radii[i] + radii[j] > d:
                scale = d / (radii[i] + radii[j])
                radii[i] *= scale
                radii[j] *= scale
    return radii


def pack():
    centres = place()
    return centres, radii_for(centres)
'''

_GRID = '''
import numpy as np


def place():
    """A 5x5 grid with a little margin, and one more circle in a gap."""
    margin = 0.12
    step = (1 - 2 * margin) / 4
    centres = [[margin + step * i, margin + step * j] for i in range(5) for j in range(5)]
    centres.append([margin + step * 0.5, margin + step * 0.5])
    return np.array(centres)


def radii_for(centres):
    """Shrink overlapping pairs to touch, one pass."""
    n = len(centres)
    radii = np.minimum(np.minimum(centres[:, 0], 1 - centres[:, 0]), np.minimum(centres[:, 1], 1 - centres[:, 1]))
    radii = np.minimum(radii, 0.09)
    for i in range(n):
        for j in range(i + 1, n):
            d = np.sqrt(np.sum((centres[i] - centres[j]) ** 2))
            if radii[i] + radii[j] > d:
                scale = d / (radii[i] + radii[j])
                radii[i] *= scale
                radii[j] *= scale
    return radii


def pack():
    centres = place()
    return centres, radii_for(centres)
'''

_HEX = '''
import numpy as np


def place():
    """Hexagonal rows of 6, 5, 6, 5 and 4 circles."""
    rows = [6, 5, 6, 5, 4]
    centres = []
    dy = 0.8 / (len(rows) - 1)
    for r, count in enumerate(rows):
        y = 0.1 + dy * r
        dx = 0.8 / max(count - 1, 1)
        offset = 0.1 if count % 2 == 0 else 0.15
        for k in range(count):
            centres.append([min(offset + dx * k, 0.9), y])
    return np.array(centres)


def radii_for(centres):
    """Gauss-Seidel passes: each radius as large as the border and its neighbours allow."""
    n = len(centres)
    border = np.minimum(np.minimum(centres[:, 0], 1 - centres[:, 0]), np.minimum(centres[:, 1], 1 - centres[:, 1]))
    dist = np.sqrt(((centres[:, None, :] - centres[None, :, :]) ** 2).sum(-1))
    radii = border.copy()
    for _ in range(20):
        for i in range(n):
            others = np.delete(dist[i] - radii, i)
            radii[i] = max(0.0, min(border[i], others.min()))
    return radii


def pack():
    centres = place()
    return centres, radii_for(centres)
'''

_RELAX = '''
import numpy as np


def place():
    """Random points pushed apart by a few steps of pairwise repulsion."""
    rng = np.random.default_rng(7)
    centres = rng.uniform(0.1, 0.9, size=(26, 2))
    for _ in range(60):
        diff = centres[:, None, :] - centres[None, :, :]
        dist = np.sqrt((diff ** 2).sum(-1)) + np.eye(26)
        push = (diff / dist[..., None] ** 3).sum(1)
        centres = np.clip(centres + 0.0005 * push, 0.05, 0.95)
    return centres


def radii_for(centres):
    """Half the distance to the nearest neighbour, capped by the border."""
    border = np.minimum(np.minimum(centres[:, 0], 1 - centres[:, 0]), np.minimum(centres[:, 1], 1 - centres[:, 1]))
    dist = np.sqrt(((centres[:, None, :] - centres[None, :, :]) ** 2).sum(-1)) + 10 * np.eye(len(centres))
    return np.minimum(border, dist.min(1) / 2)


def pack():
    centres = place()
    return centres, radii_for(centres)
'''

CIRCLE_SEEDS: dict[str, str] = {"rings": _RINGS.lstrip(), "grid": _GRID.lstrip(), "hex": _HEX.lstrip(),
                                 "relax": _RELAX.lstrip()}
