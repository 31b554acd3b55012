"""Fields too long to read, found without reading them.

Any CSV reader holds a field whole (polars' batched reader and Python's csv module alike), so a
field of gigabytes is gigabytes of memory. Before a delimited file is read, :func:`long_records`
looks at its bytes a chunk at a time and finds every record holding a field longer than the
limit. A field ends at the delimiter or a line end (LF, CR) outside double quotes; whether a
byte is inside quotes is the parity of the quotes before it (RFC 4180 §2: a quote inside a
quoted field is doubled), as :func:`~pipeline.core.files.delimited.count_records` counts records.
Memory: one chunk (16 MiB) and the few positions looked at in it; under a limit below the
chunk's size, every position counts, and the chunks are 1 MiB.

A stray quote (``Ja"ne``, ``O"Brien``) makes parity take what follows, up to the next one, for
a quoted field, where the readers take the quote for text. So a long record is set aside whole
only when its quotes are those of RFC 4180 fields: each opening quote starts a field (or
doubles a quote) and each closing one ends a field (or is doubled). A record that is not, is
not trusted: only those of its physical lines that are themselves longer than the limit are
set aside, and the readers deal with its quotes as they do in any file.
"""

from __future__ import annotations

import bisect
import functools
import io
import operator
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final

import polars as pl
import pyarrow as pa

_CHUNK: Final = 1 << 24  # bytes looked at together
# Bytes looked at together where every position counts (a small limit, a long record's
# quotes): positions are 8 bytes each, so a piece of delimiters costs 8 times its size.
_PIECE: Final = 1 << 20
_QUOTE: Final = ord('"')
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


def long_records(path: Path, delimiter: str, limit: int, chunk: int = _CHUNK) -> list[Span]:
    """The records of the UTF-8 delimited file *path* with a field longer than *limit* bytes,
    in file order (see the module's doc); [] when *limit* is 0 (no limit). The file is read
    *chunk* bytes at a time."""
    if not limit:
        return []
    # A stretch within one chunk is shorter than the chunk: when that is within the limit,
    # only the stretches that cross from one chunk to the next need looking at, and those
    # end at a chunk's first bound and start after its last. Under a small limit, every
    # bound counts: the chunks are smaller.
    chunk = min(chunk, max(limit, _PIECE))
    every = limit < chunk
    fields, records, lines = _Gaps(limit), _Gaps(limit), _Gaps(limit)
    parity, size = 0, 0
    with path.open("rb") as handle:
        while piece := handle.read(chunk):
            ends = _Bounds(piece, every)
            records.feed(ends.find(b"\r\n", parity), size)
            fields.feed(ends.find(b"\r\n" + delimiter.encode(), parity), size)
            lines.feed(ends.find(b"\r\n", None), size)
            parity = (parity + ends.quotes) % 2
            size += len(piece)
    for gaps in (fields, records, lines):
        gaps.finish(size)
    if not fields.found:
        return []
    return list(_spans(path, _Found(fields.found, records.found, lines.found), chunk, delimiter))


class _Bounds:
    """Where in one chunk fields or records end: every such byte, or (*every* false) only the
    first and the last, found in a window at either end when the chunk has them there."""

    def __init__(self, piece: bytes, every: bool) -> None:
        self._piece, self._every = piece, every
        self._window = max(len(piece) // 64, 1 << 16)
        self.quotes = piece.count(b'"')

    def find(self, chars: bytes, parity: int | None) -> pl.Series:
        """The positions of *chars* outside quotes (*parity*: quotes open at the chunk's
        start; None: quotes do not count)."""
        size = len(self._piece)
        if self._every or size <= 2 * self._window:
            return self._outside(chars, 0, size, parity)
        head = self._outside(chars, 0, self._window, parity)
        tail_from = size - self._window
        tail_parity = parity
        if parity is not None:
            tail_parity = (parity + self.quotes - self._piece.count(b'"', tail_from)) % 2
        tail = self._outside(chars, tail_from, size, tail_parity)
        if head.is_empty() or tail.is_empty():  # a long stretch at an end: look at it all
            whole = self._outside(chars, 0, size, parity)
            return whole.gather([0, whole.len() - 1]) if whole.len() else whole
        return pl.concat([head.head(1), tail.tail(1)])

    def _outside(self, chars: bytes, low: int, high: int, parity: int | None) -> pl.Series:
        data = _bytes(self._piece, low, high)
        found = functools.reduce(operator.or_, (data == c for c in chars))
        hits = found.arg_true().cast(pl.Int64) + low
        if parity is None or (not parity and b'"' not in self._piece[low:high]):
            return hits
        quotes = (data == _QUOTE).arg_true().cast(pl.Int64) + low
        before = quotes.search_sorted(hits, side="left") + parity
        return hits.filter(before % 2 == 0)


@dataclass(frozen=True)
class _Found:
    fields: list[tuple[int, int]]
    records: list[tuple[int, int]]
    lines: list[tuple[int, int]]


def _spans(path: Path, found: _Found, chunk: int, delimiter: str) -> Iterator[Span]:
    """The spans to set aside: each record holding a long field whose quotes are those of
    RFC 4180 fields; of any other, its long physical lines."""
    longest = {
        (start, end): max((e - s for s, e in found.fields if start <= s <= end), default=0)
        for start, end in found.records
    }
    held = [record for record, field in longest.items() if field]
    offsets = [o for record in held for o in record] + [s for s, _ in found.lines]
    line_of = _lines_at(path, offsets, chunk)
    with path.open("rb") as handle:
        for start, end in held:
            if _well_quoted(handle, (start, end), delimiter, _PIECE):
                raw, lines = _raw(handle, start, end), line_of[end] - line_of[start] + 1
                yield Span(start, end, line_of[start], lines, longest[start, end], raw)
                continue
            for s, e in found.lines:
                if start <= s < end:
                    yield Span(s, e, line_of[s], 1, e - s, _raw(handle, s, e))


def _well_quoted(handle: BinaryIO, span: tuple[int, int], delimiter: str, chunk: int) -> bool:
    """Whether every quote of the record at *span* opens a field or closes one (RFC 4180
    §2), a doubled quote counting as two: an opening quote follows a delimiter, a line
    end, the record's start or a quote; a closing one comes before one of those or the end
    of the file. Read a chunk at a time."""
    start, end = span
    edge = (ord(delimiter), ord("\n"), ord("\r"), _QUOTE)
    parity, after_edge, position = 0, True, start
    while position < end:
        size = min(chunk, end - position)
        handle.seek(position)
        piece = handle.read(size + 1)  # and the byte after, which a closing quote comes before
        data = _bytes(piece, 0, len(piece))
        quotes = (data.head(size) == _QUOTE).arg_true().cast(pl.Int64)
        if quotes.len():
            edges = data.is_in(edge)
            before = edges.shift(1, fill_value=after_edge).gather(quotes)
            following = edges.shift(-1, fill_value=True).gather(quotes)
            opening = (pl.int_range(quotes.len(), eager=True) + parity) % 2 == 0
            if not (opening & before | ~opening & following).all():
                return False
            parity = (parity + quotes.len()) % 2
        after_edge = piece[size - 1] in edge
        position += size
    return True


def _lines_at(path: Path, offsets: list[int], chunk: int) -> dict[int, int]:
    """The physical line (from 1) of the byte at each of *offsets*, in one pass."""
    wanted = sorted(set(offsets))
    lines: dict[int, int] = {}
    counted, position, split, index = 0, 0, False, 0
    with path.open("rb") as handle:
        while index < len(wanted) and (piece := handle.read(chunk)):
            fix = int(split and piece[:1] == b"\n")  # a CRLF split between chunks: one end
            while index < len(wanted) and wanted[index] <= position + len(piece):
                cut = wanted[index] - position
                lines[wanted[index]] = counted + _line_ends(piece[:cut]) - (fix if cut else 0) + 1
                index += 1
            counted += _line_ends(piece) - fix
            split = piece.endswith(b"\r")
            position += len(piece)
    lines.update(dict.fromkeys(wanted[index:], counted + 1))
    return lines


def _raw(handle: BinaryIO, start: int, end: int) -> str:
    """The first :data:`RAW_PREFIX` bytes of a span as text, ``…`` marking the cut."""
    handle.seek(start)
    head = handle.read(min(RAW_PREFIX, end - start))
    return head.decode("utf-8", errors="replace") + ("…" if end - start > RAW_PREFIX else "")


def _line_ends(data: bytes) -> int:
    """LF, CRLF and lone CR in *data*, each one line end."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def _bytes(piece: bytes, low: int, high: int) -> pl.Series:
    """Bytes *low* to *high* of *piece* as a Series of UInt8, without a copy."""
    buffer = pa.py_buffer(piece).slice(low, high - low)
    data = pl.from_arrow(pa.Array.from_buffers(pa.uint8(), high - low, [None, buffer]))
    assert isinstance(data, pl.Series)
    return data


class SetAside:
    """The spans of a file taken out of what the readers read (:class:`Without`), each
    replaced by ``""``: one record on one line, so the lines after a span come earlier by the
    lines it spanned, less one. Maps the lines read back to the file's."""

    def __init__(self, spans: list[Span]) -> None:
        self.spans = spans
        self._at: dict[int, Span] = {}  # a span by its line as read
        self._lines: list[int] = []  # each span's line as read
        self._lost: list[int] = []  # the lines lost up to and with it
        lost = 0
        for span in spans:
            line = span.line - lost
            self._at[line] = span
            lost += span.lines - 1
            self._lines.append(line)
            self._lost.append(lost)

    def span_at(self, line: int) -> Span | None:
        """The span whose stand-in is the record read at *line*, if any."""
        return self._at.get(line)

    def line_in_file(self, line: int) -> int:
        """The file's line number of the line read as *line*."""
        before = bisect.bisect_left(self._lines, line)  # the spans on earlier lines
        return line + (self._lost[before - 1] if before else 0)


class Without(io.RawIOBase):
    """The bytes of the file at *path* with each of *spans* replaced by ``""``, read as a
    stream: what the readers read instead of the file, with no copy of it on disk."""

    def __init__(self, path: Path, spans: list[Span]) -> None:
        super().__init__()
        self._file = path.open("rb")
        self._pieces: list[bytes | tuple[int, int | None]] = []  # stand-ins, file ranges
        position = 0
        for span in spans:
            self._pieces += [(position, span.start), b'""']
            position = span.end
        self._pieces.append((position, None))  # to the end
        self._pieces.reverse()  # taken from the end

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._pieces:
            piece = self._pieces.pop()
            if isinstance(piece, bytes):
                size = min(len(buffer), len(piece))
                buffer[:size] = piece[:size]
                if piece[size:]:
                    self._pieces.append(piece[size:])
                return size
            start, end = piece
            wanted = len(buffer) if end is None else min(len(buffer), end - start)
            self._file.seek(start)
            size = self._file.readinto(memoryview(buffer)[:wanted]) if wanted else 0
            if size and (end is None or start + size < end):
                self._pieces.append((start + size, end))
            if size:
                return size
        return 0

    def close(self) -> None:
        self._file.close()
        super().close()


def size_without(path: Path, spans: list[Span]) -> int:
    """The bytes of :class:`Without` over *path* and *spans*."""
    return path.stat().st_size - sum(s.end - s.start - 2 for s in spans)
