"""The fit: from sends (each with the SCORE, VERDICT and REASON its address had, its provider,
and whether it hard-bounced) to a calibration and the report's groups.

A *level* is one value of SCORE as the rules gave it (hundredths): the rules score an address
from its reasons, so a list's sends fall on a few dozen levels, each a kind of address. Within
each VERDICT's band the levels' observed deliverability (deliveries / sends) is fitted by
isotonic regression (pool-adjacent-violators, weighted by sends), so a higher SCORE never
calibrates lower than a lower one; the bands do not overlap, so the whole mapping is monotone.
Only levels with at least ``calibration.min_sends`` sends are fitted and applied; the others
keep the default SCORE. A fitted rate outside the level's band is a finding, and the level takes
the band's edge: VERDICT and SCORE never contradict (:mod:`pipeline.core.verdict`).

The calibration error (ECE) is the send-weighted mean over :data:`~.types.BINS` equal-width
bins of SCORE of |mean SCORE - observed deliverability| (Naeini et al., 2015).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Final

import polars as pl

from pipeline.core.calibration.apply import calibrated, level_of
from pipeline.core.calibration.types import BINS, Calibration, Group, Level, LevelStatus, Report
from pipeline.core.verdict import BANDS, Verdict

# What the fit needs of each send.
SENDS: Final = {
    "SCORE": pl.Float64(),
    "VERDICT": pl.String(),
    "REASON": pl.String(),
    "PROVIDER": pl.String(),
    "HARD": pl.Boolean(),
}


def pav(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The non-decreasing sequence nearest *values* in weighted least squares
    (pool-adjacent-violators: each violating pair of blocks is pooled into its weighted mean)."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, w in zip(values, weights, strict=True):
        blocks.append([float(v), float(w), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, weight, count = blocks.pop()
            last = blocks[-1]
            total = last[1] + weight
            last[0] = (last[0] * last[1] + mean * weight) / total if total else mean
            last[1], last[2] = total, last[2] + count
    return [mean for mean, _w, count in blocks for _ in range(int(count))]


def _band_of(level: int) -> Verdict:
    """The VERDICT whose band holds the SCORE *level* (hundredths; the bands do not overlap)."""
    for verdict, (low, high) in BANDS.items():
        if round(low * 100) <= level <= round(high * 100):
            return verdict
    return Verdict.VALID


def _levels(sends: pl.DataFrame, min_sends: int) -> list[Level]:
    counted = (
        sends.group_by(level_of(pl.col("SCORE")).alias("L"))
        .agg(pl.len().alias("n"), pl.col("HARD").sum().alias("hard"))
        .sort("L")
    )
    levels: list[Level] = []
    for verdict, (low, high) in BANDS.items():
        rows = [r for r in counted.iter_rows() if _band_of(r[0]) == verdict]
        enough = [r for r in rows if r[1] >= min_sends]
        fitted = pav([1 - h / n for _l, n, h in enough], [n for _l, n, _h in enough])
        fit = {r[0]: f for r, f in zip(enough, fitted, strict=True)}
        for lv, n, hard in rows:
            levels.append(_level(lv / 100, verdict, n, hard, fit.get(lv), (low, high)))
    return sorted(levels, key=lambda lv: lv.score)


def _level(
    score: float, verdict: Verdict, n: int, hard: int, fit: float | None, band: tuple[float, float]
) -> Level:
    observed = 1 - hard / n
    if fit is None:
        status, value, fit = LevelStatus.FEW_SENDS, score, observed
    elif fit > band[1]:
        status, value = LevelStatus.ABOVE_BAND, band[1]
    elif fit < band[0]:
        status, value = LevelStatus.BELOW_BAND, band[0]
    else:
        status, value = LevelStatus.APPLIED, round(fit, 4)
    return Level(score, verdict.value, n, hard, observed, fit, value, status)


def ece(predicted: pl.Expr, hard: pl.Expr, frame: pl.DataFrame) -> float:
    """The calibration error of *predicted* (SCORE) against the deliveries (not *hard*) of
    *frame*'s sends, over :data:`BINS` equal-width bins."""
    if frame.is_empty():
        return 0.0
    binned = frame.select(
        (predicted * BINS).floor().clip(0, BINS - 1).alias("b"),
        predicted.alias("p"),
        (~hard).cast(pl.Float64).alias("o"),
    )
    per_bin = binned.group_by("b").agg(
        pl.len().alias("n"), (pl.col("p").sum() - pl.col("o").sum()).abs().alias("gap")
    )
    return float(per_bin.get_column("gap").sum()) / frame.height


def groups(sends: pl.DataFrame, score: str = "SCORE", after: str = "CALIBRATED") -> list[Group]:
    """The report's groups of *sends*: SCORE bins, REASON (each code of it) and provider."""
    bin_name = (pl.col(score) * BINS).floor().clip(0, BINS - 1) / BINS
    keyed = {
        "bin": sends.with_columns(
            pl.format("{}-{}", bin_name.round(1), (bin_name + 1 / BINS).round(1)).alias("G")
        ),
        "reason": sends.with_columns(
            pl.col("REASON").replace("", "none").str.split(";").alias("G")
        ).explode("G"),
        "provider": sends.with_columns(pl.col("PROVIDER").alias("G")),
    }
    found: list[Group] = []
    for kind, frame in keyed.items():
        table = frame.group_by("G").agg(
            pl.len().alias("n"),
            pl.col("HARD").sum().alias("hard"),
            pl.col(score).mean().alias("p"),
            pl.col(after).mean().alias("c"),
        )
        for g, n, hard, p, c in table.sort("G").iter_rows():
            found.append(Group(kind, str(g), n, hard, 1 - hard / n, p, c))
    return found


def fit(sends: pl.DataFrame, list_name: str, sandbox: bool, min_sends: int) -> Report:
    """The calibration of the list *list_name* from its *sends* (:data:`SENDS`), and the
    report: its groups, the calibration error before and after (on these sends), findings."""
    levels = _levels(sends, min_sends)
    made = Calibration(
        uuid.uuid4().hex[:12],
        list_name,
        sandbox,
        time.time(),
        min_sends,
        sends.height,
        tuple(levels),
    )
    after = calibrated(sends, made).rename({"SCORE": "CALIBRATED", "SCORE_DEFAULT": "SCORE"})
    hard = pl.col("HARD")
    return Report(
        made,
        tuple(groups(after)),
        ece(pl.col("SCORE"), hard, after),
        ece(pl.col("CALIBRATED"), hard, after),
        tuple(_finding(lv) for lv in levels if lv.status in _OUTSIDE),
    )


_OUTSIDE: Final = (LevelStatus.ABOVE_BAND, LevelStatus.BELOW_BAND)


def _finding(level: Level) -> str:
    low, high = BANDS[Verdict(level.verdict)]
    return (
        f"SCORE {level.score:.2f} ({level.verdict}, {level.sends} sends): the observed "
        f"deliverability {level.observed:.3f} lies outside the band {low:.2f}-{high:.2f} of "
        f"{level.verdict}; its calibrated SCORE is the band's edge, {level.calibrated:.2f}."
    )
