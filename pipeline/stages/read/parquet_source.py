"""A Parquet list, one file or a dataset of shards, read batch by batch in bounded memory.

A dataset is a directory of ``*.parquet`` files (how BigQuery, Snowflake and Spark export a
table) or a glob of them; its shards are read in the order of their names, which is the order
those tools number them in (``part-00000``, ``part-00001``, ...). Every shard must have the
first one's columns; a shard's types are cast to the first one's. Shards in an object store
(``s3://``) are read through their fsspec filesystem, streamed: only the footer and the row
groups being read are fetched.
"""

from __future__ import annotations

import glob
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.errors import InputError
from pipeline.core.files.tables import PARQUET_MAGIC, check_parquet
from pipeline.stages.objects import is_glob
from pipeline.stages.read.csv_source import REJECT_SCHEMA

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

Shard = Path | str  # a local file, or an object's URL (read through the source's filesystem)


def is_dataset(text: str) -> bool:
    """A directory, or a glob pattern: a list of Parquet shards."""
    return Path(text).is_dir() or is_glob(text)


def shards(text: str) -> list[Path]:
    """The Parquet files of a dataset, in name order; InputError when there are none."""
    path = Path(text)
    found = sorted(path.glob("*.parquet")) if path.is_dir() else sorted(map(Path, glob.glob(text)))
    files = [p for p in found if p.is_file()]
    if not files:
        what = "is a directory that holds" if path.is_dir() else "matches"
        raise InputError(
            f"{text} {what} no Parquet file (*.parquet). Pass a CSV or Parquet file, a folder "
            "of Parquet shards, or a glob of them such as 'export/part-*.parquet'."
        )
    return files


@dataclass(frozen=True)
class ParquetPart:
    """Consecutive row groups of one shard, planned from its footer: what one worker reads."""

    shard: Shard
    groups: tuple[int, ...]  # (): all of the shard's
    rows: int
    schema: pa.Schema  # the first shard's: every shard is cast to it
    fs: AbstractFileSystem | None = None  # an object store's filesystem (s3://)


class ParquetSource:
    """One Parquet file or the shards of a dataset, as batches of polars frames."""

    def __init__(self, files: Sequence[Shard], fs: AbstractFileSystem | None = None) -> None:
        self.files = list(files)
        self._fs = fs
        self.encoding = self.delimiter = ""
        self.warnings: tuple[str, ...] = ()
        self.exact = False
        self._schema = self._open(files[0]).schema_arrow
        _check_names(files[0], self._schema.names)
        empty = pl.from_arrow(self._schema.empty_table())
        assert isinstance(empty, pl.DataFrame)
        self._polars_schema = dict(empty.schema)
        self.columns = list(self._polars_schema)
        for shard in files[1:]:
            if self._open(shard).schema_arrow.names != self._schema.names:
                raise InputError(
                    f"The Parquet shard {shard} has other columns than {files[0]}: every "
                    "shard of a dataset must have the same columns."
                )

    @property
    def schema(self) -> dict[str, pl.DataType]:
        return self._polars_schema

    @property
    def reject_schema(self) -> dict[str, pl.DataType]:
        return {name: dtype() for name, dtype in REJECT_SCHEMA.items()}

    @property
    def expected_rows(self) -> int:
        return sum(self._open(shard).metadata.num_rows for shard in self.files)

    @property
    def bytes_per_row(self) -> float:
        """Uncompressed bytes per row, from the first shard's metadata."""
        meta = self._open(self.files[0]).metadata
        size: int = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        rows: int = meta.num_rows
        return size / max(1, rows)

    def batches(self, rows: int) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
        no_rejects = pl.DataFrame(schema=REJECT_SCHEMA)
        for shard in self.files:
            try:
                for batch in self._open(shard).iter_batches(batch_size=rows):
                    table = pa.Table.from_batches([batch]).cast(self._schema)
                    frame = pl.from_arrow(table)
                    assert isinstance(frame, pl.DataFrame)
                    yield frame, no_rejects
            except (OSError, pa.ArrowException) as exc:
                raise InputError(
                    f"Cannot read {shard} as Parquet: {exc}. Check that the file is complete."
                ) from exc

    def parts(self, rows: int) -> list[ParquetPart]:
        """The list as parts of about *rows* rows, from the footers alone: whole row groups
        (a row group is how the file was written, so no part is read twice), in input order;
        a row group over *rows* is a part of its own."""
        planned: list[ParquetPart] = []
        for shard in self.files:
            meta = self._open(shard).metadata
            groups: list[int] = []
            held = 0
            for index in range(meta.num_row_groups):
                size = meta.row_group(index).num_rows
                if groups and held + size > rows:
                    planned.append(ParquetPart(shard, tuple(groups), held, self._schema, self._fs))
                    groups, held = [], 0
                groups.append(index)
                held += size
            if held:
                planned.append(ParquetPart(shard, tuple(groups), held, self._schema, self._fs))
        return planned

    def _open(self, shard: Shard) -> pq.ParquetFile:
        return open_shard(shard, self._fs)


def open_shard(shard: Shard, fs: AbstractFileSystem | None) -> pq.ParquetFile:
    """A shard's footer read (a local file, or an object through its filesystem)."""
    if isinstance(shard, Path):
        check_parquet(shard)
        return _parquet_file(shard, shard)
    assert fs is not None, "an object's URL is read through its filesystem"
    handle = fs.open(shard, "rb")
    if handle.read(len(PARQUET_MAGIC)) != PARQUET_MAGIC:
        raise InputError(
            f"{shard} is not a Parquet file (it does not start with PAR1). Check the "
            "object, or pass a CSV or Parquet list."
        )
    handle.seek(0)
    return _parquet_file(handle, shard)


def _check_names(shard: Shard, names: list[str]) -> None:
    """A Parquet file may hold two columns of one name (pyarrow writes them); a list may not:
    which of them holds the addresses, and which name would each have in the output?"""
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        shown = ", ".join(repr(name) for name in twice)
        raise InputError(
            f"The Parquet file {shard} has more than one column named {shown}: a list's column "
            "names must be unique. Rename or drop the extra columns where the file is made, "
            "and write it again."
        )


def _parquet_file(source: object, shard: Shard) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(source)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(
            f"Cannot read {shard} as Parquet: {exc}. Check that the file is complete."
        ) from exc


def read_part(part: ParquetPart) -> pl.DataFrame:
    """The rows of *part*, read where it runs (a Dask worker), typed as the first shard."""
    try:
        shard = open_shard(part.shard, part.fs)
        table = shard.read_row_groups(list(part.groups)) if part.groups else shard.read()
        frame = pl.from_arrow(table.cast(part.schema))
    except (OSError, pa.ArrowException) as exc:
        raise InputError(
            f"Cannot read {part.shard} as Parquet: {exc}. Check that the file is complete."
        ) from exc
    assert isinstance(frame, pl.DataFrame)
    return frame
