"""Stage 1, read: a list as batches of frames, keeping every original column.

:func:`open_list` looks at the input once (its kind, its columns, which of them holds the
addresses: :mod:`pipeline.stages.read.email_column`) and refuses what cannot be a list before any
work; :meth:`ListReader.batches` then hands out bounded batches of the original columns, each
with the rejects of its stretch of the file (line, reason, raw text), so that rows in = rows
out + rows rejected, always. CSV is read by :mod:`pipeline.stages.read.csv_source`, Parquet files
and datasets by :mod:`pipeline.stages.read.parquet_source`. Packed lists are unpacked once into the
run's spill folder first (:mod:`pipeline.stages.read.unpack`: gzip, bzip2, Zstandard, zip archives,
whose members are read as one list by :mod:`pipeline.stages.read.members`), and an Excel sheet is
written there as CSV (:mod:`pipeline.stages.read.workbook`). An object-store list (``s3://``) is
read the same way: Parquet streamed from the store, anything else copied once into the spill
folder.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Final, Protocol

import polars as pl

from pipeline.core.config import ReadConfig, StorageConfig
from pipeline.core.errors import InputError, UsageError
from pipeline.core.files.encodings import Decoding
from pipeline.core.files.tables import (
    HEAD_BYTES,
    FileKind,
    file_kind,
    read_head,
    refuse_kind,
)
from pipeline.core.schema import OUTPUT_COLUMNS, SOURCE_COLUMN, further_fields
from pipeline.stages.objects import (
    download,
    filesystem,
    is_remote_dataset,
    remote_shards,
)
from pipeline.stages.objects import (
    read_head as read_object_head,
)
from pipeline.stages.read.csv_source import REJECT_SCHEMA, CsvSource, ReadAgain
from pipeline.stages.read.email_column import (
    SAMPLE_ROWS,
    EmailColumn,
    Further,
    by_content,
    by_flag,
    by_name,
    other_address_columns,
)
from pipeline.stages.read.members import MemberSource, Part
from pipeline.stages.read.parquet_source import (
    ParquetPart,
    ParquetSource,
    is_dataset,
    read_part,
    shards,
)
from pipeline.stages.read.unpack import compression_of, decompress, workbook_budget, zip_members
from pipeline.stages.read.workbook import SheetSource, workbook_to_csv

_WHAT: Final = "input file"


class Source(Protocol):
    columns: list[str]
    encoding: str
    delimiter: str
    warnings: tuple[str, ...]
    exact: bool

    @property
    def schema(self) -> dict[str, pl.DataType]: ...

    @property
    def reject_schema(self) -> dict[str, pl.DataType]: ...

    @property
    def bytes_per_row(self) -> float: ...

    @property
    def expected_rows(self) -> int: ...

    def batches(self, rows: int) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]: ...


@dataclass(frozen=True)
class SourceInfo:
    """What the input turned out to be, for the summary."""

    format: str  # csv, parquet, xlsx or zip
    compression: str = ""  # gzip, bzip2 or zstd; "" when none
    members: tuple[str, ...] = ()  # the archive members read (zip)
    sheet: str = ""  # the sheet read (xlsx)
    rows_known: bool = False  # expected_rows is a count, not an estimate


@dataclass(frozen=True)
class ReadBatch:
    frame: pl.DataFrame  # the original columns (renamed where they clash), email as text
    rejects: pl.DataFrame  # line, reason, raw (and file, for an archive)


@dataclass(frozen=True)
class Choice:
    """How to read an input that holds several lists (which member, which sheet), how a text
    input's encoding is chosen (said, or detected), and the limits it is read within (the
    ``[read]`` settings)."""

    member: str | None = None
    sheet: str | None = None
    decoding: Decoding = field(default_factory=Decoding)
    limits: ReadConfig = field(default_factory=ReadConfig)
    header_row: int | None = None  # the line the header starts on; None: found
    further: tuple[str, ...] = ()  # further columns of addresses to check


class ListReader:
    """A list whose kind, columns and email column are known; its batches on demand."""

    def __init__(
        self,
        source: Source,
        info: SourceInfo | str,
        email_column: str | None,
        where: str,
        further: tuple[str, ...] = (),
    ) -> None:
        self._source = source
        self.info = info if isinstance(info, SourceInfo) else SourceInfo(info)
        self.source_format = self.info.format
        self.email = find_email(source, email_column, where)
        column = self.email.name
        named = [by_flag(source.columns, name, where).name for name in further]
        named = [n for n in dict.fromkeys(named) if n != column]
        if isinstance(source, MemberSource):
            for name in (column, *named):
                source.require(name)
        fields = [f for name in named for f in further_fields(name)]
        self._renamed = _collisions(source.columns, fields)
        self.further = Further(tuple((self._renamed.get(n, n), n) for n in named))
        self.others = other_address_columns(source.columns, _sample(source), (column, *named))
        self.email_column = self._renamed.get(column, column)
        self._original_email = column
        _check_type(source.schema[column], column)
        # Said only of a name exactly ours (a cleaned file cleaned again): that Email and
        # email become input_Email and input_email is the rule, documented, not news.
        self.warnings = source.warnings + tuple(
            f"Input column {old!r} is named like an output column; it is kept as {new!r}."
            for old, new in self._renamed.items()
            if old in OUTPUT_COLUMNS
        )
        if self.others:
            self.warnings += (unchecked(self.others, [column, *named]),)

    @property
    def encoding(self) -> str:
        return self._source.encoding

    @property
    def renamed(self) -> dict[str, str]:
        """Input columns kept under another name (see :func:`_collisions`)."""
        return dict(self._renamed)

    @property
    def delimiter(self) -> str:
        return self._source.delimiter

    @property
    def header_row(self) -> int:
        """The line (a sheet's row) the header starts on; 0 when the list has none (Parquet)."""
        return header_row_of(self._source)

    @property
    def titles(self) -> list[tuple[int, str, str]]:
        """The rejects above the header (title rows) of a delimited text: (line, reason, raw)."""
        return list(self._source.titles) if isinstance(self._source, CsvSource) else []

    @property
    def bytes_per_row(self) -> float:
        return self._source.bytes_per_row

    @property
    def expected_rows(self) -> int:
        """The rows the list should have (counted for CSV, from the metadata for Parquet)."""
        return self._source.expected_rows

    @property
    def known_rows(self) -> int | None:
        """The list's records when they were counted (not estimated); None otherwise."""
        exact = self.info.rows_known and not self._source.exact
        return self._source.expected_rows if exact else None

    @property
    def schema(self) -> dict[str, pl.DataType]:
        """The original columns' names (as output) and types, email column as text."""
        renamed = {self._renamed.get(k, k): v for k, v in self._source.schema.items()}
        renamed[self.email_column] = pl.String()
        return renamed

    @property
    def reject_schema(self) -> dict[str, pl.DataType]:
        return self._source.reject_schema

    def read_exactly(self) -> None:
        """From now on, read with the exact reader (after :class:`ReadAgain`)."""
        self._source.exact = True

    def batches(self, rows: int) -> Iterator[ReadBatch]:
        for frame, rejects in self._source.batches(rows):
            renamed = frame.rename(self._renamed) if self._renamed else frame
            yield ReadBatch(as_text(renamed, self.email_column), rejects)

    def parts(self, rows: int) -> list[PartRead] | None:
        """The list as parts of about *rows* rows that a Dask worker reads where it runs,
        planned from metadata alone (Parquet footers); None for a list only this process
        can read in order (CSV, packed inputs, archives, workbooks: read here)."""
        if not isinstance(self._source, ParquetSource) or self.info.compression:
            return None
        parts = []
        first = 0
        for part in self._source.parts(rows):
            parts.append(PartRead(part, first, self._renamed, self.email_column))
            first += part.rows
        return parts


@dataclass(frozen=True)
class PartRead:
    """One part of a list, read by whichever worker runs it: its rows as the reader's batch."""

    part: ParquetPart
    first_row: int  # the list's row number of its first row (the order key)
    renamed: dict[str, str]
    email_column: str

    @property
    def rows(self) -> int:
        return self.part.rows

    def read(self) -> ReadBatch:
        frame = read_part(self.part)
        renamed = frame.rename(self.renamed) if self.renamed else frame
        return ReadBatch(as_text(renamed, self.email_column), pl.DataFrame(schema=REJECT_SCHEMA))


def open_list(
    text: str,
    path: Path | str,
    spill: Path,
    email_column: str | None,
    storage: StorageConfig | None = None,
    choice: Choice | None = None,
) -> ListReader:
    """The list at *path* (given as *text*; a string is an object's URL), or InputError when it
    cannot be one. A CSV that needs transcoding, a packed list, or one in an object store gets
    its copy in *spill*."""
    choice = choice or Choice()
    if isinstance(path, str):
        return _open_object(path, spill, email_column, storage or StorageConfig(), choice)
    if is_dataset(text):
        _no_header_row(choice, text)
        return ListReader(ParquetSource(shards(text)), _PARQUET, email_column, text, choice.further)
    source, info = _open_file(path, spill, choice, text)
    return ListReader(source, info, email_column, text, choice.further)


_PARQUET: Final = SourceInfo("parquet", rows_known=True)


def _open_file(
    path: Path, spill: Path, choice: Choice, label: str, compression: str = ""
) -> tuple[Source, SourceInfo]:
    """A local file of any kind we read, unpacked into *spill* when it is packed."""
    kind = file_kind(path, read_head(path, HEAD_BYTES, _WHAT))
    if kind is FileKind.PARQUET:
        _no_header_row(choice, label)
        return ParquetSource([path]), replace(_PARQUET, compression=compression)
    limits = choice.limits
    longest = limits.max_field_bytes
    header = choice.header_row
    if kind is FileKind.TEXT:
        source = CsvSource(path, spill, label, choice.decoding, longest, header_row=header)
        return source, SourceInfo("csv", compression, rows_known=source.records is not None)
    packed = compression_of(kind)
    if packed is not None and not compression:
        return _open_file(
            decompress(path, kind, spill, limits, label), spill, choice, label, packed
        )
    if kind is FileKind.ZIP and not compression:
        members = zip_members(path, spill, choice.member, limits, label)
        parts = [
            Part(
                m.name,
                CsvSource(
                    m.path, spill, f"{label}:{m.name}", choice.decoding, longest, header_row=header
                ),
            )
            for m in members
        ]
        info = SourceInfo("zip", members=tuple(m.name for m in members))
        return MemberSource(parts), info
    if kind is FileKind.XLSX and not compression:
        workbook_budget(path, spill, limits, label)
        sheet = workbook_to_csv(path, spill, choice.sheet)
        labelled = f"{label} (sheet {sheet.name!r})"
        source = SheetSource(sheet, spill, labelled, longest, header)
        return source, SourceInfo("xlsx", sheet=sheet.name)
    raise refuse_kind(Path(label), kind, _WHAT)


def _open_object(
    url: str, spill: Path, email_column: str | None, storage: StorageConfig, choice: Choice
) -> ListReader:
    fs = filesystem(url, storage)
    if is_remote_dataset(url, fs):
        _no_header_row(choice, url)
        return ListReader(
            ParquetSource(remote_shards(url, fs), fs), _PARQUET, email_column, url, choice.further
        )
    name = spill / "object" / PurePosixPath(url).name  # for the kind's checks of a name
    kind = file_kind(name, read_object_head(url, fs, HEAD_BYTES))
    if kind is FileKind.PARQUET:
        _no_header_row(choice, url)
        return ListReader(ParquetSource([url], fs), _PARQUET, email_column, url, choice.further)
    if kind is FileKind.EMPTY or kind is FileKind.ARROW:
        raise refuse_kind(name, kind, _WHAT)
    source, info = _open_file(download(url, fs, spill), spill, choice, url)
    return ListReader(source, info, email_column, url, choice.further)


def unchecked(others: list[str], checked: list[str]) -> str:
    """The warning for columns that hold addresses and were not asked to be checked."""
    flags = " ".join(f"--email-column {_quoted(name)}" for name in (*checked, *others))
    these = (
        f"The column {listing(others)} holds"
        if len(others) == 1
        else (f"The columns {listing(others)} hold")
    )
    return (
        f"{these} addresses too, and {'was' if len(others) == 1 else 'were'} not checked. To "
        f"check every address column, name them all (the list's own first): {flags}"
    )


def _quoted(name: str) -> str:
    """*name* as a shell word."""
    return shlex.quote(name)


def _no_header_row(choice: Choice, label: str) -> None:
    if choice.header_row is not None:
        raise UsageError(
            f"--header-row {choice.header_row}: {label} is Parquet, whose columns are named "
            "in the file; it has no header row to point at. Drop --header-row."
        )


def header_row_of(source: Source) -> int:
    """The line the header of *source* starts on (a zip's: its first member's); 0: none."""
    if isinstance(source, MemberSource):
        return source.header_row
    return source.header_row if isinstance(source, CsvSource) else 0


@dataclass(frozen=True)
class WholeList:
    frame: pl.DataFrame
    rejects: pl.DataFrame
    reader: ListReader


def read_list(
    path: Path, spill: Path, email_column: str | None = None, choice: Choice | None = None
) -> WholeList:
    """The whole list in memory: for small lists (and tests of the reader)."""
    reader = open_list(str(path), path, spill, email_column, choice=choice)
    while True:
        try:
            parts = list(reader.batches(1_000_000))
            break
        except ReadAgain:
            reader.read_exactly()
    frames = [p.frame for p in parts] or [pl.DataFrame(schema=reader.schema)]
    empty = pl.DataFrame(schema=reader.reject_schema)
    rejects = [p.rejects for p in parts] or [empty]
    return WholeList(pl.concat(frames, how="vertical"), pl.concat(rejects), reader)


def find_email(source: Source, wanted: str | None, where: object) -> EmailColumn:
    """The email column: *wanted* if given, else by its header, else by its values."""
    if wanted is not None:
        return by_flag(source.columns, wanted, where)
    return by_name(source.columns) or by_content(_sample(source), where)


def find_email_column(columns: list[str], wanted: str | None, where: object) -> str:
    """The email column of *columns* by flag or header name (no values to look at)."""
    if wanted is not None:
        return by_flag(columns, wanted, where).name
    found = by_name(columns)
    if found is None:
        raise InputError(
            f"Cannot tell which column of {where} holds the email addresses. Its columns are: "
            f"{listing(columns)}. Name it with --email-column."
        )
    return found.name


def _sample(source: Source) -> pl.DataFrame:
    """The first rows of *source* (the exact reader's, when the fast one cannot say)."""
    try:
        return _first(source)
    except ReadAgain:
        exact, source.exact = source.exact, True
        try:
            return _first(source)
        finally:
            source.exact = exact


def _first(source: Source) -> pl.DataFrame:
    batches = source.batches(SAMPLE_ROWS)
    try:
        for frame, _ in batches:
            if frame.height:
                return frame
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()
    return pl.DataFrame(schema=source.schema)


def _collisions(columns: list[str], fields: Sequence[str] = ()) -> dict[str, str]:
    """Input columns named like an output column ignoring case (``Email``, ``email`` beside
    our ``EMAIL``; *fields*, the further address columns' own), and the names they are kept
    under: ``input_`` before their own name, as many times as it takes to clash with no other
    column, ignoring case."""
    ours = {name.casefold() for name in (*OUTPUT_COLUMNS, SOURCE_COLUMN, *fields)}
    theirs = {name.casefold() for name in columns}
    renamed: dict[str, str] = {}
    for name in columns:
        if name.casefold() in ours and name != SOURCE_COLUMN:
            new = f"input_{name}"
            while new.casefold() in ours | theirs:
                new = f"input_{new}"
            renamed[name] = new
            theirs.add(new.casefold())
    return renamed


def _check_type(dtype: pl.DataType, column: str) -> None:
    """A column of lists or records holds no address: refused before any work."""
    if dtype.is_nested() or dtype == pl.Object:
        raise InputError(
            f"The email column {column!r} holds {dtype} values (lists or records), not text. "
            "Name the column of plain addresses with --email-column."
        )


def as_text(frame: pl.DataFrame, column: str) -> pl.DataFrame:
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


def listing(columns: list[str]) -> str:
    return ", ".join(repr(c) for c in columns) if columns else "(none)"
