"""The narrow duplicate shuffle of a Dask run: rows stay in their input part; only
(KEY, row number) pairs cross the network.

The rule is the local engine's (:mod:`pipeline.stages.state.dedupe`): a row is a DUPLICATE
when a row earlier in input order has the same non-empty KEY. A row's place in input order is
its global row number (its part's first row plus its place in the part), so no global scan is
needed:

1. :func:`key_pieces`, on each part's worker: the part's (KEY, ROW, PART, CONSENT) pairs split
   by a hash of the KEY (:func:`~pipeline.stages.state.dedupe.partition_of`, the key level)
   into buckets; every row of one address goes to one bucket, whatever its part.
2. :func:`settle_bucket`, one task per bucket: the first row of each KEY wins; each part gets
   back a narrow table of its rows that are duplicates or whose address another row holds
   back from sending (the first held row's reason, as the local engine's ``held_keys``).
3. :func:`mark_part`, on the part's worker: DUPLICATE and CONSENT set from those tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from pipeline.stages.base import Batch
from pipeline.stages.dask.sizes import size_of
from pipeline.stages.state.dedupe import KEY_LEVEL, partition_of, repeated_rows

ROW = "_ROW"  # the global row number (input order) of each row
PART = "_PART"  # the input part a row belongs to
_HELD = "_HELD"


def key_pieces(batch: Batch, part: int, buckets: int) -> list[pl.DataFrame]:
    """The part's addressed rows as narrow (KEY, ROW, PART, CONSENT) pieces, one per bucket."""
    work = batch.work
    narrow = work.select("KEY", pl.col(ROW), pl.lit(part, pl.UInt32).alias(PART), "CONSENT").filter(
        pl.col("KEY") != ""
    )
    bucket = partition_of(narrow.get_column("KEY"), buckets, level=KEY_LEVEL)
    return [narrow.filter(bucket == b) for b in range(buckets)]


def piece(pieces: list[pl.DataFrame], bucket: int) -> pl.DataFrame:
    return pieces[bucket]


@dataclass(frozen=True)
class Settled:
    """One bucket's answer: per part, its rows that are duplicates or held by their address."""

    flags: dict[int, pl.DataFrame] = field(default_factory=dict)
    distinct: int = 0  # distinct non-empty KEYs of the bucket
    duplicates: int = 0

    def __sizeof__(self) -> int:
        return size_of(list(self.flags.values())) + 64


def settle_bucket(*pieces: pl.DataFrame) -> Settled:
    """The first row in input order of each KEY wins; the others are duplicates. A KEY one of
    whose rows is held back (CONSENT) is held back on all its rows, with its first such row's
    reason."""
    if not pieces:  # a list with no row: one bucket, and no part to send it anything
        return Settled()
    pairs = pl.concat(pieces, how="vertical")
    if pairs.is_empty():
        return Settled()
    repeats = repeated_rows(pairs.select(pl.col(ROW).alias("ROW"), "KEY"))
    held = (
        pairs.filter(pl.col("CONSENT").is_not_null())
        .sort(ROW)
        .unique("KEY", keep="first", maintain_order=True)
        .select("KEY", pl.col("CONSENT").alias(_HELD))
    )
    marked = pairs.with_columns(pl.col(ROW).is_in(repeats.implode()).alias("DUPLICATE"))
    marked = marked.join(held, on="KEY", how="left")
    wanted = marked.filter(pl.col("DUPLICATE") | pl.col(_HELD).is_not_null())
    narrow = wanted.select(ROW, PART, "DUPLICATE", _HELD)
    groups = narrow.partition_by(PART, as_dict=True, include_key=False)
    flags = {int(key[0]): frame for key, frame in groups.items()}
    distinct = pairs.get_column("KEY").n_unique()
    return Settled(flags, distinct, len(repeats))


def flags_of(settled: Settled, part: int) -> pl.DataFrame | None:
    return settled.flags.get(part)


def counts_of(settled: Settled) -> tuple[int, int]:
    return settled.distinct, settled.duplicates


def mark_part(batch: Batch, *flags: pl.DataFrame | None) -> Batch:
    """The part with DUPLICATE, and CONSENT on every row of an address held back anywhere. A
    part held narrow (:func:`~pipeline.stages.dask.tasks.held_thin`) keeps the flags alone,
    which its write applies (:func:`marked`): from here to the write it holds a few bytes for
    each duplicate or held row, and nothing for the others."""
    found = [f for f in flags if f is not None]
    table = pl.concat(found, how="vertical") if found else NO_FLAGS
    if batch.again is not None:
        return Batch(batch.originals, table, batch.again)
    return Batch(batch.originals, marked(batch.work, table), batch.again)


# A part's flags when none of its rows is a duplicate or held back.
NO_FLAGS = pl.DataFrame(schema={ROW: pl.UInt64, "DUPLICATE": pl.Boolean, _HELD: pl.String})


def marked(work: pl.DataFrame, flags: pl.DataFrame) -> pl.DataFrame:
    """*work* with the shuffle's *flags* (ROW, DUPLICATE, and the reason an address is held)."""
    joined = work.join(flags, on=ROW, how="left", maintain_order="left")
    return joined.with_columns(
        pl.col("DUPLICATE").fill_null(False),
        pl.coalesce("CONSENT", _HELD).alias("CONSENT"),
    ).drop(_HELD)
