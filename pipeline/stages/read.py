"""Stage 1, read: a CSV or Parquet list as batches of frames, keeping every original column.

:func:`open_list` looks at the input once (its kind, its columns, which of them holds the
addresses) and refuses what cannot be a list before any work; :meth:`ListReader.batches` then
hands out bounded batches of the original columns, each with the rejects of its stretch of the
file (line, reason, raw text), so that rows in = rows out + rows rejected, always. CSV is read
by :mod:`pipeline.stages.csv_source`, Parquet files and datasets by
:mod:`pipeline.stages.parquet_source`. An object-store list (``s3://``) is read the same way:
Parquet streamed from the store, a CSV copied once into the run's spill folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final, Protocol

import polars as pl

from pipeline.core.config import StorageConfig
from pipeline.core.errors import InputError
from pipeline.core.schema import OUTPUT_COLUMNS
from pipeline.core.tables import (
    HEAD_BYTES,
    FileKind,
    file_kind,
    find_column,
    read_head,
    refuse_kind,
)
from pipeline.stages.csv_source import REJECT_SCHEMA, CsvSource, ReadAgain
from pipeline.stages.objects import (
    download,
    filesystem,
    is_remote_dataset,
    remote_shards,
)
from pipeline.stages.objects import (
    read_head as read_object_head,
)
from pipeline.stages.parquet_source import ParquetSource, is_dataset, shards

_WHAT: Final = "input file"
# Header names we recognise as the email column, compared without case, spaces, - or _.
_EMAIL_NAMES: Final = ("email", "emailaddress", "mail", "emailaddr", "mailaddress")


class Source(Protocol):
    columns: list[str]
    encoding: str
    delimiter: str
    warnings: tuple[str, ...]
    exact: bool

    @property
    def schema(self) -> dict[str, pl.DataType]: ...

    @property
    def bytes_per_row(self) -> float: ...

    @property
    def expected_rows(self) -> int: ...

    def batches(self, rows: int) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]: ...


@dataclass(frozen=True)
class ReadBatch:
    frame: pl.DataFrame  # the original columns (renamed where they clash), email as text
    rejects: pl.DataFrame  # line, reason, raw


class ListReader:
    """A list whose kind, columns and email column are known; its batches on demand."""

    def __init__(
        self, source: Source, source_format: str, email_column: str | None, where: str
    ) -> None:
        self._source = source
        self.source_format = source_format
        column = find_email_column(source.columns, email_column, where)
        self._renamed = _collisions(source.columns)
        self.email_column = self._renamed.get(column, column)
        self._original_email = column
        _check_type(source.schema[column], column)
        self.warnings = source.warnings + tuple(
            f"Input column {old!r} is named like an output column; it is kept as {new!r}."
            for old, new in self._renamed.items()
        )

    @property
    def encoding(self) -> str:
        return self._source.encoding

    @property
    def delimiter(self) -> str:
        return self._source.delimiter

    @property
    def bytes_per_row(self) -> float:
        return self._source.bytes_per_row

    @property
    def expected_rows(self) -> int:
        """The rows the list should have (counted for CSV, from the metadata for Parquet)."""
        return self._source.expected_rows

    @property
    def schema(self) -> dict[str, pl.DataType]:
        """The original columns' names (as output) and types, email column as text."""
        renamed = {self._renamed.get(k, k): v for k, v in self._source.schema.items()}
        renamed[self.email_column] = pl.String()
        return renamed

    def read_exactly(self) -> None:
        """From now on, read with the exact reader (after :class:`ReadAgain`)."""
        self._source.exact = True

    def batches(self, rows: int) -> Iterator[ReadBatch]:
        for frame, rejects in self._source.batches(rows):
            renamed = frame.rename(self._renamed) if self._renamed else frame
            yield ReadBatch(_as_text(renamed, self.email_column), rejects)


def open_list(
    text: str,
    path: Path | str,
    spill: Path,
    email_column: str | None,
    storage: StorageConfig | None = None,
) -> ListReader:
    """The list at *path* (given as *text*; a string is an object's URL), or InputError when it
    cannot be one. A CSV that needs transcoding, or lies in an object store, gets its copy in
    *spill*."""
    if isinstance(path, str):
        return _open_object(path, spill, email_column, storage or StorageConfig())
    if is_dataset(text):
        return ListReader(ParquetSource(shards(text)), "parquet", email_column, text)
    kind = file_kind(path, read_head(path, HEAD_BYTES, _WHAT))
    if kind is FileKind.PARQUET:
        return ListReader(ParquetSource([path]), "parquet", email_column, text)
    if kind is FileKind.TEXT:
        return ListReader(CsvSource(path, spill), "csv", email_column, text)
    raise refuse_kind(path, kind, _WHAT)


def _open_object(
    url: str, spill: Path, email_column: str | None, storage: StorageConfig
) -> ListReader:
    fs = filesystem(url, storage)
    if is_remote_dataset(url, fs):
        return ListReader(ParquetSource(remote_shards(url, fs), fs), "parquet", email_column, url)
    name = spill / "object" / PurePosixPath(url).name  # for the kind's checks of a name
    kind = file_kind(name, read_object_head(url, fs, HEAD_BYTES))
    if kind is FileKind.PARQUET:
        return ListReader(ParquetSource([url], fs), "parquet", email_column, url)
    if kind is FileKind.TEXT:
        return ListReader(CsvSource(download(url, fs, spill), spill), "csv", email_column, url)
    raise refuse_kind(name, kind, _WHAT)


@dataclass(frozen=True)
class WholeList:
    frame: pl.DataFrame
    rejects: pl.DataFrame
    reader: ListReader


def read_list(path: Path, spill: Path, email_column: str | None = None) -> WholeList:
    """The whole list in memory: for small lists (and tests of the reader)."""
    reader = open_list(str(path), path, spill, email_column)
    try:
        parts = list(reader.batches(1_000_000))
    except ReadAgain:
        reader.read_exactly()
        parts = list(reader.batches(1_000_000))
    frames = [p.frame for p in parts] or [pl.DataFrame(schema=reader.schema)]
    rejects = [p.rejects for p in parts] or [pl.DataFrame(schema=REJECT_SCHEMA)]
    return WholeList(pl.concat(frames, how="vertical"), pl.concat(rejects), reader)


def find_email_column(columns: list[str], wanted: str | None, where: object) -> str:
    """The email column: *wanted* if given (exact, then case-insensitive), else by name."""
    if wanted is not None:
        matches = [c for c in columns if c == wanted] or [
            c for c in columns if c.casefold() == wanted.casefold()
        ]
        if matches:
            return matches[0]
        raise InputError(
            f"{where} has no column named {wanted!r}. Its columns are: {_listing(columns)}. "
            "Pass one of them with --email-column."
        )
    found = find_column(columns, _EMAIL_NAMES)
    if found is not None:
        return found
    raise InputError(
        f"Cannot tell which column of {where} holds the email addresses. Its columns are: "
        f"{_listing(columns)}. Name it with --email-column."
    )


def _listing(columns: list[str]) -> str:
    return ", ".join(repr(c) for c in columns) if columns else "(none)"


def _collisions(columns: list[str]) -> dict[str, str]:
    """Input columns named like an output column, and the names they are kept under."""
    renamed: dict[str, str] = {}
    for name in columns:
        if name in OUTPUT_COLUMNS:
            new = f"input_{name}"
            while new in columns or new in renamed.values():
                new = f"input_{new}"
            renamed[name] = new
    return renamed


def _check_type(dtype: pl.DataType, column: str) -> None:
    """A column of lists or records holds no address: refused before any work."""
    if dtype.is_nested() or dtype == pl.Object:
        raise InputError(
            f"The email column {column!r} holds {dtype} values (lists or records), not text. "
            "Name the column of plain addresses with --email-column."
        )


def _as_text(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """*frame* with its email column as text. Numbers and nulls are cast; bytes are decoded as
    UTF-8, a value that is not UTF-8 spelled with \\x escapes (so it is never an address)."""
    dtype = frame.schema[column]
    if dtype == pl.String:
        return frame
    if dtype == pl.Binary:  # rare: decoded once per distinct value
        values = frame.get_column(column)
        distinct = values.drop_nulls().unique().to_list()
        texts = {v: v.decode("utf-8", errors="backslashreplace") for v in distinct}
        decoded = values.replace_strict(texts, default=None, return_dtype=pl.String)
        return frame.with_columns(decoded.alias(column))
    return frame.with_columns(pl.col(column).cast(pl.String))
