"""A delimited-text list read in byte ranges, each range by whichever process runs it (a Dask
worker), with exactly the rows, rejects and line numbers of the local reader
(:mod:`pipeline.stages.read.csv_source`).

The planner reads only the file's head (:func:`layout_of`): its header record, delimiter and
encoding, found once and handed to every range. The rest is cut into byte ranges, and each
range is read twice by its worker, both times in parallel with the others:

1. :func:`survey`: the parity of its double quotes and its physical line ends (LF, CRLF, a
   lone CR). Summed over the ranges before it, they give each range whether its first byte is
   inside a quoted field and the line it is on (:func:`ranges_of`), without anyone reading the
   whole file.
2. :func:`read_range`: the records that *start* in the range. A record starts after a line end
   outside quotes, so the range's first record starts after the first such line end at or after
   its start (a quoted newline is inside quotes and never cuts a record), and its last record
   runs past its end to the next such line end: two neighbours agree on the boundary between
   them. The records, behind the header, are read by the local reader itself, fast or exact,
   and its line numbers moved to the file's.

What the ranges cannot settle alone is said in :attr:`RangeRead.settled`: a byte that is not
UTF-8 where UTF-8 was assumed, quotes the exact reader reads otherwise than the quote count
does, a field over ``read.max_field_bytes``. Then the list is read in order by the local reader
(the caller's fallback), so the answer is the local one either way. A range read exactly makes
every range read exactly (:attr:`RangeRead.exact`), as the local reader reads a whole file one
way.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final

import polars as pl

from pipeline.core.config import StorageConfig
from pipeline.core.files.delimited import physical_ends, record_ends
from pipeline.core.files.encodings import Decoding
from pipeline.core.files.utf8 import not_valid
from pipeline.stages.objects import filesystem, is_object_url
from pipeline.stages.read.csv_source import REJECT_SCHEMA, CsvSource, ReadAgain
from pipeline.stages.read.reader import as_text

_STEP: Final = 1 << 20  # bytes read at a time past a range's end, looking for its last record
UTF8: Final = "utf-8"


@dataclass(frozen=True)
class Layout:
    """What every range of one file needs, found once from its head."""

    source: str  # a local path or an object's URL
    label: str  # how messages name the list
    size: int  # the file's bytes
    header: bytes  # the header record as in the file (BOM dropped), with its line end
    body: int  # the offset of the first byte after the header record
    delimiter: str
    encoding: str  # the bytes' encoding: UTF-8, or a code page whose ASCII is ASCII
    assumed: bool  # UTF-8 because the head is; a range that is not says so
    max_field: int  # read.max_field_bytes
    renamed: dict[str, str]  # input columns kept under another name
    email_column: str  # as named after renaming
    storage: StorageConfig = field(default_factory=StorageConfig)
    body_line: int = 2  # the line the byte at *body* is on (title rows above the header)

    def open(self) -> BinaryIO:
        if is_object_url(self.source):
            handle: BinaryIO = filesystem(self.source, self.storage).open(self.source, "rb")
            return handle
        return Path(self.source).open("rb")


@dataclass(frozen=True)
class Survey:
    quotes: int  # parity of the range's double quotes (0 or 1)
    line_ends: int  # physical line ends in it


@dataclass(frozen=True)
class ByteRange:
    layout: Layout
    start: int
    end: int
    in_quotes: bool  # whether its first byte is inside a quoted field
    line: int  # the physical line (1-based) its first byte is on
    quotes: int  # parity of its own quotes (from its survey)


@dataclass(frozen=True)
class RangeRead:
    """One range's records as the local reader reads them (line numbers the file's)."""

    frame: pl.DataFrame  # the list's columns (renamed), the email column as text
    rejects: pl.DataFrame  # line, reason, raw
    exact: bool  # read by the exact reader
    settled: str = ""  # "" or why this list must be read in order instead

    def __sizeof__(self) -> int:
        return int(self.frame.estimated_size() + self.rejects.estimated_size()) + 64


def head_record_end(head: bytes) -> int | None:
    """The offset just past the last record that ends inside *head* (a file's first bytes),
    or None when none does."""
    ends, _ = record_ends(head, b"", 0)
    if ends.is_empty():
        return None
    last = int(ends[-1])
    if head[last : last + 1] == b"\r" and last + 1 == len(head):
        return None if ends.len() == 1 else int(ends[-2]) + 1  # may be half of a CRLF
    return last + 1


def line_start(head: bytes, line: int) -> int:
    """The offset of the first byte of physical *line* (1-based) in *head* (LF, CRLF and a
    lone CR end a line, as the readers count them)."""
    at = 0
    for _ in range(line - 1):
        lf, cr = head.find(b"\n", at), head.find(b"\r", at)
        ends = [e for e in (lf, cr) if e >= 0]
        if not ends:
            return len(head)
        end = min(ends)
        at = end + (2 if head[end : end + 2] == b"\r\n" else 1)
    return at


def cuts(layout: Layout, target: int) -> list[tuple[int, int]]:
    """The file after its header cut into ranges of about *target* bytes."""
    target = max(1, target)
    return [
        (start, min(start + target, layout.size))
        for start in range(layout.body, layout.size, target)
    ]


def survey(layout: Layout, start: int, end: int) -> Survey:
    """The quote parity and physical line ends of the bytes from *start* to *end*."""
    with layout.open() as handle:
        handle.seek(start)
        data = handle.read(end - start + 1)
    chunk, following = data[: end - start], data[end - start :]
    return Survey(chunk.count(b'"') % 2, physical_ends(chunk, following))


def ranges_of(layout: Layout, spans: list[tuple[int, int]], found: list[Survey]) -> list[ByteRange]:
    """Each range with where it starts: inside quotes or not, and on which line. None of it
    when the file's quotes do not pair up (see :func:`quotes_pair`)."""
    line, parity = layout.body_line, 0
    ranges = []
    for (start, end), seen in zip(spans, found, strict=True):
        ranges.append(ByteRange(layout, start, end, bool(parity), line, seen.quotes))
        parity ^= seen.quotes
        line += seen.line_ends
    return ranges


def quotes_pair(found: list[Survey]) -> bool:
    return sum(s.quotes for s in found) % 2 == 0


def read_range(part: ByteRange, exact: bool = False) -> RangeRead:
    """The records that start in *part*, read by the local reader (exactly, with *exact*)."""
    layout = part.layout
    with layout.open() as handle:
        first, line, data = _records(handle, part)
    try:
        text = data.decode(layout.encoding)
    except UnicodeDecodeError as exc:
        if layout.assumed:
            return _unsettled("a byte that is not UTF-8")
        raise not_valid(layout.label, layout.encoding, data[exc.start], first + exc.start) from exc
    header = layout.header.decode(layout.encoding)
    with tempfile.TemporaryDirectory(prefix="listclean-range-") as spill:
        path = Path(spill) / "range.csv"
        path.write_text(header + text, encoding=UTF8, newline="")
        source = CsvSource(
            path,
            Path(spill),
            layout.label,
            Decoding(UTF8),
            layout.max_field,
            layout.delimiter,
            header_row=1,  # the planner found it, as the local reader finds it
        )
        source.exact = source.exact or exact
        read = _read(source)
        records = (source.records or 1) - 1
    if source.aside.spans:
        return _unsettled("a field over read.max_field_bytes")
    frame, rejects = read
    if frame.height + rejects.height != records or _quote_trouble(rejects):
        return _unsettled("quotes the exact reader reads otherwise")
    shift = line - physical_ends(layout.header, b"") - 1
    rejects = rejects.with_columns(pl.col("line") + shift)
    renamed = frame.rename(layout.renamed) if layout.renamed else frame
    return RangeRead(as_text(renamed, layout.email_column), rejects, source.exact)


def _read(source: CsvSource) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every record of *source*, fast when the fast reader's rows add up, else exactly."""
    while True:
        try:
            got = list(source.batches(1 << 62))
            break
        except ReadAgain:
            source.exact = True
    frames = [f for f, _ in got] or [pl.DataFrame(schema=source.schema)]
    rejects = [r for _, r in got] or [pl.DataFrame(schema=REJECT_SCHEMA)]
    return pl.concat(frames, how="vertical"), pl.concat(rejects, how="vertical")


def _quote_trouble(rejects: pl.DataFrame) -> bool:
    """Rejects the exact reader gives where its reading of quotes may differ from the count."""
    reasons = rejects.get_column("reason")
    return bool(reasons.str.starts_with("unreadable CSV").any()) or bool(
        reasons.str.contains("never closed", literal=True).any()
    )


def _unsettled(why: str) -> RangeRead:
    empty = pl.DataFrame(schema=REJECT_SCHEMA)
    return RangeRead(pl.DataFrame(), empty, False, why)


def _records(handle: BinaryIO, part: ByteRange) -> tuple[int, int, bytes]:
    """(offset of the range's first record, its line, the bytes of its records)."""
    layout = part.layout
    before = 1 if part.start > layout.body else 0  # the byte before: a line end it may end
    handle.seek(part.start - before)
    data = handle.read(part.end - part.start + before)
    following = handle.read(1)
    parity = int(part.in_quotes) ^ int(before and data[:1] == b'"')
    ends, _ = record_ends(data, following, parity)
    first = (int(ends[0]) + 1 if ends.len() else len(data)) if before else 0
    if first >= len(data):
        return part.end, part.line, b""  # no record starts here
    line = part.line + physical_ends(data[before:first], data[first : first + 1])
    last = int(ends[-1]) if ends.len() else -1
    if last == len(data) - 1:
        tail = b""  # its last record ends where the range does
    else:
        at_end = int(part.in_quotes) ^ part.quotes
        tail = b"".join(_to_record_end(handle, following, at_end))
    return part.start - before + first, line, data[first:] + tail


def _to_record_end(handle: BinaryIO, following: bytes, parity: int) -> Iterator[bytes]:
    """The bytes from a range's end to the end of the record it is in (none when a record
    ends right there); *following* is the first of them, already read."""
    chunk = following
    while chunk:
        more = handle.read(_STEP)
        ends, parity_after = record_ends(chunk, more[:1], parity)
        if ends.len():
            yield chunk[: int(ends[0]) + 1]
            return
        yield chunk
        parity, chunk = parity_after, more
