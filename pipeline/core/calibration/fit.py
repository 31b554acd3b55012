"""The fit: from sends (each with the SCORE, VERDICT and REASON its address had, its provider,
and whether it hard-bounced) to a calibration and the report's groups.

A *level* is one value of SCORE as the rules gave it (hundredths): the rules score an address
from its reasons, so a list's sends fall on a few dozen levels. The rules give one SCORE to
kinds of address that need not deliver alike (``greylisted`` and ``smtp_timeout`` share one),
and a provider may take less mail than another, so a level's sends are cut into *cells*: a
REASON at a provider, a REASON, the level, each made when its sends number at least
``calibration.min_sends`` (and a finer cell only when it does not hold all its parent's).
Each cell's rate is its sends' own, pulled toward its parent's (:data:`PULL`); a send is
decided by the finest cell that holds it (:class:`~.types.Level`). A level with fewer sends
in all keeps the default SCORE where the order allows.

Within each VERDICT's band the cells are fitted to their observed deliverability
(deliveries / sends) by the monotone fit of :mod:`.order`: a cell of a higher SCORE never
calibrates lower than one of a lower SCORE, and as the bands do not overlap the whole mapping
is monotone in SCORE; the cells of one level are told apart. A cell whose observed rate lies
outside its band is a finding and takes the band's edge (VERDICT and SCORE never contradict,
:mod:`pipeline.core.verdict`); so is a cell the order holds more than
:data:`ORDER_FINDING` from the rate it is fitted to (the list's sends rank its kind of address
otherwise than the rules do).

The calibration error (ECE) is the send-weighted mean over :data:`~.types.BINS` equal-width
bins of SCORE of |mean SCORE - observed deliverability| (Naeini et al., 2015).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Final

import polars as pl

from pipeline.core.calibration.apply import calibrated, level_of
from pipeline.core.calibration.order import Cell, clipped, fences
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
# How far the order may hold a cell from the rate it is fitted to before the report says so.
ORDER_FINDING: Final = 0.03
# How hard a cell's rate is pulled toward its parent's, in sends of calibration.min_sends.
PULL: Final = 1.0
# A cell with too few sends weighs next to nothing: it takes its default where order allows.
_NO_EVIDENCE: Final = 1e-9

# A cell's evidence: (level, REASON or None, provider or None, sends, hard bounces, enough,
# the rate it is fitted to, the sends it is applied to).
_Counted = tuple[int, str | None, str | None, int, int, bool, float, int]


def _band_of(level: int) -> Verdict:
    """The VERDICT whose band holds the SCORE *level* (hundredths; the bands do not overlap)."""
    for verdict, (low, high) in BANDS.items():
        if round(low * 100) <= level <= round(high * 100):
            return verdict
    return Verdict.VALID


def _pulled(n: str, hard: str, toward: str, strength: float) -> pl.Expr:
    """A cell's rate pulled toward its parent's: its deliveries and *strength* sends at the
    parent's rate (a small cell's rate is mostly its parent's; a large one's, its own)."""
    return (pl.col(n) - pl.col(hard) + strength * pl.col(toward)) / (pl.col(n) + strength)


def _counted(sends: pl.DataFrame, min_sends: int) -> list[_Counted]:
    """The cells with enough sends (and each level without), their evidence, the rate each is
    fitted to (its own, pulled toward its REASON's at its level, that toward its level's, by
    :data:`PULL` times ``calibration.min_sends`` sends) and the sends it is applied to (those
    no finer cell holds)."""
    strength = PULL * min_sends
    by = {"L": ["L"], "R": ["L", "R"], "P": ["L", "R", "P"]}
    fine = sends.group_by(
        level_of(pl.col("SCORE")).alias("L"),
        pl.col("REASON").fill_null("").alias("R"),
        pl.col("PROVIDER").alias("P"),
    ).agg(pl.len().alias("n"), pl.col("HARD").sum().alias("hard"))
    for tier, keys in by.items():
        fine = fine.with_columns(
            pl.col("n").sum().over(keys).alias(f"n{tier}"),
            pl.col("hard").sum().over(keys).alias(f"hard{tier}"),
        )
    fine = fine.with_columns(
        (1 - pl.col("hardL") / pl.col("nL")).alias("rateL"),
        # A finer cell that holds all its parent's sends would only repeat it.
        ((pl.col("nP") >= min_sends) & (pl.col("nP") < pl.col("nR"))).alias("okP"),
        ((pl.col("nR") >= min_sends) & (pl.col("nR") < pl.col("nL"))).alias("okR"),
        (pl.col("nL") >= min_sends).alias("okL"),
    )
    fine = fine.with_columns(_pulled("nR", "hardR", "rateL", strength).alias("rateR"))
    fine = fine.with_columns(_pulled("nP", "hardP", "rateR", strength).alias("rateP"))
    # The finest cell that holds each group of sends: its provider's, its REASON's, its level's.
    fine = fine.with_columns(
        pl.when("okP")
        .then(pl.lit("P"))
        .when("okR")
        .then(pl.lit("R"))
        .otherwise(pl.lit("L"))
        .alias("held")
    )
    found: list[_Counted] = []
    for tier, keys in by.items():
        cells = (
            fine.filter(pl.col(f"ok{tier}") | (tier == "L"))
            .group_by(keys)
            .agg(
                pl.col(f"n{tier}", f"hard{tier}", f"ok{tier}", f"rate{tier}").first(),
                pl.col("n").filter(pl.col("held") == tier).sum().alias("applied"),
            )
            .sort(keys)
        )
        for row in cells.iter_rows():
            named = dict(zip(keys, row, strict=False))
            n, hard, ok, rate, applied = row[len(keys) :]
            found.append((named["L"], named.get("R"), named.get("P"), n, hard, ok, rate, applied))
    return found


def _levels(sends: pl.DataFrame, min_sends: int) -> list[tuple[Level, float]]:
    """The cells, each with the rate it was fitted to (its own, pulled toward its parent's)."""
    counted = _counted(sends, min_sends)
    made: list[tuple[Level, float]] = []
    for verdict, band in BANDS.items():
        mine = [c for c in counted if _band_of(c[0]) == verdict]
        steps = sorted({c[0] for c in mine})
        cells = [
            [
                Cell(rate, max(applied, _NO_EVIDENCE)) if ok else Cell(lv / 100, _NO_EVIDENCE)
                for lv, _r, _p, _n, _h, ok, rate, applied in mine
                if lv == step
            ]
            for step in steps
        ]
        fenced = dict(zip(steps, fences(cells, *band), strict=True))
        for lv, reason, provider, n, hard, ok, rate, _applied in mine:
            value = clipped(rate if ok else lv / 100, fenced[lv])
            made.append((_level(lv, reason, provider, (n, hard, ok), value, verdict), rate))
    return sorted(made, key=lambda cell: _order(cell[0]))


def _order(lv: Level) -> tuple[float, bool, str, str]:
    """The table's order: by SCORE, the level's own cell first, then REASON and provider."""
    return (lv.score, lv.reason is not None, lv.reason or "", lv.provider or "")


def _level(
    lv: int,
    reason: str | None,
    provider: str | None,
    evidence: tuple[int, int, bool],
    value: float,
    verdict: Verdict,
) -> Level:
    n, hard, enough = evidence
    observed = 1 - hard / n
    low, high = BANDS[verdict]
    if not enough:
        status = LevelStatus.FEW_SENDS
    elif observed > high:
        status = LevelStatus.ABOVE_BAND
    elif observed < low:
        status = LevelStatus.BELOW_BAND
    else:
        status = LevelStatus.APPLIED
    return Level(
        lv / 100, verdict.value, n, hard, observed, value, round(value, 4), status, reason, provider
    )


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


def fit(
    sends: pl.DataFrame,
    list_name: str,
    sandbox: bool,
    min_sends: int,
    providers: Mapping[str, str] | None = None,
) -> Report:
    """The calibration of the list *list_name* from its *sends* (:data:`SENDS`), and the
    report: its groups, the calibration error before and after (on these sends), findings.
    *providers* (domain -> provider's name, as :func:`~.sends.sends_of` named them) tells
    later runs which domains a provider's cells hold."""
    cells = _levels(sends, min_sends)
    levels = [lv for lv, _rate in cells]
    named = {lv.provider for lv in levels if lv.provider is not None}
    made = Calibration(
        uuid.uuid4().hex[:12],
        list_name,
        sandbox,
        time.time(),
        min_sends,
        sends.height,
        tuple(levels),
        {d: p for d, p in (providers or {}).items() if p in named},
    )
    after = calibrated(sends, made).rename({"SCORE": "CALIBRATED", "SCORE_DEFAULT": "SCORE"})
    hard = pl.col("HARD")
    return Report(
        made,
        tuple(groups(after)),
        ece(pl.col("SCORE"), hard, after),
        ece(pl.col("CALIBRATED"), hard, after),
        tuple(f for f in (_finding(lv, rate) for lv, rate in cells) if f),
    )


def _finding(level: Level, rate: float) -> str:
    """What the report says of a cell the band or the order holds from its observed rate
    ("" for none). *rate* is the rate the cell was fitted to: the pull toward its parent is
    no finding, only the order's hold on it."""
    low, high = BANDS[Verdict(level.verdict)]
    cell = f"SCORE {level.name} ({level.verdict}, {level.sends} sends)"
    if level.status in (LevelStatus.ABOVE_BAND, LevelStatus.BELOW_BAND):
        return (
            f"{cell}: the observed deliverability {level.observed:.3f} lies outside the band "
            f"{low:.2f}-{high:.2f} of {level.verdict}; its calibrated SCORE is the band's "
            f"edge, {level.calibrated:.2f}."
        )
    if level.applied and abs(level.fitted - rate) > ORDER_FINDING:
        side = "more" if rate > level.fitted else "less"
        return (
            f"{cell}: the observed deliverability {level.observed:.3f} is {side} than that of "
            f"sends the rules scored {'higher' if side == 'more' else 'lower'}; a higher SCORE "
            f"never calibrates lower, so it takes {level.calibrated:.2f}. The list's sends "
            "rank this kind of address otherwise than the rules do."
        )
    return ""
