"""The narrow shuffles of a Dask run: rows stay in their input part; only narrow tables cross
the network, from the parts to buckets and back (:class:`Exchange`: the duplicate shuffle
below, the domain and address buckets, the domains' tally).

Sent to the buckets (:meth:`Exchange.to_buckets`): each part's task returns one piece per
bucket, and each bucket's task takes its piece of every part straight from the part's task (a
list of one piece per part, in input order: :func:`pieces_of` makes them one list); the driver
lets go of the parts' tasks once the buckets' are submitted. A piece is then held once: Dask
counts each result that holds a frame, so a frame that two results hold counts twice, is
spilled without freeing anything, and comes back from the disk as a second copy. Sent back to
the parts (:meth:`Exchange.to_parts`): each bucket's answer, small, is picked apart for a group
of parts at a time (at most :data:`BACK_GROUP`, and about four groups a worker while the parts
allow), one task per group joins what the buckets picked for it, and each part takes its own.

Gathering several parts' pieces in one task on the way to the buckets would cut the tasks
(parts times buckets, divided by the group) but not the bytes, and was tried: a gathering's
pieces are held whole on one worker, and when that worker pauses (Dask pauses a worker at 80%
of its memory), the tasks that take a bucket's share of it run elsewhere and pull the whole
gathering over. Groups of 8 parts restarted both 2 GiB workers of a 50M-row run that parts
alone finish. The driver's memory does not grow with the tasks
(:func:`~pipeline.stages.dask.cluster.connect` turns Dask's log of recent messages off), but
the scheduler's does: at a billion rows (7,800 parts, 500 duplicate buckets) the duplicate
shuffle is about 4 million small tasks, too many for one scheduler; such lists want larger
parts (workers with more memory a thread) or Dask's own P2P shuffle, which is not used.

**The duplicate shuffle.** Only (KEY, row number) pairs cross the network, each KEY as its
128-bit hash.

The rule is the local engine's (:mod:`pipeline.stages.state.dedupe`): a row is a DUPLICATE
when a row earlier in input order has the same non-empty KEY. A row's place in input order is
its global row number (its part's first row plus its place in the part), so no global scan is
needed:

1. :func:`key_pieces`, on each part's worker: the part's (KEY, ROW, PART, CONSENT) pairs split
   by a hash of the KEY (:func:`~pipeline.stages.state.dedupe.partition_of`, the key level)
   into buckets; every row of one address goes to one bucket, whatever its part (the pieces
   travel by :class:`Exchange`).
2. :func:`settle_bucket`, one task per bucket: the first row of each KEY wins; each part gets
   back a narrow table of its rows that are duplicates or whose address another row holds
   back from sending (the first held row's reason, as the local engine's ``held_keys``).
3. :func:`mark_part`, on the part's worker: DUPLICATE and CONSENT set from those tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import polars as pl

from pipeline.stages.base import Batch
from pipeline.stages.dask.sizes import size_of
from pipeline.stages.state.dedupe import KEY_LEVEL, partition_of, repeated_rows

ROW = "_ROW"  # the global row number (input order) of each row
PART = "_PART"  # the input part a row belongs to
_HELD = "_HELD"
_SEEDS = (0x5EED_0001, 0x5EED_0002)  # the KEY's two hashes (neither is a bucket's level)

BACK_GROUP: Final = 8  # parts whose answers one task picks and joins, on the way back
GROUPS_A_WORKER: Final = 4

T = TypeVar("T")


@dataclass(frozen=True)
class Grid:
    """Per bucket, per group of parts (of at most *most* parts): a future of a list, one item
    per part of the group (a piece, an answer)."""

    columns: list[list[Any]]
    most: int

    def __iter__(self) -> Iterator[list[Any]]:
        return iter(self.columns)


@dataclass(frozen=True)
class Exchange:
    """A run's way to exchange narrow tables: its task submitter and its workers."""

    submit: Callable[..., Any]
    workers: int

    def groups_of(self, parts: int, most: int) -> list[range]:
        """The parts of each group of at most *most* parts, in input order."""
        spread = -(-parts // (GROUPS_A_WORKER * max(1, self.workers)))
        size = max(1, min(most, spread))
        return [range(start, min(parts, start + size)) for start in range(0, parts, size)]

    def to_buckets(self, sources: Sequence[Any], buckets: int) -> Grid:
        """Per bucket, one future per source (each source: a future of one piece per bucket):
        the source's piece of that bucket, as a list of one, in input order."""
        columns = [
            [self.submit(_alone, source, bucket) for source in sources] for bucket in range(buckets)
        ]
        return Grid(columns, 1)

    def picked(self, answers: Sequence[Any], parts: int, pick: Callable[..., Any]) -> Grid:
        """Per bucket (each of *answers*, a future), per group of parts, a future of what
        *pick(answer, part)* gives each part of the group: what :meth:`to_parts` joins. An
        answer is small (a bucket's duplicates), so a task picks it apart for several parts."""
        groups = self.groups_of(parts, BACK_GROUP)
        columns = [
            [self.submit(_picked, pick, answer, group.start, group.stop) for group in groups]
            for answer in answers
        ]
        return Grid(columns, BACK_GROUP)

    def to_parts(self, grid: Grid, parts: int) -> list[Any]:
        """Per part, a future of its items from every bucket of *grid*, a list in bucket
        order."""
        shares = []
        for index, group in enumerate(self.groups_of(parts, grid.most)):
            joined = self.submit(_joined, *(column[index] for column in grid))
            shares += [self.submit(share, joined, place) for place in range(len(group))]
        return shares


def pieces_of(groups: Sequence[list[T]]) -> list[T]:
    """A bucket's pieces (its task's arguments from :meth:`Exchange.to_buckets`), in input
    order."""
    return [piece for group in groups for piece in group]


def share(items: Sequence[T], index: int) -> T:
    """Item *index* of a task's list (a bucket's piece, a part's share)."""
    return items[index]


def _alone(source: Sequence[T], bucket: int) -> list[T]:
    """One part's piece of *bucket*, as a group of one."""
    return [source[bucket]]


def _picked(pick: Callable[[Any, int], T], answer: Any, start: int, stop: int) -> list[T]:
    return [pick(answer, part) for part in range(start, stop)]


def _joined(*columns: list[T]) -> list[list[T]]:
    """Per part of a group, its items from every bucket, in bucket order."""
    return [list(items) for items in zip(*columns, strict=True)]


def key_pieces(batch: Batch, part: int, buckets: int) -> list[pl.DataFrame]:
    """The part's addressed rows as narrow (KEY, ROW, PART, CONSENT) pieces, one per bucket;
    each KEY is sent as its 128-bit hash (:func:`key_hash`)."""
    # The three columns first: a filter of the whole part copies all its columns.
    work = batch.work.select("KEY", ROW, "CONSENT").filter(pl.col("KEY") != "")
    bucket = partition_of(work.get_column("KEY"), buckets, level=KEY_LEVEL)
    narrow = work.select(
        key_hash(pl.col("KEY")), pl.col(ROW), pl.lit(part, pl.UInt32).alias(PART), "CONSENT"
    )
    return [narrow.filter(bucket == b) for b in range(buckets)]


def key_hash(key: pl.Expr) -> pl.Expr:
    """A KEY as two 64-bit hashes of it with different seeds (a struct, named KEY): 16 bytes
    where the address takes 40 or so, and two different addresses alike with a chance of
    about one in 10^20 among a billion. Duplicates are settled on it exactly as on the KEY."""
    hashes = key.hash(seed=_SEEDS[0]).alias("h1"), key.hash(seed=_SEEDS[1]).alias("h2")
    return pl.struct(*hashes).alias("KEY")


@dataclass(frozen=True)
class Settled:
    """One bucket's answer: per part, its rows that are duplicates or held by their address."""

    flags: dict[int, pl.DataFrame] = field(default_factory=dict)
    distinct: int = 0  # distinct non-empty KEYs of the bucket
    duplicates: int = 0

    def __sizeof__(self) -> int:
        return size_of(list(self.flags.values())) + 64


def settle_bucket(*groups: list[pl.DataFrame]) -> Settled:
    """The first row in input order of each KEY wins; the others are duplicates. A KEY one of
    whose rows is held back (CONSENT) is held back on all its rows, with its first such row's
    reason. (*groups*: the bucket's pieces, :func:`~.shuffle.Exchange.to_buckets`.)"""
    pieces = pieces_of(groups)
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
    by_part = narrow.partition_by(PART, as_dict=True, include_key=False)
    flags = {int(key[0]): frame for key, frame in by_part.items()}
    distinct = pairs.get_column("KEY").n_unique()
    return Settled(flags, distinct, len(repeats))


def flags_of(settled: Settled, part: int) -> pl.DataFrame | None:
    return settled.flags.get(part)


def counts_of(settled: Settled) -> tuple[int, int]:
    return settled.distinct, settled.duplicates


def mark_part(batch: Batch, flags: list[pl.DataFrame | None]) -> Batch:
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
