"""Files of rows as people export them: one reader for lists, bounce reports and contacts.

Encodings: UTF-8 with or without a BOM; otherwise Windows-1252 (what spreadsheet programs on
Windows write), and Latin-1 as the last resort because it decodes any byte string. Delimiters:
``,`` ``;`` TAB ``|``, sniffed from the first lines. A row with more fields than the header is
rejected with its line number rather than silently cut; a shorter one is padded.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline.core.errors import InputError

DELIMITERS = (",", ";", "\t", "|")
_SNIFF_LINES = 20


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # "utf-8", "cp1252" or "latin-1"
    bad_offset: int | None  # where UTF-8 decoding first failed; None when the file is UTF-8


def decode(raw: bytes) -> Decoded:
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    try:
        return Decoded(raw.decode("utf-8"), "utf-8", None)
    except UnicodeDecodeError as exc:
        bad = exc.start
    try:
        return Decoded(raw.decode("cp1252"), "cp1252", bad)
    except UnicodeDecodeError:
        return Decoded(raw.decode("latin-1"), "latin-1", bad)


def sniff_delimiter(sample: str) -> str:
    """The delimiter that splits the first lines most consistently; ``,`` when unsure."""
    lines = [line for line in sample.splitlines()[:_SNIFF_LINES] if line.strip()]
    if not lines:
        return ","
    best, best_score = ",", 0
    for delimiter in DELIMITERS:
        counts = [len(row) - 1 for row in csv.reader(lines, delimiter=delimiter)]
        header = counts[0]
        score = header * sum(1 for c in counts if c == header)
        if score > best_score:
            best, best_score = delimiter, score
    return best


@dataclass(frozen=True)
class Rows:
    header: list[str]
    rows: list[tuple[int, list[str]]] = field(default_factory=list)  # (line, cells padded)
    rejects: list[tuple[int, str, str]] = field(default_factory=list)  # (line, reason, raw)


def read_rows(text: str, delimiter: str) -> Rows:
    """Every record with the line it starts on; quoted fields may span lines."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = next(reader, [])
    result = Rows(header)
    width = len(header)
    line = reader.line_num + 1
    try:
        for record in reader:
            if len(record) > width:
                reason = f"row has {len(record)} fields but the header has {width}"
                result.rejects.append((line, reason, delimiter.join(record)))
            else:
                result.rows.append((line, record + [""] * (width - len(record))))
            line = reader.line_num + 1
    except csv.Error as exc:  # e.g. a field over csv.field_size_limit(): the rest is unusable
        result.rejects.append((line, f"unreadable CSV from here on: {exc}", ""))
    return result


def find_column(columns: Iterable[str], names: Sequence[str]) -> str | None:
    """The first of *columns* called one of *names* (in the order of *names*), comparing
    without case, spaces, ``-`` or ``_``: "E-Mail", "email_address" and "Email Address" are
    how exports spell the same header. *names* are given in that folded form."""
    folded = {column: re.sub(r"[\s_\-]+", "", column.casefold()) for column in columns}
    for name in names:
        for column, key in folded.items():
            if key == name:
                return column
    return None


def read_parquet(path: Path) -> pl.DataFrame:
    """A Parquet file, or an InputError that names it (a truncated copy is the usual cause)."""
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(
            f"Cannot read {path} as Parquet: {exc}. Check that the file is complete."
        ) from exc
