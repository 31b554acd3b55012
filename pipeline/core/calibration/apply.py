"""The one rule both fronts apply (the batch's decided rows, the service's answers): SCORE
mapped level by level to the list's calibration, then kept inside its VERDICT's band, so VERDICT
and SCORE never contradict (:data:`~pipeline.core.verdict.BANDS`; VERDICT itself never moves).

The SCORE the rules gave stays beside it in ``SCORE_DEFAULT``: the run history keeps that one,
so the next calibration is fitted on the same scale it is applied to.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from pipeline.core.calibration.types import Calibration
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
    mapping = calibration.mapping()
    if not mapping:
        return rows.with_columns(pl.col("SCORE").alias(DEFAULT))
    score = pl.col("SCORE")
    looked_up = level_of(score).replace_strict(mapping, default=None, return_dtype=pl.Float64)
    mapped = pl.coalesce(looked_up, score)
    return rows.with_columns(
        in_band(mapped, pl.col("VERDICT")).round(2).alias("SCORE"), score.alias(DEFAULT)
    )
