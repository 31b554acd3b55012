"""The monotone fit: a value for each cell of a VERDICT's band, as near the cell's observed
deliverability as the order of SCORE allows, in least squares weighted by sends.

A band's cells sit on *levels* (the SCOREs the rules gave, lowest first); the cells of one
level (its REASONs, its providers) are free of each other, and every cell of a higher level
must calibrate at least as high as every cell of a lower one. That is isotonic regression on
a partial order of layers, and it has an exact solution by *fences*: one boundary between each
pair of adjacent levels, the boundaries non-decreasing, the band's edges outermost. Given the
fences, each cell's best value is its observed rate clipped between its level's two fences,
so the fences alone are chosen, by dynamic programming over the band's hundredths (SCORE is
given in hundredths). With one cell a level this is pool-adjacent-violators, to the
hundredth.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Cell:
    observed: float  # deliveries / sends (or, for a cell without evidence, its default SCORE)
    weight: float  # its sends


def _below(cells: Sequence[Cell], fence: float) -> float:
    """What a lower fence at *fence* costs the cells observed under it."""
    return sum(c.weight * (fence - c.observed) ** 2 for c in cells if c.observed < fence)


def _above(cells: Sequence[Cell], fence: float) -> float:
    return sum(c.weight * (c.observed - fence) ** 2 for c in cells if c.observed > fence)


def fences(levels: Sequence[Sequence[Cell]], low: float, high: float) -> list[tuple[float, float]]:
    """Each level's pair of fences (lower, upper) within the band [*low*, *high*]: the
    non-decreasing boundaries that cost the cells least. A cell's value is then
    :func:`clipped` to its level's pair."""
    grid = [h / 100 for h in range(round(low * 100), round(high * 100) + 1)]
    best = [0.0] + [math.inf] * (len(grid) - 1)  # the first level's lower fence is the edge
    chosen: list[list[int]] = []
    for cells in levels:
        under = [_below(cells, g) for g in grid]
        over = [_above(cells, g) for g in grid]
        # A cell's cost splits into what its lower fence and its upper fence cost it, so the
        # best lower fence for each upper one is a running minimum.
        least, at = math.inf, 0
        costs, picks = [], []
        for b in range(len(grid)):
            if best[b] + under[b] < least:
                least, at = best[b] + under[b], b
            costs.append(least + over[b])
            picks.append(at)
        best = costs
        chosen.append(picks)
    b = len(grid) - 1  # the last level's upper fence is the band's top edge
    bounds = [b]
    for picks in reversed(chosen):
        b = picks[b]
        bounds.append(b)
    bounds.reverse()
    return [(grid[bounds[i]], grid[bounds[i + 1]]) for i in range(len(levels))]


def clipped(observed: float, fence: tuple[float, float]) -> float:
    """A cell's value between its level's fences."""
    return min(max(observed, fence[0]), fence[1])
