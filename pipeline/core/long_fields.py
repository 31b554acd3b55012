"""Fields too long to read, found without reading them.

Any CSV reader holds a field whole (polars' batched reader and Python's csv module alike), so a
field of gigabytes is gigabytes of memory. Before a delimited file is read, :func:`long_records`
looks at its bytes a chunk at a time and finds every record holding a field longer than the
limit. A field ends at the delimiter or a line end (LF, CR) outside double quotes; whether a
byte is inside quotes is the parity of the quotes before it (RFC 4180 §2: a quote inside a
quoted field is doubled), as :func:`~pipeline.core.delimited.count_records` counts records.
Memory: one chunk and the positions found in it.

A stray quote (``Ja"ne``) makes parity take the rest of the file for one quoted field. The
exact reader takes a quoted stretch over :data:`~pipeline.core.delimited.MAX_RECORD_LINES`
lines for a quote that never closes and reads on at the next line, so such a stretch is not
set aside whole: only those of its physical lines that are longer than the limit are.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final

import polars as pl
import pyarrow as pa

from pipeline.core.delimited import MAX_RECORD_LINES

_CHUNK: Final = 1 << 24  # bytes looked at together
_QUOTE: Final = ord('"')
_LF: Final = ord("\n")
_CR: Final = ord("\r")
RAW_PREFIX: Final = 1_000  # bytes of a long record kept for the rejects file


@dataclass(frozen=True)
class Span:
    """A stretch of the file set aside: a record with a long field, or one long line."""

    start: int  # offset of its first byte
    end: int  # offset just past its last byte (its line end is not part of it)
    line: int  # the physical line it starts on, from 1
    lines: int  # the physical lines it spans
    field: int  # bytes in its longest field (quotes included)
    raw: str  # its first bytes as text, for the rejects file


@dataclass
class _Gaps:
    """The stretches between bounds (field or record ends) longer than the limit."""

    limit: int
    start: int = 0  # where the stretch being read began
    found: list[tuple[int, int]] = field(default_factory=list)  # (start, end) offsets

    def feed(self, bounds: pl.Series, offset: int) -> None:
        if bounds.is_empty():
            return
        at = bounds.cast(pl.Int64) + offset
        starts = pl.concat([pl.Series([self.start], dtype=pl.Int64), at.head(-1) + 1])
        long = (at - starts) > self.limit
        if long.any():
            self.found += zip(starts.filter(long).to_list(), at.filter(long).to_list(), strict=True)
        self.start = int(at[-1]) + 1

    def finish(self, size: int) -> None:
        if size - self.start > self.limit:
            self.found.append((self.start, size))


def long_records(path: Path, delimiter: str, limit: int) -> list[Span]:
    """The records of the UTF-8 delimited file *path* with a field longer than *limit* bytes,
    in file order (see the module's doc); [] when *limit* is 0 (no limit)."""
    if not limit:
        return []
    fields, records, lines = _Gaps(limit), _Gaps(limit), _Gaps(limit)
    starts: list[int] = []  # physical lines before each chunk
    parity, ended_cr, size, counted = 0, False, 0, 0
    for chunk in _chunks(path):
        if ended_cr and chunk[:1] == b"\n":
            counted -= 1  # a CRLF split between two chunks ends one line
        starts.append(counted)
        counted += _line_ends(chunk)
        ended_cr = chunk.endswith(b"\r")
        data = _bytes(chunk)
        quotes = (data == _QUOTE).arg_true()
        ends = (data == _LF) | (data == _CR)
        if parity or quotes.len():
            outside = _outside(quotes, parity)
            records.feed(outside(ends.arg_true()), size)
            fields.feed(outside((ends | (data == ord(delimiter))).arg_true()), size)
        else:
            records.feed(ends.arg_true(), size)
            fields.feed((ends | (data == ord(delimiter))).arg_true(), size)
        lines.feed(ends.arg_true(), size)
        parity = (parity + quotes.len()) % 2
        size += len(chunk)
    for gaps in (fields, records, lines):
        gaps.finish(size)
    return list(_spans(path, _Found(fields.found, records.found, lines.found), starts))


@dataclass(frozen=True)
class _Found:
    fields: list[tuple[int, int]]
    records: list[tuple[int, int]]
    lines: list[tuple[int, int]]


def _spans(path: Path, found: _Found, starts: list[int]) -> Iterator[Span]:
    """The spans to set aside: each record holding a long field, unless it runs over more
    lines than a quoted field may (then its long physical lines)."""
    with path.open("rb") as handle:
        for start, end in found.records:
            longest = max((e - s for s, e in found.fields if start <= s <= end), default=0)
            if not longest:
                continue
            first = _line_at(handle, start, starts)
            spanned = _line_at(handle, end, starts) - first + 1
            if spanned <= MAX_RECORD_LINES:
                yield Span(start, end, first, spanned, longest, _raw(handle, start, end))
                continue
            for s, e in found.lines:
                if start <= s < end:
                    yield Span(s, e, _line_at(handle, s, starts), 1, e - s, _raw(handle, s, e))


def _outside(quotes: pl.Series, parity: int) -> Callable[[pl.Series], pl.Series]:
    """A filter of positions down to those outside quotes (*parity*: quotes open before)."""

    def keep(positions: pl.Series) -> pl.Series:
        before = quotes.search_sorted(positions, side="left") + parity
        return positions.filter(before % 2 == 0)

    return keep


def _line_at(handle: BinaryIO, offset: int, starts: list[int]) -> int:
    """The physical line (from 1) that the byte at *offset* is on."""
    index = min(offset // _CHUNK, len(starts) - 1)
    handle.seek(index * _CHUNK)
    before = handle.read(offset - index * _CHUNK)
    return starts[index] + _line_ends(before) + 1


def _raw(handle: BinaryIO, start: int, end: int) -> str:
    """The first :data:`RAW_PREFIX` bytes of a span as text, ``…`` marking the cut."""
    handle.seek(start)
    head = handle.read(min(RAW_PREFIX, end - start))
    return head.decode("utf-8", errors="replace") + ("…" if end - start > RAW_PREFIX else "")


def _line_ends(data: bytes) -> int:
    """LF, CRLF and lone CR in *data*, each one line end."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def _bytes(chunk: bytes) -> pl.Series:
    data = pl.from_arrow(pa.Array.from_buffers(pa.uint8(), len(chunk), [None, pa.py_buffer(chunk)]))
    assert isinstance(data, pl.Series)
    return data


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            yield chunk


class SetAside:
    """The spans of a file taken out of its copy (:func:`copy_without`), each replaced by
    ``""``: one record on one line, so the copy's lines after a span come earlier by the
    lines it spanned, less one. Maps the copy's line numbers back to the file's."""

    def __init__(self, spans: list[Span]) -> None:
        self.spans = spans
        self._at: dict[int, Span] = {}  # a span by its line in the copy
        self._lines: list[int] = []  # each span's line in the copy
        self._lost: list[int] = []  # the lines lost up to and with it
        lost = 0
        for span in spans:
            line = span.line - lost
            self._at[line] = span
            lost += span.lines - 1
            self._lines.append(line)
            self._lost.append(lost)

    def span_at(self, line: int) -> Span | None:
        """The span whose stand-in is the record at *line* of the copy, if any."""
        return self._at.get(line)

    def line_in_file(self, line: int) -> int:
        """The file's line number of the copy's *line*."""
        before = bisect.bisect_left(self._lines, line)  # the spans on earlier lines
        return line + (self._lost[before - 1] if before else 0)


def copy_without(path: Path, spans: list[Span], target: Path) -> None:
    """*path* copied to *target* a chunk at a time, each of *spans* replaced by ``""``."""
    with path.open("rb") as source, target.open("wb") as out:
        position = 0
        for span in spans:
            _copy_range(source, out, span.start - position)
            out.write(b'""')
            source.seek(span.end)
            position = span.end
        _copy_range(source, out, None)


def _copy_range(source: BinaryIO, out: BinaryIO, size: int | None) -> None:
    """*size* bytes (None: the rest) from *source* to *out*, a chunk at a time."""
    while size is None or size > 0:
        piece = source.read(_CHUNK if size is None else min(_CHUNK, size))
        if not piece:
            return
        out.write(piece)
        if size is not None:
            size -= len(piece)
