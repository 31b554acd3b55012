"""The one rule both fronts apply (the batch's decided rows, the service's answers): SCORE
mapped to the list's calibration by the finest cell that holds the row (its level, REASON and
provider; its level and REASON; its level, :class:`~.types.Level`), then kept inside its
VERDICT's band, so VERDICT and SCORE never contradict (:data:`~pipeline.core.verdict.BANDS`;
VERDICT itself never moves). A row's provider is its DOMAIN's, as the calibration names
them.

The SCORE the rules gave stays beside it in ``SCORE_DEFAULT``: the run history keeps that one,
so the next calibration is fitted on the same scale it is applied to.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from pipeline.core.calibration.types import OTHER, Calibration
from pipeline.core.verdict import BANDS

DEFAULT: Final = "SCORE_DEFAULT"


def level_of(score: pl.Expr) -> pl.Expr:
    """A SCORE's calibration level: its hundredths (the rules round SCORE to hundredths)."""
    return (score * 100).round(0).cast(pl.Int64)


def in_band(score: pl.Expr, verdict: pl.Expr) -> pl.Expr:
    """*score* clamped into the band of each row's *verdict*."""
    clamped = score
    for v, (low, high) in BANDS.items():
        clamped = pl.when(verdict == v.value).then(score.clip(low, high)).otherwise(clamped)
    return clamped


def calibrated(rows: pl.DataFrame, calibration: Calibration | None) -> pl.DataFrame:
    """*rows* (VERDICT, SCORE) with SCORE calibrated and the rules' SCORE in ``SCORE_DEFAULT``;
    without a calibration, as they are."""
    if calibration is None or "SCORE" not in rows.columns:
        return rows
    by_level, cells = calibration.by_level, calibration.cells
    score = pl.col("SCORE")
    if not by_level and not cells:
        return rows.with_columns(score.alias(DEFAULT))
    level = level_of(score)
    mapped = _looked_up(level, by_level)
    if cells and "REASON" in rows.columns:
        reason = pl.col("REASON").fill_null("")
        provider = _provider(rows, calibration)
        finest = _looked_up(pl.format("{}|{}|{}", level, reason, provider), cells)
        mapped = pl.coalesce(finest, _looked_up(pl.format("{}|{}", level, reason), cells), mapped)
    return rows.with_columns(
        in_band(pl.coalesce(mapped, score), pl.col("VERDICT")).round(2).alias("SCORE"),
        score.alias(DEFAULT),
    )


def _provider(rows: pl.DataFrame, calibration: Calibration) -> pl.Expr:
    """Each row's provider: its own PROVIDER (the sends of a fit carry it), else its DOMAIN's
    as the calibration names them."""
    if "PROVIDER" in rows.columns:
        return pl.col("PROVIDER")
    if "DOMAIN" in rows.columns:
        return pl.col("DOMAIN").replace_strict(dict(calibration.providers), default=OTHER)
    return pl.lit(OTHER)


def _looked_up(key: pl.Expr, mapping: dict[int, float] | dict[str, float]) -> pl.Expr:
    return key.replace_strict(mapping, default=None, return_dtype=pl.Float64)
