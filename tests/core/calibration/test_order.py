"""The monotone fit of a band's cells: with one cell a level, isotonic regression
(pool-adjacent-violators) to the hundredth; cells of one level free of each other; every cell
of a higher level at least every cell of a lower one."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import pytest

from pipeline.core.calibration.order import Cell, clipped, fences


def pav(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The reference: the non-decreasing sequence nearest *values* in weighted least squares."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, w in zip(values, weights, strict=True):
        blocks.append([v, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, weight, count = blocks.pop()
            last = blocks[-1]
            last[0] = (last[0] * last[1] + mean * weight) / (last[1] + weight)
            last[1], last[2] = last[1] + weight, last[2] + count
    return [mean for mean, _w, count in blocks for _ in range(int(count))]


def fitted(levels: Sequence[Sequence[Cell]], low: float, high: float) -> list[list[float]]:
    fenced = fences(levels, low, high)
    pairs = zip(levels, fenced, strict=True)
    return [[clipped(c.observed, f) for c in cells] for cells, f in pairs]


@pytest.mark.parametrize("seed", range(40))
def test_one_cell_a_level_is_pool_adjacent_violators_to_the_hundredth(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 9)
    values = [rng.uniform(0.3, 0.69) for _ in range(n)]
    weights = [rng.randint(200, 5000) for _ in range(n)]
    levels = [[Cell(o, w)] for o, w in zip(values, weights, strict=True)]
    got = [v for (v,) in fitted(levels, 0.3, 0.69)]
    assert got == pytest.approx(pav(values, weights), abs=0.005 + 1e-9)
    assert got == sorted(got)


def test_cells_of_one_level_are_free_and_the_next_level_bounds_them() -> None:
    # Level 1 holds 0.70 and 0.50, level 2 holds 0.60: 0.70 and 0.60 pool, 0.50 stays.
    (first, second), (third,) = fitted([[Cell(0.7, 1), Cell(0.5, 1)], [Cell(0.6, 1)]], 0.3, 0.69)
    assert (first, second, third) == pytest.approx((0.65, 0.5, 0.65))


@pytest.mark.parametrize("seed", range(20))
def test_every_cell_of_a_higher_level_is_at_least_every_cell_below(seed: int) -> None:
    rng = random.Random(100 + seed)
    levels = [
        [
            Cell(rng.uniform(0.6, 1.0), rng.choice([1e-9, 300, 2000]))
            for _ in range(rng.randint(1, 4))
        ]
        for _ in range(rng.randint(1, 8))
    ]
    got = fitted(levels, 0.7, 1.0)
    for lower, upper in itertools.pairwise(got):
        assert max(lower) <= min(upper)
    assert all(0.7 <= v <= 1.0 for cells in got for v in cells)


def test_a_cell_outside_the_band_takes_the_edge() -> None:
    assert fitted([[Cell(0.95, 500), Cell(0.2, 500)]], 0.3, 0.69) == [[0.69, 0.3]]
    # Across levels the order comes first: the two pool, inside the band.
    assert fitted([[Cell(0.95, 500)], [Cell(0.2, 500)]], 0.3, 0.69) == [[0.57], [0.57]]
