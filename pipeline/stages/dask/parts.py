"""What a Dask worker runs to write a clean's output, where the driver planned it
(:mod:`pipeline.stages.dask.staging`): each input part's rows as part files, then, for an
output of one file, the parts made into that file by one worker.

Every byte is the local engine's, by the same rules: a CSV part is its rows as
:class:`~pipeline.stages.write.sinks.CsvSink` appends them (each row's bytes depend on that row
alone, so parts joined in order after the header are the local file); a Parquet part or file is
written as :class:`~pipeline.stages.write.outputs.ParquetSink` writes; a workbook is built by
the local :class:`~pipeline.stages.write.sinks.XlsxSink`; rejects as
:class:`~pipeline.stages.write.outputs.RejectsSink` appends them; ``--split``'s rows are chosen by
:func:`~pipeline.stages.write.sinks.split_rows`.

The tasks' names start with ``write_``: the task stream shows every write on a worker.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.stages.dask.places import Place
from pipeline.stages.dask.shuffle import pieces_of
from pipeline.stages.dask.sizes import size_of
from pipeline.stages.state.dedupe import partition_of
from pipeline.stages.summary import Tally, top_domain_rows
from pipeline.stages.write.formats import OutputFormat
from pipeline.stages.write.outputs import (
    OutputPaths,
    guard,
    write_parquet,
    write_rejects_csv,
)
from pipeline.stages.write.sinks import XlsxSink, split_rows, write_csv_rows

OUTPUT: Final = "output"  # the role of the output's own rows (the others: --split's)
_COPY: Final = 1 << 22  # bytes copied at a time when CSV parts are joined


def part_name(index: int, suffix: str) -> str:
    """The file of input part *index* in a folder of parts (``part-00003.parquet``)."""
    return f"part-{index:05d}.{suffix}"


@dataclass(frozen=True)
class PartFiles:
    """Where the workers write each input part's rows, by role (the output, and with
    --split each verdict's), and how."""

    folders: dict[str, Place]  # role -> the folder of its parts
    schema: pa.Schema
    facts: dict[str, Any]  # the run's provenance, in every Parquet file's metadata
    csv: bool  # CSV parts (rows only: the header is the join's), else Parquet parts
    dataset: bool  # the folders are the outputs: part 0 is written even when empty

    @property
    def suffix(self) -> str:
        return "csv" if self.csv else "parquet"


@dataclass(frozen=True)
class Written:
    """What one input part's task wrote: its rows' tally (without the rows per domain), the
    roles it wrote a file for (a role none of its rows has gets none), and its rows per domain
    (None once taken out for the driver, or when none has a domain)."""

    tally: Tally
    roles: tuple[str, ...]
    domains: pl.DataFrame | None = None

    def __sizeof__(self) -> int:
        return (size_of(self.domains) if self.domains is not None else 0) + 1024


def write_part(frame: pl.DataFrame, index: int, files: PartFiles) -> Written:
    """Input part *index*'s output rows, in input order, written by this worker: the output's
    part file, and with --split each role's own; the driver gets their tally."""
    tally = Tally()
    tally.add(frame)
    roles = []
    for role, folder in files.folders.items():
        rows = frame if role == OUTPUT else frame.filter(split_rows(role))
        if rows.height or (files.dataset and index == 0):  # a dataset gets every column
            place = folder / part_name(index, files.suffix)
            with place.writing() as handle:
                if files.csv:
                    guard(place.where, lambda: write_csv_rows(rows, handle))  # noqa: B023
                else:
                    write_parquet([rows.to_arrow()], handle, files.schema, files.facts, place.where)
            roles.append(role)
    rest, domains = tally.parted()
    return Written(rest, tuple(roles), domains)


def written_tally(written: Written) -> Written:
    """What the driver gets of a part's write: all but its rows per domain (see
    :func:`domain_row_pieces`)."""
    return Written(written.tally, written.roles)


def domain_row_pieces(written: Written, buckets: int) -> list[pl.DataFrame | None]:
    """A part's rows per domain, split into *buckets* by the domain's stable hash
    (:func:`~pipeline.stages.state.dedupe.partition_of`)."""
    rows = written.domains
    if rows is None:
        return [None] * buckets
    bucket = partition_of(rows.get_column("DOMAIN"), buckets)
    return [rows.filter(bucket == b) for b in range(buckets)]


def top_domains_of(*groups: list[pl.DataFrame | None]) -> pl.DataFrame | None:
    """One domain bucket's top domains (:func:`~pipeline.stages.summary.top_domain_rows`)
    from every part's piece of it (*groups*: :func:`~.shuffle.Exchange.to_buckets`)."""
    present = [p for p in pieces_of(groups) if p is not None and p.height]
    return top_domain_rows(present) if present else None


@dataclass(frozen=True)
class RejectParts:
    """Where the workers write each part's rejects: a folder of CSV parts, each starting with
    *head* (the parts of a dataset's ``out.rejects/``) or with nothing (parts to be joined)."""

    folder: Place
    head: bytes
    dataset: bool  # part 0 is written even when empty: the folder always has the header


def write_reject_part(
    rejects: pl.DataFrame, index: int, parts: RejectParts
) -> tuple[Counter[str], bool]:
    """Part *index*'s rejected records written by this worker; their count by reason, and
    whether a file was written."""
    reasons = Counter(dict(rejects.get_column("reason").value_counts().iter_rows()))
    if not rejects.height and not (parts.dataset and index == 0):
        return reasons, False
    place = parts.folder / part_name(index, "csv")
    with place.writing() as handle:
        guard(place.where, lambda: handle.write(parts.head))
        guard(place.where, lambda: write_rejects_csv(rejects, handle))
    return reasons, True


def write_joined_parquet(
    parts: Sequence[Place], target: Place, schema: pa.Schema, facts: dict[str, Any]
) -> None:
    """The Parquet *parts*, in order, as the one file *target*, row group by row group (one
    in memory at a time). Pyarrow has no way to copy a row group's bytes, so each is read
    and written again: the cost of this pass (see docs/operations.md)."""
    with target.writing() as handle:
        write_parquet(_row_groups(parts), handle, schema, facts, target.where)


def _row_groups(parts: Sequence[Place]) -> Iterator[pa.Table]:
    for part in parts:
        with part.reading() as handle:
            source = pq.ParquetFile(handle)
            for index in range(source.num_row_groups):
                yield guard(part.where, lambda: source.read_row_group(index))  # noqa: B023


def write_joined_csv(parts: Sequence[Place], target: Place, head: bytes) -> None:
    """*head*, then the CSV *parts*' bytes in order, copied as they are, as the file *target*."""
    with target.writing() as handle:
        guard(target.where, lambda: handle.write(head))
        for part in parts:
            with part.reading() as source:
                guard(target.where, lambda: shutil.copyfileobj(source, handle, _COPY))


def write_workbook(parts: Sequence[Place], target: Place, columns: list[str]) -> None:
    """The workbook *target* built from the Parquet *parts*, read one part at a time in
    order, by the local engine's sink (a workbook cannot be joined from pieces: its rows live
    in one compressed sheet). Built beside a local target, or on this worker's disk and then
    uploaded."""
    with tempfile.TemporaryDirectory(prefix="listclean-") as spare:
        local = Path(target.where) if target.fs is None else Path(spare) / target.name
        paths = OutputPaths.for_output(local, fmt=OutputFormat.XLSX)
        with XlsxSink(paths, columns) as sink:
            for part in parts:
                with part.reading() as handle:
                    frame = guard(part.where, lambda: pl.read_parquet(handle))
                sink.write(frame)
            target.put(sink.finish())
