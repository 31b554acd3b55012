"""Delimited text as people export it: its encoding, its delimiter, and every record in it.

Encodings: UTF-8 with or without a BOM; UTF-16 with a BOM, or without one when the zero bytes
of ASCII text give it away (Excel's "Unicode Text"); otherwise the Excel code page
:mod:`pipeline.core.files.encodings` detects (Windows-1252 in Western Europe, 1251 for Cyrillic, 932
for Japanese...), or an error when it cannot tell.
Delimiters: ``,`` ``;`` TAB ``|``, sniffed from the first lines.

:func:`read_rows` is the exact reader: it accounts for every physical line. A record ends at
LF, CRLF or a lone CR (old Mac files) outside quotes (RFC 4180 §2); a row with more fields than
the header is rejected with its line number and raw text rather than silently cut; a shorter
one is padded; a quote opened and never closed swallows nothing: its line alone is rejected and
reading goes on at the next line. Fields may be as long as memory allows.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import polars as pl
import pyarrow as pa

from pipeline.core.errors import InputError, UsageError
from pipeline.core.files.encodings import DEFAULT_MARGIN, detect, non_ascii_lines
from pipeline.core.files.headers import RULE_RECORDS, TITLE_ROW, find_header

_SNIFF_LINES: Final = 20
DELIMITERS: Final = (",", ";", "\t", "|")
# Python's csv stops at 131,072 characters a field by default; the fast reader has no limit.
_FIELD_LIMIT: Final = 2**31 - 1
# Physical lines, each with its ending: LF, CRLF or a lone CR.
_LINES: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_UTF16_BOMS: Final = (b"\xff\xfe", b"\xfe\xff")
_COUNT_CHUNK: Final = 1 << 26  # bytes looked at together when counting records
_LINES_CHUNK: Final = 1 << 24  # bytes read at a time when looking for lines (lines_of)


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # "utf-8", "utf-16" (with a BOM), "utf-16-le", "utf-16-be", or a code page
    bad_offset: int | None  # where UTF-8 decoding first failed; None for UTF-8 and UTF-16


def decode(raw: bytes, where: str = "the file") -> Decoded:
    """*raw* as text: UTF-16 or UTF-8 by their own rules, else in the Excel code page
    :func:`~pipeline.core.files.encodings.detect` finds (InputError, naming *where*, when unsure or
    when a byte is not a character of it)."""
    utf16 = utf16_encoding(raw)
    if utf16 is not None:
        return Decoded(raw.decode(utf16, errors="replace"), utf16, None)
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    try:
        return Decoded(raw.decode("utf-8"), "utf-8", None)
    except UnicodeDecodeError as exc:
        bad = exc.start
    encoding = detect(non_ascii_lines([raw]), DEFAULT_MARGIN, where)
    try:
        return Decoded(raw.decode(encoding), encoding, bad)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where} is not valid {encoding}, the code page its first lines are in: the byte "
            f"0x{raw[exc.start]:02x} at offset {exc.start} is not a character of it. Save the "
            "file as UTF-8."
        ) from exc


def utf16_encoding(raw: bytes) -> str | None:
    """The codec of UTF-16 text starting with *raw*: ``utf-16`` with a BOM (the codec reads the
    byte order from it and drops it), else ``utf-16-le``/``-be`` when the zero high bytes that
    Latin-script text has in UTF-16 give it away; None for anything else."""
    if raw[:2] in _UTF16_BOMS:
        return "utf-16"
    sample = raw[:4096]
    if len(sample) < 4 or len(sample) % 2:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    half = len(sample) // 2
    if odd > 0.3 * half and even < 0.02 * half:
        return "utf-16-le"
    if even > 0.3 * half and odd < 0.02 * half:
        return "utf-16-be"
    return None


def sniff_delimiter(sample: str) -> str:
    """The delimiter that splits the first lines most consistently; ``,`` when unsure."""
    lines = [line for line in physical_lines(sample)[:_SNIFF_LINES] if line.strip()]
    if not lines:
        return ","
    best, best_score = ",", 0
    csv.field_size_limit(_FIELD_LIMIT)
    for delimiter in DELIMITERS:
        counts = [len(row) - 1 for row in csv.reader(lines, delimiter=delimiter)]
        header = counts[0]
        score = header * sum(1 for c in counts if c == header)
        if score > best_score:
            best, best_score = delimiter, score
    return best


def count_records(data: bytes) -> int | None:
    """Records in UTF-8 delimited text, header included, counted without parsing it: a line
    end (LF, CRLF, lone CR) outside double quotes ends one, and so does the end of a last line
    that has none. None when the quotes do not pair up (an unclosed or stray quote), where only
    a real parse can tell. This is the check on a fast reader's row count."""
    return count_records_in(data[i : i + _COUNT_CHUNK] for i in range(0, len(data), _COUNT_CHUNK))


def count_records_in(chunks: Iterable[bytes]) -> int | None:
    """:func:`count_records` over consecutive pieces of a file (read it piece by piece)."""
    ends, parity, last = 0, 0, b""
    previous: bytes | None = None
    for chunk in chunks:
        if not chunk:
            continue
        if previous is not None:
            counted = _count_chunk(previous, chunk[:1], parity)
            ends, parity = ends + counted[0], counted[1]
        previous, last = chunk, chunk[-1:]
    if previous is None:
        return 0
    counted = _count_chunk(previous, b"", parity)
    if counted[1]:
        return None  # an odd number of quotes: they do not pair up
    return ends + counted[0] + (last not in (b"\n", b"\r"))


def _count_chunk(chunk: bytes, following: bytes, parity: int) -> tuple[int, int]:
    """(line ends outside quotes, quote parity after) in *chunk*; *following* is the next
    chunk's first byte, so a CRLF split between two chunks ends one record, not two."""
    if b'"' not in chunk and not parity:
        return physical_ends(chunk, following), 0
    ends, after = record_ends(chunk, following, parity)
    return ends.len(), after


def record_ends(chunk: bytes, following: bytes, parity: int) -> tuple[pl.Series, int]:
    """Where records end in *chunk*: the offset of each line end's last byte (the LF of a
    CRLF, a lone CR, an LF) outside double quotes, when *parity* quotes came before it (0 or
    1); and the quote parity after *chunk*. *following* is the byte after it ("" at the end
    of the text): a CR it ends is no line end of its own when that byte is an LF."""
    data = pl.from_arrow(pa.Array.from_buffers(pa.uint8(), len(chunk), [None, pa.py_buffer(chunk)]))
    assert isinstance(data, pl.Series)
    quotes = (data == ord('"')).arg_true()
    ends = (data == ord("\n")).arg_true()
    if b"\r" in chunk:  # old Mac line ends (rare): a CR not followed by LF ends a record too
        crs = (data == ord("\r")).arg_true()
        followed = (crs + 1).is_in(ends.implode())
        if following == b"\n":
            followed = followed | (crs == len(chunk) - 1)
        ends = pl.concat([ends, crs.filter(~followed)]).sort()
    # A line end is outside quotes when an even number of quotes came before it in the text.
    before = quotes.search_sorted(ends, side="left") + parity
    return ends.filter(before % 2 == 0), (parity + quotes.len()) % 2


def physical_ends(chunk: bytes, following: bytes) -> int:
    """Physical line ends in *chunk* (LF, CRLF, lone CR), inside quotes or not: how the
    exact reader numbers lines. *following* as for :func:`record_ends`."""
    crlf = chunk.count(b"\r\n") + (chunk.endswith(b"\r") and following == b"\n")
    return chunk.count(b"\n") + chunk.count(b"\r") - crlf


def lines_of(path: Path, wanted: set[int]) -> tuple[int, dict[int, str]] | None:
    """The lines of the file at *path* (each ended by LF or CRLF, and a last one by the
    file's end), and the text of those *wanted* (numbered from 1, line ends left out); None
    when a CR is not part of a CRLF (it ends a record, but no line here). Read a chunk at a
    time; only a chunk holding a wanted line is cut into lines."""
    lines, found, carried = 0, {}, b""
    with path.open("rb") as handle:
        while chunk := handle.read(_LINES_CHUNK):
            data = carried + chunk if carried else chunk
            end = data.rfind(b"\n") + 1  # the whole lines of data, and the rest carried
            whole, carried = data[:end], data[end:]
            if whole.count(b"\r") != whole.count(b"\r\n"):
                return None
            count = whole.count(b"\n")
            if any(lines < number <= lines + count for number in wanted):
                for number, text in enumerate(whole.split(b"\n")[:count], lines + 1):
                    if number in wanted:
                        found[number] = text.removesuffix(b"\r").decode("utf-8", "replace")
            lines += count
    if carried:  # a last line without a line end
        if b"\r" in carried:
            return None
        lines += 1
        if lines in wanted:
            found[lines] = carried.decode("utf-8", "replace")
    return lines, found


def physical_lines(text: str) -> list[str]:
    """*text* cut after every LF, CRLF and lone CR, endings kept."""
    return _LINES.findall(text)


# A record as read: its first line (1-based), its cells or why it was rejected, its raw text.
Record = tuple[int, list[str] | str, str]


@dataclass(frozen=True)
class Rows:
    header: list[str]
    rows: list[tuple[int, list[str]]] = field(default_factory=list)  # (line, cells padded)
    rejects: list[tuple[int, str, str]] = field(default_factory=list)  # (line, reason, raw)


def read_rows(text: str, delimiter: str) -> Rows:
    """Every record of *text* with the line it starts on (1-based), all in memory."""
    table = Table(iter(physical_lines(text)), delimiter)
    result = Rows(table.header)
    for line, cells, raw in table:
        if isinstance(cells, str):
            result.rejects.append((line, cells, raw))
        else:
            result.rows.append((line, cells))
    return result


class Table:
    """The records of delimited text after its header, as they are read: each padded to the
    header's width, or rejected (with the reason) when it has more fields or cannot be read.
    The records above the header come first: title rows (:data:`TITLE_ROW`) and those that
    cannot be read, with their reasons.

    The header is found by :func:`~pipeline.core.files.headers.find_header`, or is the record
    that starts on *header_line* (``--header-row``)."""

    def __init__(
        self, lines: Iterator[str], delimiter: str, header_line: int | None = None
    ) -> None:
        self._records = records(lines, delimiter)
        self._early: list[Record] = []
        self._pending: list[Record] = []
        self.header: list[str] = []
        self.header_line = 1  # the line the header starts on
        self.header_raw = ""
        if header_line is None:
            self._find()
        else:
            self._take(header_line)

    def _find(self) -> None:
        looked = list(itertools.islice(self._records, RULE_RECORDS))
        if not looked:
            return
        at = find_header([cells if isinstance(cells, list) else None for _, cells, _ in looked])
        self._keep(looked[:at], looked[at])
        self._pending = looked[at + 1 :]

    def _take(self, wanted: int) -> None:
        above: list[Record] = []
        for record in self._records:
            line, cells, _ = record
            if line == wanted and isinstance(cells, list):
                self._keep(above, record)
                return
            if line >= wanted:
                break
            above.append(record)
        raise UsageError(
            f"--header-row {wanted}: no record of the list starts on that line (it is past "
            "the end, inside a record that starts above it, or cannot be read). Give the line "
            "the header starts on, as the rejects file counts lines."
        )

    def _keep(self, above: list[Record], header: Record) -> None:
        self._early = [
            (line, TITLE_ROW if isinstance(cells, list) else cells, raw)
            for line, cells, raw in above
        ]
        self.header_line, cells, self.header_raw = header
        assert isinstance(cells, list)
        self.header = cells

    @property
    def above(self) -> list[Record]:
        """The records above the header, as rejects."""
        return list(self._early)

    def __iter__(self) -> Iterator[Record]:
        yield from self._early
        width = len(self.header)
        for line, cells, raw in itertools.chain(self._pending, self._records):
            if not isinstance(cells, list) or len(cells) == width:  # most records
                yield line, cells, raw
            elif len(cells) > width:
                yield line, f"row has {len(cells)} fields but the header has {width}", raw
            else:
                yield line, cells + [""] * (width - len(cells)), raw


def records(lines: Iterator[str], delimiter: str) -> Iterator[Record]:
    """Every record of the text whose physical lines *lines* yields, header included.

    A quoted field that runs to the end of the text, or over more than
    :data:`MAX_RECORD_LINES` lines, is a quote that never closes: its first line alone is
    rejected and reading starts again at the line after it (the lines it swallowed are read
    again). Memory: one record.
    """
    csv.field_size_limit(_FIELD_LIMIT)
    feed = _Feed(lines)
    while True:
        why = ""
        try:
            for cells in csv.reader(feed, delimiter=delimiter):
                if feed.done and _unclosed(feed.taken, delimiter):
                    why = _UNCLOSED
                    break
                taken = feed.take()
                yield feed.line - len(taken) + 1, cells, "".join(taken).rstrip("\r\n")
            else:
                return
        except csv.Error as exc:
            why = _why(exc)
        taken = feed.take()
        if not taken:
            return
        yield feed.line - len(taken) + 1, why, taken[0].rstrip("\r\n")
        feed.replay(taken[1:])


MAX_RECORD_LINES: Final = 10_000  # a quoted field longer than this is an unclosed quote
_UNCLOSED: Final = "a quote opened here is never closed"


def _why(exc: csv.Error) -> str:
    text = str(exc)
    return text if text == _UNCLOSED else f"unreadable CSV: {text}"


def _unclosed(lines: list[str], delimiter: str) -> bool:
    """Whether a record that ran to the end of the text did so inside a quoted field."""
    try:
        for _ in csv.reader(lines, delimiter=delimiter, strict=True):
            pass
    except csv.Error as exc:
        return "unexpected end of data" in str(exc)
    return False


class _Feed:
    """Lines for csv.reader, keeping those of the record being read so that a bad record's
    lines can be given back (:meth:`replay`) and read again."""

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines
        self._again: list[str] = []  # given back, in reverse order
        self.taken: list[str] = []  # the lines of the record being read
        self.line = 0  # lines handed out, replays counted once
        self.done = False

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> str:
        if len(self.taken) >= MAX_RECORD_LINES:
            raise csv.Error(_UNCLOSED)
        if self._again:
            text = self._again.pop()
        else:
            following = next(self._lines, None)
            if following is None:
                self.done = True
                raise StopIteration
            text = following
        self.line += 1
        self.taken.append(text)
        return text

    def take(self) -> list[str]:
        """The lines of the record just read (and forget them)."""
        taken, self.taken = self.taken, []
        return taken

    def replay(self, lines: list[str]) -> None:
        self._again.extend(reversed(lines))
        self.line -= len(lines)
        self.done = False
