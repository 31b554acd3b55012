"""Delimited text as people export it: its encoding, its delimiter, and every record in it.

Encodings: UTF-8 with or without a BOM; UTF-16 with a BOM, or without one when the zero bytes
of ASCII text give it away (Excel's "Unicode Text"); otherwise Windows-1252 (what spreadsheet
programs on Windows write), and Latin-1 as the last resort because it decodes any byte string.
Delimiters: ``,`` ``;`` TAB ``|``, sniffed from the first lines.

:func:`read_rows` is the exact reader: it accounts for every physical line. A record ends at
LF, CRLF or a lone CR (old Mac files) outside quotes (RFC 4180 §2); a row with more fields than
the header is rejected with its line number and raw text rather than silently cut; a shorter
one is padded; a quote opened and never closed swallows nothing: its line alone is rejected and
reading goes on at the next line. Fields may be as long as memory allows.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

import polars as pl
import pyarrow as pa

_SNIFF_LINES: Final = 20
DELIMITERS: Final = (",", ";", "\t", "|")
# Python's csv stops at 131,072 characters a field by default; the fast reader has no limit.
_FIELD_LIMIT: Final = 2**31 - 1
# Physical lines, each with its ending: LF, CRLF or a lone CR.
_LINES: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_UTF16_BOMS: Final = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}
_COUNT_CHUNK: Final = 1 << 26  # bytes looked at together when counting records


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # "utf-8", "utf-16-le", "utf-16-be", "cp1252" or "latin-1"
    bad_offset: int | None  # where UTF-8 decoding first failed; None for UTF-8 and UTF-16


def decode(raw: bytes) -> Decoded:
    utf16 = _utf16(raw)
    if utf16 is not None:
        bom = raw[:2] in _UTF16_BOMS
        return Decoded(raw[2 if bom else 0 :].decode(utf16, errors="replace"), utf16, None)
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    try:
        return Decoded(raw.decode("utf-8"), "utf-8", None)
    except UnicodeDecodeError as exc:
        bad = exc.start
    try:
        return Decoded(raw.decode("cp1252"), "cp1252", bad)
    except UnicodeDecodeError:
        return Decoded(raw.decode("latin-1"), "latin-1", bad)


def _utf16(raw: bytes) -> str | None:
    """UTF-16 by its BOM, or by the zero high bytes that Latin-script text has in it."""
    if raw[:2] in _UTF16_BOMS:
        return _UTF16_BOMS[raw[:2]]
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
    if not data:
        return 0
    if b'"' in data:
        ends = _ends_outside_quotes(data)
        if ends is None:
            return None
    else:
        ends = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    return ends + (data[-1:] not in (b"\n", b"\r"))


def _ends_outside_quotes(data: bytes) -> int | None:
    ends, parity = 0, 0
    for start in range(0, len(data), _COUNT_CHUNK):
        chunk = data[start : start + _COUNT_CHUNK + 1]  # one byte more: a CRLF split in two
        size = min(_COUNT_CHUNK, len(data) - start)
        buffer = pa.py_buffer(chunk)
        bytes_ = pl.from_arrow(pa.Array.from_buffers(pa.uint8(), len(chunk), [None, buffer]))
        assert isinstance(bytes_, pl.Series)
        b = pl.col(bytes_.name)
        counted = (
            bytes_.to_frame()
            .select(
                quote=(b == ord('"')).cast(pl.UInt32),
                end=(b == ord("\n"))
                | ((b == ord("\r")) & (b.shift(-1) != ord("\n")).fill_null(True)),
            )
            .head(size)
            .select(
                quotes=pl.col("quote").sum(),
                ends=(pl.col("end") & ((pl.col("quote").cum_sum() + parity) % 2 == 0)).sum(),
            )
            .row(0)
        )
        ends += int(counted[1])
        parity = (parity + int(counted[0])) % 2
    return ends if parity == 0 else None


def physical_lines(text: str) -> list[str]:
    """*text* cut after every LF, CRLF and lone CR, endings kept."""
    return _LINES.findall(text)


@dataclass(frozen=True)
class Rows:
    header: list[str]
    rows: list[tuple[int, list[str]]] = field(default_factory=list)  # (line, cells padded)
    rejects: list[tuple[int, str, str]] = field(default_factory=list)  # (line, reason, raw)


def read_rows(text: str, delimiter: str) -> Rows:
    """Every record with the line it starts on (1-based); quoted fields may span lines."""
    csv.field_size_limit(_FIELD_LIMIT)
    lines = physical_lines(text)
    result = Rows([])
    width = -1  # no header yet
    for first, end, cells in _records(lines, delimiter):
        raw = "".join(lines[first:end]).rstrip("\r\n")
        if isinstance(cells, str):
            result.rejects.append((first + 1, cells, raw))
        elif width < 0:
            result.header.extend(cells)
            width = len(cells)
        elif len(cells) > width:
            reason = f"row has {len(cells)} fields but the header has {width}"
            result.rejects.append((first + 1, reason, raw))
        else:
            result.rows.append((first + 1, cells + [""] * (width - len(cells))))
    return result


def _records(lines: list[str], delimiter: str) -> Iterator[tuple[int, int, list[str] | str]]:
    """(first line, end line, cells) per record, or (line, line + 1, why) for a line that
    cannot start a record (a quote that never closes), after which reading starts again at
    the next line."""
    position = 0
    while position < len(lines):
        feed = _Feed(lines, position)
        try:
            for cells in csv.reader(feed, delimiter=delimiter):
                first, end = position, feed.taken
                if end == len(lines) and _unclosed(lines[first:end], delimiter):
                    raise csv.Error("a quote opened here is never closed")
                yield first, end, cells
                position = end
            return
        except csv.Error as exc:
            yield position, position + 1, str(exc)
            position += 1


def _unclosed(lines: list[str], delimiter: str) -> bool:
    """Whether a record that ran to the end of the file did so inside a quoted field."""
    try:
        for _ in csv.reader(lines, delimiter=delimiter, strict=True):
            pass
    except csv.Error as exc:
        return "unexpected end of data" in str(exc)
    return False


class _Feed:
    """The lines from *start* on, one at a time, counting how many the reader took."""

    def __init__(self, lines: list[str], start: int) -> None:
        self._lines = lines
        self.taken = start

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> str:
        if self.taken >= len(self._lines):
            raise StopIteration
        self.taken += 1
        return self._lines[self.taken - 1]
