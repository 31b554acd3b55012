"""Files of rows as people export them: one reader for lists, bounce reports and contacts.

One rule tells Parquet from text (:func:`is_parquet`), one finds a column by its header
(:func:`find_column`; each kind of table keeps its own candidate names), and one reads a record
table of either kind column by column (:func:`read_table`).

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
from typing import Any, Final

import polars as pl

from pipeline.core.errors import InputError

DELIMITERS = (",", ";", "\t", "|")
_SNIFF_LINES = 20
_SNIFF_CHARS: Final = 65536
# Apache Parquet files start (and end) with these four bytes.
PARQUET_MAGIC: Final = b"PAR1"


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


def is_parquet(path: Path, head: bytes) -> bool:
    """Parquet by its magic bytes; a ``.parquet`` name without them is a broken Parquet file
    (a truncated copy, say), to be refused as one rather than read as text."""
    return head.startswith(PARQUET_MAGIC) or path.suffix.lower() == ".parquet"


def read_head(path: Path, size: int, what: str) -> bytes:
    """The first *size* bytes of *path*, or an InputError naming *what* the file was to be."""
    try:
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise InputError(
            f"Cannot read the {what} {path}: {exc.strerror}. Check the path and permissions."
        ) from exc


@dataclass(frozen=True)
class Table:
    """A record table column by column; ``where`` names each row for rejects."""

    columns: dict[str, list[Any]]
    where: list[str]
    rejected: list[tuple[str, str]]  # (where, why) for rows that could not be read


def read_table(path: Path, what: str, *, text: bool = False) -> Table:
    """A CSV or Parquet record table. Parquet values keep their types unless *text* asks for
    strings (nulls as ""); delimited text skips blank lines."""
    if is_parquet(path, read_head(path, len(PARQUET_MAGIC), what)):
        frame = read_parquet(path)
        if text:
            frame = frame.select(pl.all().cast(pl.String).fill_null(""))
        columns = {name: frame.get_column(name).to_list() for name in frame.columns}
        return Table(columns, [f"{path.name} row {n}" for n in range(1, frame.height + 1)], [])
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read the {what} {path}: {exc.strerror}.") from exc
    decoded = decode(raw).text
    found = read_rows(decoded, sniff_delimiter(decoded[:_SNIFF_CHARS]))
    rows = [(line, cells) for line, cells in found.rows if any(c.strip() for c in cells)]
    columns = {name: [cells[i] for _, cells in rows] for i, name in enumerate(found.header)}
    where = [f"{path.name} line {line}" for line, _ in rows]
    rejected = [(f"{path.name} line {line}", why) for line, why, _ in found.rejects]
    return Table(columns, where, rejected)


def read_parquet(path: Path) -> pl.DataFrame:
    """A Parquet file, or an InputError that names it (a truncated copy is the usual cause)."""
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(
            f"Cannot read {path} as Parquet: {exc}. Check that the file is complete."
        ) from exc
