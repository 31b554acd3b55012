"""What a Dask worker runs for a clean (:mod:`pipeline.stages.dask.engine`).

Each task is a plain function of picklable values: the same stage functions the local runner
calls (:mod:`pipeline.stages.steps`, the engine's steps), applied to one input part (its rows
stay on the worker that read them). The duplicate shuffle between parts is
:mod:`pipeline.stages.dask.shuffle`, the domains' :mod:`pipeline.stages.dask.domains`, the
address checks' :mod:`pipeline.stages.dask.checks`; the caches and stores a task reads are
where the cluster shares them (:mod:`pipeline.stages.dask.stores`).
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from pipeline.core.calibration.types import Calibration
from pipeline.core.config import ListsConfig
from pipeline.core.domains.step import resolvable_domains
from pipeline.core.lists import DomainLists, load_lists
from pipeline.stages.base import Batch, ReadsAgain
from pipeline.stages.dask.shuffle import NO_FLAGS, ROW, marked
from pipeline.stages.dask.stores import Stores, bounce_source
from pipeline.stages.job import CleanJob
from pipeline.stages.read.csv_source import ReadAgain
from pipeline.stages.read.email_column import Further
from pipeline.stages.read.parquet_source import ParquetPart
from pipeline.stages.read.pin import input_changed
from pipeline.stages.read.ranges import ByteRange, read_range
from pipeline.stages.read.reader import ListReader, PartRead
from pipeline.stages.runner import open_reader
from pipeline.stages.steps import decide_rows, list_domains, normalize

NOTHING_HELD = pl.DataFrame()  # decide_rows: CONSENT is already the whole list's


@functools.cache
def worker_lists(config: ListsConfig) -> DomainLists:
    """The shipped lists, loaded once per worker process."""
    return load_lists(config.extra_disposable, config.extra_free, config.extra_legitimate)


def scan_batch(frame: pl.DataFrame, email_column: str, first_row: int, lists: ListsConfig) -> Batch:
    """A read batch normalized where it is; each row keeps its row number in the list."""
    work = normalize(frame, email_column, worker_lists(lists))
    rows = pl.int_range(first_row, first_row + frame.height, dtype=pl.UInt64, eager=True)
    return Batch(frame, work.with_columns(rows.alias(ROW)))


def scan_part(read: PartRead, lists: ListsConfig, thin: bool = False) -> Batch:
    """A part of the list read on this worker (the driver planned it from metadata), then
    as :func:`scan_batch`: no row of it passes through the driver. *thin*: held narrow until
    the write (:func:`held_thin`), which reads it again (:class:`PartAgain`)."""
    got = read.read()
    batch = scan_batch(got.frame, read.email_column, read.first_row, lists)
    if not thin:
        return batch
    return held_thin(batch, PartAgain(read), read.email_column, read.first_row, lists)


@dataclass(frozen=True)
class PartAgain:
    """A Parquet part's own columns, read again."""

    read: PartRead

    def frame(self) -> pl.DataFrame:
        return self.read.read().frame


@dataclass(frozen=True)
class RangeAgain:
    """A byte range's own columns, read again as the range was first read."""

    part: ByteRange
    exact: bool

    def frame(self) -> pl.DataFrame:
        return read_range(self.part, self.exact).frame


# What a part held narrow keeps of its work columns until its duplicates are marked: what the
# duplicate shuffle reads (the address KEY, the row number, CONSENT). Then it keeps the
# shuffle's flags alone (:func:`~pipeline.stages.dask.shuffle.mark_part`).
NARROW = ("KEY", ROW, "CONSENT")


@dataclass(frozen=True)
class Narrow:
    """How a part held narrow is made whole again: its own columns read *again*, normalized
    again by the same rules (so the same work columns), beside what the shuffle set. It keeps
    a *digest* of the part's addresses in order, which the rows read again must match, and,
    until they are taken (:func:`part_domains`), the part's resolvable domains found at the
    read."""

    again: ReadsAgain
    email_column: str
    first_row: int
    lists: ListsConfig
    rows: int
    digest: int
    domains: pl.Series | None = None

    def __sizeof__(self) -> int:
        held = self.domains.estimated_size() if self.domains is not None else 0
        return int(held) + 256

    def frame(self) -> pl.DataFrame:
        return self.again.frame()


def held_thin(
    batch: Batch, again: ReadsAgain, email_column: str, first_row: int, lists: ListsConfig
) -> Batch:
    """*batch* held narrow from the read to the write: the list's own columns dropped (read
    *again* at the write) and the work columns cut to :data:`NARROW` (normalized again at the
    write); once its duplicates are marked, only the shuffle's flags stay."""
    work = batch.work
    domains = pl.Series("DOMAIN", resolvable_domains(work), pl.String)
    digest = key_digest(work, first_row)
    recipe = Narrow(again, email_column, first_row, lists, work.height, digest, domains)
    return Batch(batch.originals.clear(), work.select(NARROW), recipe)


def key_digest(work: pl.DataFrame, first_row: int) -> int:
    """A 64-bit digest of the part's (place in the part, KEY) pairs: the same wherever the part
    starts in the list (:func:`numbered`)."""
    place = (pl.col(ROW) - first_row).alias("place")
    return int(work.select(pl.struct(place, "KEY").hash(seed=3).sum()).item())


def numbered(batch: Batch, first_row: int) -> Batch:
    """*batch*, scanned as if it began the list, with its rows numbered from *first_row*
    (known once every range before it has reported its rows)."""
    work = batch.work.with_columns(pl.col(ROW) + first_row)
    again = batch.again
    if isinstance(again, Narrow):
        again = dataclasses.replace(again, first_row=again.first_row + first_row)
    return Batch(batch.originals, work, again)


def part_domains(part: Batch, further: Further, lists: ListsConfig) -> pl.Series:
    """The part's distinct resolvable domains (its further address columns' too): those a part
    held narrow found at its read."""
    if isinstance(part.again, Narrow) and part.again.domains is not None:
        return part.again.domains
    found = list_domains(part.originals, part.work, further, worker_lists(lists))
    return pl.Series("DOMAIN", found, pl.String)


def slimmed(part: Batch) -> Batch:
    """A part held narrow without its shuffle columns and its domains, once its key pieces
    are cut and its domains taken (a whole part as it is): from here to the write it holds
    the shuffle's flags alone (:func:`~pipeline.stages.dask.shuffle.mark_part`)."""
    if not isinstance(part.again, Narrow):
        return part
    return Batch(part.originals, NO_FLAGS, dataclasses.replace(part.again, domains=None))


def restored(part: Batch) -> Batch:
    """*part* whole: its own columns, read again when it was held without them, and its work
    columns normalized again when it was held narrow (with what the shuffle set). Rows read
    again that are not those the read found are a changed input."""
    recipe = part.again
    if not isinstance(recipe, Narrow):  # held whole: nothing to read again
        return part
    frame = recipe.frame()
    if frame.height != recipe.rows:
        held = f"a part read again for the write held {frame.height:,} rows, not {recipe.rows:,}"
        raise input_changed("", held)
    work = scan_batch(frame, recipe.email_column, recipe.first_row, recipe.lists).work
    if key_digest(work, recipe.first_row) != recipe.digest:
        raise input_changed("", "a part read again for the write holds other addresses")
    if "KEY" in part.work.columns:  # its duplicates not marked yet
        return Batch(frame, work)
    return Batch(frame, marked(work, part.work))


@dataclass(frozen=True)
class Converted:
    """A list read in order by one worker, as Parquet shards the run's tasks read in parallel."""

    parts: list[PartRead]
    rejects: list[str]  # Parquet files of its rejects, in input order
    rejected: int


def convert(job: CleanJob, staging: str, rows: int) -> Converted:
    """A list only one process can read in order (CSV, packed, an archive, a workbook), read
    on this worker by the local engine's reader (the same rows, rejects and line numbers)
    batch by batch into shards in *staging*: bounded memory, and nothing through the driver."""
    with tempfile.TemporaryDirectory(prefix="listclean-") as spill:
        reader = open_reader(job, Path(spill))
        while True:
            try:
                return _convert(reader, Path(staging), rows)
            except ReadAgain:
                reader.read_exactly()


def _convert(reader: ListReader, staging: Path, rows: int) -> Converted:
    shutil.rmtree(staging, ignore_errors=True)  # what an attempt before this one wrote
    staging.mkdir(parents=True)
    done = Converted([], [], 0)
    first = rejected = 0
    for index, read in enumerate(reader.batches(rows)):
        if read.rejects.height:
            done.rejects.append(str(staging / f"rejects-{index:05d}.parquet"))
            read.rejects.write_parquet(done.rejects[-1])
            rejected += read.rejects.height
        if read.frame.height:
            shard = staging / f"part-{index:05d}.parquet"
            table = read.frame.to_arrow()
            pq.write_table(table, shard)
            part = ParquetPart(shard, (), read.frame.height, table.schema)
            done.parts.append(PartRead(part, first, {}, reader.email_column))
            first += read.frame.height
    return Converted(done.parts, done.rejects, rejected)


def read_rejects(name: str) -> pl.DataFrame:
    """One batch's rejects, as :func:`convert` left them beside its shards."""
    return pl.read_parquet(name)


def one(part: Batch) -> int:
    """1, once *part* is there: the driver counts parts as they are done, without their rows."""
    return 1


def decide_partition(
    part: Batch,
    table: pl.DataFrame,
    stores: Stores,
    answers: pl.DataFrame | None,
    further: Further,
    lists: ListsConfig,
    calibration: Calibration | None = None,
) -> pl.DataFrame:
    """The part's output rows, in input order (with its further address columns' fields),
    SCORE calibrated by the list's *calibration*, with the bounce ledger's flags read here
    (:func:`~pipeline.stages.dask.stores.bounce_source`). Its CONSENT already holds what the
    whole list holds back (:func:`~pipeline.stages.dask.shuffle.mark_part`)."""
    source = bounce_source(stores)
    scope = source.scope() if source is not None else None
    more = (further, worker_lists(lists))
    whole = restored(part)
    return decide_rows(whole, table, source, scope, answers, NOTHING_HELD, more, calibration)


def same(value: Any) -> Any:
    """*value* as a task's result: held by a worker, computed again if that worker is lost."""
    return value
