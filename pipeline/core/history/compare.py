"""A run's addresses against the list's last run: what is new, what is still there, whose
VERDICT changed, and the rows of the changes file (``--changes``).

Both engines call the same two functions on each stretch of decided rows (a batch of a local
run, an input part of a Dask run): :func:`remembered` keeps one row per distinct address (its
first row: the duplicates of a list are marked on later rows only), :func:`compare` joins
those with the last run's addresses by hash. The stretches' counts add up
(:meth:`~pipeline.core.history.types.Changes.merge`); addresses gone since the last run are the
last run's count less those still there, so they are counted, never listed: the history keeps
hashes, not addresses.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import Final

import polars as pl

from pipeline.core.history.keys import HASH, address_hashes
from pipeline.core.history.types import DECIDED, KEPT, VERDICTS, Changes, PastRun

# The changes file's columns, in order: the address as the list spells it (normalized), its
# VERDICT and REASON in the last run ("" for a new address) and in this one, and when this
# run's answer was learned (UTC, ISO 8601: a mail server's or verifier's answer, else this run).
CHANGE_COLUMNS: Final[dict[str, pl.DataType]] = {
    "address": pl.String(),
    "before": pl.String(),
    "after": pl.String(),
    "reason_before": pl.String(),
    "reason_after": pl.String(),
    "learned_at": pl.String(),
}
_ISO: Final = "%Y-%m-%dT%H:%M:%SZ"
_DEFAULT: Final = "SCORE_DEFAULT"
_REASON: Final = "_REASON_BEFORE"  # the last run's REASON, in the previous table


@dataclass(frozen=True)
class Previous:
    """The list's last run and what it kept of each address (:func:`previous_table`, sorted
    by HASH)."""

    run: PastRun
    kept: pl.DataFrame

    @property
    def changes(self) -> Changes:
        """An empty count of changes since this run."""
        return Changes(self.run.started_at, self.kept.height)


def previous_table(kept: pl.DataFrame) -> pl.DataFrame:
    """A run's kept table (HASH, VERDICT, and REASON when it was read) as a comparison holds
    it: no SCORE, REASON as a category (a million addresses in about 13 MB; 9 MB without
    REASON). :class:`Previous` holds it sorted by hash: each stretch of rows is merged with
    it, not hashed into it again."""
    columns = [pl.col(HASH), pl.col("VERDICT").alias("_BEFORE")]
    if "REASON" in kept.columns:
        columns.append(pl.col("REASON").cast(pl.Categorical).alias(_REASON))
    return kept.select(columns)


def remembered(work: pl.DataFrame) -> pl.DataFrame:
    """One row per distinct address of *work* (decided rows with KEY, DUPLICATE, EMAIL,
    VERDICT, REASON, SCORE and MAILBOX_AT): :data:`~pipeline.core.history.types.DECIDED`."""
    learned = "MAILBOX_AT" if "MAILBOX_AT" in work.columns else None
    # A calibrated run keeps the SCORE the rules gave (SCORE_DEFAULT): the next calibration is
    # fitted on the scale it is applied to (pipeline.core.calibration.apply).
    score = _DEFAULT if _DEFAULT in work.columns else "SCORE"
    # The columns kept, then the rows: a filter of the whole batch copies all its columns.
    kept = ["KEY", "DUPLICATE", "VERDICT", "REASON", "EMAIL", score]
    if learned:
        kept.append(learned)
    first = work.select(kept).filter(~pl.col("DUPLICATE") & (pl.col("KEY") != ""))
    hashed = address_hashes(first.get_column("KEY"))
    return first.select(
        hashed.alias(HASH),
        pl.col("VERDICT").cast(VERDICTS),
        "REASON",
        pl.col(score).alias("SCORE"),
        "EMAIL",
        (pl.col(learned) if learned else pl.lit(None)).cast(pl.Float64).alias("LEARNED_AT"),
    ).cast(DECIDED)  # type: ignore[arg-type]


def kept_of(decided: pl.DataFrame) -> pl.DataFrame:
    """What the history keeps of :func:`remembered`'s rows."""
    return decided.select(list(KEPT))


def compare(
    decided: pl.DataFrame, previous: Previous | None, run_at: float
) -> tuple[Changes | None, pl.DataFrame]:
    """How :func:`remembered`'s rows differ from *previous* (None on a list's first run: no
    change is counted and none listed), and their rows of the changes file (none when
    *previous* was read without its reasons: no changes file was asked for). *run_at*: when
    this run started, the learned time of an answer it learned without a mail server's."""
    if previous is None:
        return None, pl.DataFrame(schema=CHANGE_COLUMNS)
    # A merge of two sorted tables: the stretch's hashes sorted, each matched with the last
    # run's row of the same hash (an as-of join with no tolerance: equal hashes only). Only
    # the narrow columns are sorted; the rows listed are taken back in the list's order.
    keys = decided.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_ROW"), HASH, "VERDICT")
    joined = keys.sort(HASH).join_asof(
        previous.kept, on=HASH, strategy="backward", tolerance=0, check_sortedness=False
    )
    counted = previous.changes
    present = pl.col("_BEFORE").is_not_null()
    turned = present & (pl.col("_BEFORE") != pl.col("VERDICT"))
    figures = joined.select(present.sum().alias("both"), pl.len().alias("all"))
    both, total = figures.row(0)
    counted.unchanged, counted.new = int(both), int(total - both)
    pairs = joined.filter(turned).group_by("_BEFORE", "VERDICT").len()
    counted.transitions = Counter({f"{was}->{now}": int(n) for was, now, n in pairs.iter_rows()})
    if _REASON not in previous.kept.columns:
        return counted, pl.DataFrame(schema=CHANGE_COLUMNS)
    listed = joined.filter(~present | turned).select("_ROW", "_BEFORE", _REASON)
    listed = listed.sort("_ROW")  # in the list's order
    rows = decided.select(pl.all().gather(listed.get_column("_ROW")))
    return counted, _change_rows(rows.hstack(listed.drop("_ROW")), run_at)


def _change_rows(listed: pl.DataFrame, run_at: float) -> pl.DataFrame:
    started = dt.datetime.fromtimestamp(run_at, dt.UTC).strftime(_ISO)
    learned = (
        pl.from_epoch(pl.col("LEARNED_AT"), time_unit="s")
        .dt.replace_time_zone("UTC")
        .dt.strftime(_ISO)
        .fill_null(started)
    )
    return listed.select(
        pl.col("EMAIL").alias("address"),
        pl.col("_BEFORE").cast(pl.String).fill_null("").alias("before"),
        pl.col("VERDICT").cast(pl.String).alias("after"),
        pl.col(_REASON).cast(pl.String).fill_null("").alias("reason_before"),
        pl.col("REASON").alias("reason_after"),
        learned.alias("learned_at"),
    )
