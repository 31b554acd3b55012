"""The enriched output as CSV or as an Excel workbook, written batch by batch like the Parquet
sink (:class:`~pipeline.stages.write.outputs.ParquetSink`): to a temporary name beside the target,
staged for the run's commit point (:meth:`stage`), which renames and uploads every file
together; removed if the run fails. :func:`open_sink` picks the sink for an output format.

- **CSV** is appended one batch at a time (polars' writer): UTF-8, ``,``, RFC 4180 quoting,
  ``true``/``false`` for booleans, empty for null. With a BOM on request, since Excel reads a
  CSV without one in the machine's ANSI code page (Microsoft: "Opening CSV UTF-8 files
  correctly in Excel"). Columns of lists or records (Parquet inputs) are written as JSON text.
- **xlsx** is streamed batch by batch (:mod:`pipeline.stages.write.sheet`: the sheet's XML made
  in polars, one batch in memory at a time), formatted for reading: the header bold, frozen
  and filtered, the columns as wide as their values. Text is always text (never a formula,
  number or link: a cell reading ``=HYPERLINK(...)`` stays inert); numbers, booleans, dates and
  date-times keep their types. A sheet has room for
  1,048,575 rows below the header and 32,767 characters a cell: a run that goes beyond either
  fails with a usage error and leaves no file (the row count is checked before any work when it
  is known, see :func:`~pipeline.stages.write.formats.check_capacity`).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final, Protocol, Self

import polars as pl

from pipeline.core.decide import held_back
from pipeline.core.errors import UsageError
from pipeline.core.schema import SCHEMA_VERSION
from pipeline.stages.write.formats import (
    EXCEL_MAX_CHARS,
    EXCEL_MAX_ROWS,
    OutputFormat,
    too_many_rows,
)
from pipeline.stages.write.outputs import (
    SPLIT,
    OutputPaths,
    ParquetSink,
    guard,
    make_folder,
    output_schema,
    sweep_stale,
)
from pipeline.stages.write.publish import Publication, tmp_of
from pipeline.stages.write.sheet import SheetWriter

_BOM: Final = b"\xef\xbb\xbf"


Write = Callable[[], None]
"""A batch's write, made ready beforehand (:meth:`Sink.ready`): called in the list's order."""


class Sink(Protocol):
    def write(self, frame: pl.DataFrame) -> None: ...
    def ready(self, frame: pl.DataFrame) -> Write:
        """*frame*'s write with what can be done beforehand done (encoding): any thread may
        make one, beside other batches'; the writes are then called in the list's order."""
        ...

    def note(self, facts: Mapping[str, Any]) -> None: ...
    def stage(self, into: Publication) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


def open_sink(
    paths: OutputPaths,
    originals: Mapping[str, pl.DataType],
    csv_bom: bool = False,
    further: Mapping[str, pl.DataType] | None = None,
) -> Sink:
    """The sink of *paths*' format for a list whose own columns are *originals* (and the
    further address columns' fields, *further*)."""
    schema = output_schema(originals, further)
    if paths.format is OutputFormat.CSV:
        return CsvSink(paths, schema.names, bom=csv_bom)
    if paths.format is OutputFormat.XLSX:
        return XlsxSink(paths, schema.names)
    return ParquetSink(paths, schema)


def open_outputs(
    paths: OutputPaths,
    originals: Mapping[str, pl.DataType],
    csv_bom: bool = False,
    split: bool = False,
    further: Mapping[str, pl.DataType] | None = None,
) -> Sink:
    """The output's sink; with *split*, one that also writes each verdict's rows to a file of
    their own (``list.clean.valid.parquet``...), in the output's format, and the rows the
    list's export holds back from sending to ``.suppressed``, never to ``.valid``."""
    full = open_sink(paths, originals, csv_bom, further)
    if not split:
        return full
    parts: dict[str, Sink] = {}
    try:
        for role in SPLIT:
            parts[role] = open_sink(paths.of_split(role), originals, csv_bom, further)
    except BaseException:
        for sink in (full, *parts.values()):
            sink.close()
        raise
    return SplitSink(full, parts)


def split_rows(role: str) -> pl.Expr:
    """Which output rows --split writes to the file of *role*: one row per distinct address,
    its first (a later duplicate is only in the full output), each to exactly one file; a
    held-back row (consent) to ``suppressed`` whatever its VERDICT."""
    held = held_back(pl.col("REASON"))
    verdict = SPLIT[role]
    chosen = held if verdict is None else (pl.col("VERDICT") == verdict) & ~held
    return chosen & ~pl.col("DUPLICATE")


class SplitSink:
    """The full output, and the rows of each split role in a sink of their own, all published
    at the end of the run (each one written, if empty, with every column)."""

    def __init__(self, full: Sink, parts: Mapping[str, Sink]) -> None:
        self._full = full
        self._parts = dict(parts)  # role -> sink

    @property
    def _all(self) -> list[Sink]:
        return [self._full, *self._parts.values()]

    def write(self, frame: pl.DataFrame) -> None:
        self.ready(frame)()

    def ready(self, frame: pl.DataFrame) -> Write:
        writes = [self._full.ready(frame)]
        writes += [sink.ready(frame.filter(split_rows(r))) for r, sink in self._parts.items()]

        def write() -> None:
            for each in writes:
                each()

        return write

    def note(self, facts: Mapping[str, Any]) -> None:
        for sink in self._all:
            sink.note(facts)

    def stage(self, into: Publication) -> None:
        for sink in self._all:
            sink.stage(into)

    def close(self) -> None:
        for sink in self._all:
            sink.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class _FileSink:
    """A file written under a temporary name, staged for the run's commit point."""

    def __init__(self, paths: OutputPaths) -> None:
        self._final = paths.parquet
        make_folder(self._final.parent)
        sweep_stale(self._final)
        self._tmp = tmp_of(self._final)

    def note(self, facts: Mapping[str, Any]) -> None:
        """A text file has no place for the run's provenance: summary.json holds it."""

    def close(self) -> None:
        """Drop what was written if it was not published."""
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def csv_head(columns: list[str], bom: bool = False) -> bytes:
    """What a CSV output starts with: the BOM if asked for, then the header line."""
    header = io.BytesIO()
    pl.DataFrame(schema=dict.fromkeys(columns, pl.String)).write_csv(header, include_header=True)
    return (_BOM if bom else b"") + header.getvalue()


def write_csv_rows(frame: pl.DataFrame, target: IO[bytes]) -> None:
    """*frame*'s rows appended to a CSV output (or a Dask worker's part of one): each row's
    bytes depend on that row alone, so parts joined in order are the file a local run writes."""
    as_flat(frame).write_csv(target, include_header=False)


class CsvSink(_FileSink):
    def __init__(self, paths: OutputPaths, columns: list[str], bom: bool = False) -> None:
        super().__init__(paths)
        self._handle: IO[bytes] = guard(self._final, lambda: self._tmp.open("wb"))
        guard(self._final, lambda: self._handle.write(csv_head(columns, bom)))

    def write(self, frame: pl.DataFrame) -> None:
        self.ready(frame)()

    def ready(self, frame: pl.DataFrame) -> Write:
        encoded = io.BytesIO()
        write_csv_rows(frame, encoded)

        def write() -> None:
            guard(self._final, lambda: self._handle.write(encoded.getbuffer()))

        return write

    def stage(self, into: Publication) -> None:
        guard(self._final, self._handle.close)
        into.stage(self._tmp, self._final)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._handle.close()
        super().close()


class XlsxSink(_FileSink):
    """The output as a workbook of one sheet, ``listclean``, formatted for reading (the header
    bold, frozen and filtered, columns as wide as their values: see
    :mod:`pipeline.stages.write.sheet`), whichever process writes it."""

    def __init__(self, paths: OutputPaths, columns: list[str]) -> None:
        super().__init__(paths)
        properties = {"listclean.schema_version": SCHEMA_VERSION}
        self._sheet = guard(
            self._final, lambda: SheetWriter(self._tmp, columns, "listclean", properties)
        )
        self._closed = False

    def write(self, frame: pl.DataFrame) -> None:
        if self._sheet.written - 1 + frame.height > EXCEL_MAX_ROWS:
            raise too_many_rows(f"more than {EXCEL_MAX_ROWS:,}")
        flat = as_flat(frame)
        _check_lengths(flat)
        guard(self._final, lambda: self._sheet.write(flat))

    def ready(self, frame: pl.DataFrame) -> Write:
        return lambda: self.write(frame)  # the sheet's XML is made in order

    def stage(self, into: Publication) -> None:
        into.stage(self.finish(), self._final)

    def finish(self) -> Path:
        """The workbook written whole, under its temporary name (returned)."""
        self._closed = True
        guard(self._final, self._sheet.finish)
        return self._tmp

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._sheet.close()
        super().close()


def as_flat(frame: pl.DataFrame) -> pl.DataFrame:
    """*frame* with the columns text files cannot hold as JSON (lists, records) or as text
    (bytes, decoded as UTF-8 with escapes)."""
    changes: list[pl.Expr | pl.Series] = []
    for name, dtype in frame.schema.items():
        if dtype.is_nested():
            encoded = pl.struct(pl.col(name).alias("v")).struct.json_encode()
            changes.append(encoded.str.slice(5).str.strip_suffix("}").alias(name))
        elif dtype == pl.Binary or dtype == pl.Object:
            changes.append(_decoded(frame.get_column(name)))
    return frame.with_columns(changes) if changes else frame


def _decoded(values: pl.Series) -> pl.Series:
    texts = [
        v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else v
        for v in values.to_list()
    ]
    return pl.Series(values.name, texts, dtype=pl.String)


def _check_lengths(cells: pl.DataFrame) -> None:
    for name, dtype in cells.schema.items():
        if dtype != pl.String:
            continue
        longest = cells.get_column(name).str.len_chars().max()
        if isinstance(longest, int) and longest > EXCEL_MAX_CHARS:
            raise UsageError(
                f"The column {name!r} holds a value of {longest:,} characters and an Excel "
                f"cell holds at most {EXCEL_MAX_CHARS:,}. Write .csv or .parquet instead."
            )
