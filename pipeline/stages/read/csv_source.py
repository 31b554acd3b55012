"""A delimited-text list, read batch by batch in bounded memory.

Before the first batch the file is made plain UTF-8 (:mod:`pipeline.core.files.utf8`). Its
records are counted without parsing it
(:func:`~pipeline.core.files.delimited.count_records_in`), on a thread of its own while the
long fields are looked for (below): both spend most of their time outside the interpreter's
lock.

Batches come from polars' batched reader while that reader can be trusted: it reads every record
as a row, so the rows it returns must add up to the records counted. When they do not (a ragged
row, a lone CR ending a line, a quote that never closes), :class:`ReadAgain` asks the caller to
start over with the exact reader (:class:`~pipeline.core.files.delimited.Table`), which accounts for
every line and puts what it cannot use in the rejects, with the line and the raw text.

Rows that are not records (empty rows, report footers: :mod:`pipeline.stages.read.footers`) go to
the rejects with their line and raw text too. The fast reader rejects them itself when every
record of the file is one line (as many lines as records, and no CR but in CRLF): its rows are
then the file's lines, and one more pass over the file, at the end, finds their text; a later
read of the same file (a run's second pass) drops those rows by their numbers and gives the same
rejects, without looking for them again. Else the exact reader reads the file, as it knows
both.

A record with a field longer than ``read.max_field_bytes`` is never read: it is found at the
byte level first (:mod:`pipeline.core.files.long_fields`), the file is read through a stream that
leaves it out (a ``""`` stands in, one line), and the exact reader puts it in the rejects as
``field_too_long`` with its line in the file and its first bytes as the raw text.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO, Final

import polars as pl

from pipeline.core.errors import InputError
from pipeline.core.files.delimited import Table, count_records_in, lines_of, sniff_delimiter
from pipeline.core.files.encodings import Decoding
from pipeline.core.files.long_fields import SetAside, Without, long_records, size_without
from pipeline.core.files.utf8 import BOM, CHUNK, SNIFF, as_utf8, chunks
from pipeline.stages.read.footers import EMPTY_ROW, blank_text, filler_kind

REJECT_SCHEMA: Final = {"line": pl.Int64, "reason": pl.String, "raw": pl.String}
FIELD_TOO_LONG: Final = "field_too_long"
# The rows that are not records the fast reader keeps until the end of its read (their lines
# and text are found then), at most: a file with more (a double-spaced export) is read by the
# exact reader, which puts them in the rejects batch by batch.
_MOST_FILLERS: Final = 100_000


class ReadAgain(Exception):
    """The fast reader's rows do not add up to the file's records: read it with the exact one."""


class CsvSource:
    """A CSV (or ``;`` TAB ``|`` delimited) list as UTF-8, its header, and its batches."""

    def __init__(
        self,
        path: Path,
        spill: Path,
        label: str | None = None,
        decoding: Decoding | None = None,
        max_field: int = 0,
        delimiter: str | None = None,
        header_row: int | None = None,
        first_line: int = 1,
    ) -> None:
        """*decoding*: how a file that is not UTF-8 is read (said, or detected); *max_field*:
        the bytes a field may hold (``read.max_field_bytes``), 0: any; *delimiter*: the
        delimiter, when it is known (else sniffed from the first lines); *header_row*: the
        line the header starts on (``--header-row``), else found
        (:mod:`pipeline.core.files.headers`); *first_line*: the number of the file's first
        line (a sheet's first non-empty row), which line numbers count from."""
        self.path = path
        self._offset = first_line - 1
        self.label = label or str(path)  # how messages name it (an archive member, say)
        self.text, self.encoding, self.warnings = as_utf8(
            path, spill, self.label, decoding or Decoding()
        )
        head = _head(self.text)
        if not head.strip():
            raise InputError(f"{self.label} is empty: there is no header row and no address in it.")
        self.delimiter = delimiter or sniff_delimiter(head)
        with _counting(self.text) as counted:
            self.aside = self._set_aside(max_field)
            records = None if self.aside.spans else counted()
        if self.aside.spans:  # the readers read less than the file: count what they read
            with self._bytes() as stream:
                records = count_records_in(chunks(stream))
        self.records = records
        wanted = header_row - self._offset if header_row is not None else None
        with self._lines() as lines:
            table = Table(lines, self.delimiter, wanted)
        self.columns = unique_names(table.header)
        self._header_line = table.header_line
        self.titles = [
            self._reject(self.aside.line_in_file(at), str(why), raw) for at, why, raw in table.above
        ]
        # Quotes that do not pair up leave no count to check; records set aside need the
        # exact reader to put them in the rejects in their place.
        self.exact = self.records is None or bool(self.aside.spans)
        # What the fast reader's first whole read found of the rows that are not records:
        # their numbers below the header (sorted) and their rejects. A later read (a run's
        # second pass) drops those rows by number, without looking for them or for their text
        # again, as the file is the same (the input pin checks it after the last read and
        # before publishing).
        self._known: tuple[pl.Series, list[tuple[int, str, str]]] | None = None

    def _set_aside(self, limit: int) -> SetAside:
        """The records with a field over *limit* bytes, which the readers do not read."""
        spans = long_records(self.text, self.delimiter, limit)
        if spans and spans[0].start <= len(BOM):
            raise InputError(
                f"The header row of {self.label} has a field of {spans[0].field:,} bytes, "
                f"longer than read.max_field_bytes ({limit:,}). Check that the file is a list "
                "with a header row; if its header is really that long, raise "
                "read.max_field_bytes."
            )
        return SetAside(spans)

    def _bytes(self) -> BinaryIO:
        """The bytes the readers read: the file's, less the records set aside."""
        if not self.aside.spans:
            return self.text.open("rb")
        return io.BufferedReader(Without(self.text, self.aside.spans), CHUNK)

    @contextlib.contextmanager
    def _lines(self) -> Iterator[Iterator[str]]:
        """The physical lines read (LF, CRLF and lone CR all end one), BOM dropped."""
        with io.TextIOWrapper(self._bytes(), encoding="utf-8-sig", newline="") as text:
            yield iter(text)

    @property
    def header_row(self) -> int:
        """The line the header starts on, counted as the rejects count lines."""
        return self.aside.line_in_file(self._header_line) + self._offset

    def _reject(self, line: int, why: str, raw: str) -> tuple[int, str, str]:
        return line + self._offset, EMPTY_ROW if blank_text(raw) else why, raw

    @property
    def _size(self) -> int:
        return size_without(self.text, self.aside.spans)

    @property
    def text_schema(self) -> dict[str, pl.DataType]:
        """Every column as text: how the file spells it."""
        return dict.fromkeys(self.columns, pl.String())

    @property
    def schema(self) -> dict[str, pl.DataType]:
        return self.text_schema

    @property
    def reject_schema(self) -> dict[str, pl.DataType]:
        return {name: dtype() for name, dtype in REJECT_SCHEMA.items()}

    @property
    def expected_rows(self) -> int:
        if self.records is not None:
            return max(0, self.records - 1 - len(self.titles))
        return int(self._size / 50)

    @property
    def bytes_per_row(self) -> float:
        return self._size / max(1, (self.records or 2) - 1 - len(self.titles))

    def batches(self, rows: int) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
        """(rows, rejects) of at most *rows* rows each, in file order."""
        if self.exact:
            yield from self._exact(rows)
        else:
            yield from self._fast(rows)

    def _fast(self, rows: int) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
        # The records above the header end at line ends, so skipping its lines skips them.
        scan = pl.scan_csv(
            self.text,
            separator=self.delimiter,
            infer_schema=False,
            quote_char='"',
            skip_lines=self._header_line - 1,
            # A quoted empty field ("") is null, as an empty one is: the exact reader
            # (Python's csv) cannot tell them apart, and both readers give one result.
            null_values=[""],
        )
        read = 0
        rejects = _rejects(self.titles)  # the rows above the header, with the first batch
        known = self._known
        fillers: list[tuple[int, str]] = []  # (row below the header, kind), in file order
        try:
            for batch in scan.collect_batches(chunk_size=rows):
                if batch.columns != self.columns:
                    raise ReadAgain
                height = batch.height
                if known is None:
                    batch = _without_fillers(batch, read, fillers)
                elif known[1]:
                    batch = _without_rows(batch, read, known[0])
                read += height
                yield batch, rejects
                rejects = _rejects([])
        except pl.exceptions.PolarsError as exc:
            raise ReadAgain from exc
        if self.records is None or read != self.records - 1 - len(self.titles):
            raise ReadAgain
        if known is None:  # their lines and text are looked up in one pass over the file
            found = self._fillers(fillers) if fillers else []
            known = self._known = (pl.Series([row for row, _ in fillers], dtype=pl.Int64), found)
        if known[1]:  # last, as the exact reader puts them in the file's order
            rejects = _rejects(known[1])
        if rejects.height:  # no row below the header: the titles still go to the rejects
            yield pl.DataFrame(schema=self.text_schema), rejects

    def _fillers(self, fillers: list[tuple[int, str]]) -> list[tuple[int, str, str]]:
        """The rejects of the rows that are not records, from their (row below the header,
        kind): a row is a line of the file when every record is one line, that is when the
        file has as many lines as records, and no CR but in CRLF; else :class:`ReadAgain`
        (the exact reader knows each record's lines)."""
        first = self._header_line + 1  # the line of the first row below the header
        wanted = {first + row: kind for row, kind in fillers}
        counted = lines_of(self.text, set(wanted))
        if counted is None or counted[0] != self.records:
            raise ReadAgain
        raw = counted[1]
        return [(line + self._offset, kind, raw[line]) for line, kind in wanted.items()]

    def _exact(self, rows: int) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
        aside = self.aside
        offset = self._offset
        with self._lines() as lines:
            table = Table(lines, self.delimiter, self._header_line)
            kept: list[tuple[int, list[str], str]] = []
            rejects: list[tuple[int, str, str]] = []
            left = {span.line for span in aside.spans}  # set aside, not yet in the rejects
            for at, cells, raw in table:
                # Without records set aside, a line read is the file's: no mapping per row.
                line, span = (aside.line_in_file(at), aside.span_at(at)) if left else (at, None)
                if span is not None and span.line in left:
                    left.discard(span.line)
                    rejects.append((span.line + offset, FIELD_TOO_LONG, span.raw))
                elif isinstance(cells, str):
                    rejects.append(self._reject(line, cells, raw))
                else:
                    kept.append((line + offset, cells, raw))
                if len(kept) >= rows:
                    yield self._split(kept, rejects)
                    kept, rejects = [], []
            # A stand-in that the reader took into another record (after a quote that never
            # closes) is still a record of the file: it is counted, last.
            late = [s for s in aside.spans if s.line in left]
            rejects += [(s.line + self._offset, FIELD_TOO_LONG, s.raw) for s in late]
            if kept or rejects:
                yield self._split(kept, rejects)

    def _split(
        self, kept: list[tuple[int, list[str], str]], rejects: list[tuple[int, str, str]]
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The records of a stretch, and its rejects: the unreadable ones, then the rows
        that are not records (empty rows, footers), in line order. An empty field is null,
        as the fast reader reads it."""
        read = pl.DataFrame([cells for _, cells, _ in kept], schema=self.text_schema, orient="row")
        frame = read.select(pl.when(pl.col(c) != "").then(pl.col(c)).alias(c) for c in read.columns)
        filler = filler_kind(frame)
        if not filler.is_not_null().any():
            return frame, _rejects(rejects)
        for (line, _, raw), why in zip(kept, filler.to_list(), strict=True):
            if why is not None:
                rejects.append((line, why, raw))
        return frame.filter(filler.is_null()), _rejects(sorted(rejects))


def _without_fillers(
    batch: pl.DataFrame, first: int, fillers: list[tuple[int, str]]
) -> pl.DataFrame:
    """*batch* (its first row the *first* below the header) less its rows that are not
    records, each added to *fillers* as (row below the header, kind); :class:`ReadAgain` when
    *fillers* grows past :data:`_MOST_FILLERS` (they are kept until the end of the read)."""
    kinds = filler_kind(batch)
    found = kinds.is_not_null()
    if not found.any():
        return batch
    at = pl.int_range(first, first + batch.height, eager=True).filter(found)
    fillers += zip(at.to_list(), kinds.filter(found).to_list(), strict=True)
    if len(fillers) > _MOST_FILLERS:
        raise ReadAgain
    return batch.filter(~found)


def _without_rows(batch: pl.DataFrame, first: int, rows: pl.Series) -> pl.DataFrame:
    """*batch* (its first row the *first* below the header) less the *rows* (sorted numbers
    below the header) that fall in it."""
    bounds = pl.Series([first, first + batch.height], dtype=pl.Int64)
    start, end = rows.search_sorted(bounds, side="left").to_list()
    if start == end:
        return batch
    inside = rows.slice(start, end - start) - first
    return batch.filter(pl.repeat(True, batch.height, eager=True).scatter(inside, False))


def _rejects(rejects: list[tuple[int, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(rejects, schema=REJECT_SCHEMA, orient="row")


def unique_names(header: list[str]) -> list[str]:
    """Header names made unique the way polars makes them, so both readers agree."""
    seen: dict[str, int] = {}
    names = []
    for name in header:
        if name in seen:
            names.append(f"{name}_duplicated_{seen[name]}")
            seen[name] += 1
        else:
            seen[name] = 0
            names.append(name)
    return names


@contextlib.contextmanager
def _counting(path: Path) -> Iterator[Callable[[], int | None]]:
    """The records of *path*, counted on a thread of its own while the block runs; the block
    gets a call that waits for the count. A block left without it (an error, a signal) stops
    the count at its next chunk, without waiting for it."""
    stop = threading.Event()

    def until_stopped() -> Iterator[bytes]:
        with contextlib.closing(chunks(path)) as pieces:
            for chunk in pieces:
                if stop.is_set():
                    return
                yield chunk

    pool = ThreadPoolExecutor(1, thread_name_prefix="listclean-count")
    try:
        yield pool.submit(count_records_in, until_stopped()).result
    finally:
        stop.set()
        pool.shutdown(wait=False)


def _head(path: Path) -> str:
    with path.open("rb") as handle:
        return handle.read(SNIFF).removeprefix(BOM).decode("utf-8", errors="ignore")
