"""Stage 1, read: a CSV or Parquet list into a frame, keeping every original column.

CSV files are sniffed (delimiter among ``, ; TAB |``; UTF-8 with or without BOM, else cp1252 or
Latin-1 with a warning). Rows that cannot be parsed, such as a row with more fields than the
header, go to the rejects table with their line number and the reason, so that
rows in = rows out + rows rejected, always.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline.core.errors import InputError
from pipeline.core.schema import OUTPUT_COLUMNS
from pipeline.core.tables import (
    PARQUET_MAGIC,
    decode,
    find_column,
    is_parquet,
    read_head,
    read_parquet,
    read_rows,
    sniff_delimiter,
)

_SNIFF_BYTES = 64 * 1024
# Header names we recognise as the email column, compared without case, spaces, - or _.
_EMAIL_NAMES = ("email", "emailaddress", "mail", "emailaddr", "mailaddress")
REJECT_SCHEMA = {"line": pl.Int64, "reason": pl.String, "raw": pl.String}


@dataclass(frozen=True)
class ReadResult:
    frame: pl.DataFrame  # the original columns, values as read (CSV: all strings)
    email_column: str
    rejects: pl.DataFrame  # line, reason, raw
    source_format: str
    encoding: str = ""
    delimiter: str = ""
    warnings: tuple[str, ...] = field(default=())


def read_list(path: Path, email_column: str | None = None) -> ReadResult:
    """Read *path*; raise :class:`InputError` when it cannot be used as a list."""
    head = read_head(path, len(PARQUET_MAGIC), "input file")
    result = _read_parquet(path) if is_parquet(path, head) else _read_csv(path)
    column = find_email_column(result.frame.columns, email_column, path)
    frame, renamed = _avoid_collisions(result.frame)
    warnings = result.warnings + tuple(
        f"Input column {old!r} is named like an output column; it is kept as {new!r}."
        for old, new in renamed.items()
    )
    return dataclasses.replace(
        result, frame=frame, email_column=renamed.get(column, column), warnings=warnings
    )


def find_email_column(columns: list[str], wanted: str | None, path: Path) -> str:
    """The email column: *wanted* if given (exact, then case-insensitive), else by name."""
    if wanted is not None:
        matches = [c for c in columns if c == wanted] or [
            c for c in columns if c.casefold() == wanted.casefold()
        ]
        if matches:
            return matches[0]
        raise InputError(
            f"{path} has no column named {wanted!r}. Its columns are: {_listing(columns)}. "
            "Pass one of them with --email-column."
        )
    found = find_column(columns, _EMAIL_NAMES)
    if found is not None:
        return found
    raise InputError(
        f"Cannot tell which column of {path} holds the email addresses. Its columns are: "
        f"{_listing(columns)}. Name it with --email-column."
    )


def _listing(columns: list[str]) -> str:
    return ", ".join(repr(c) for c in columns) if columns else "(none)"


def _avoid_collisions(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    renamed: dict[str, str] = {}
    for name in frame.columns:
        if name in OUTPUT_COLUMNS:
            new = f"input_{name}"
            while new in frame.columns or new in renamed.values():
                new = f"input_{new}"
            renamed[name] = new
    return (frame.rename(renamed) if renamed else frame), renamed


def _read_parquet(path: Path) -> ReadResult:
    return ReadResult(read_parquet(path), "", pl.DataFrame(schema=REJECT_SCHEMA), "parquet")


def _read_csv(path: Path) -> ReadResult:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read the input file {path}: {exc.strerror}.") from exc
    data, encoding, warnings = _to_utf8(raw, path)
    delimiter = sniff_delimiter(data[:_SNIFF_BYTES].decode("utf-8", errors="ignore"))
    if not data.strip():
        raise InputError(f"{path} is empty: there is no header row and no address in it.")
    try:
        frame = pl.read_csv(data, separator=delimiter, infer_schema=False, quote_char='"')
        rejects = pl.DataFrame(schema=REJECT_SCHEMA)
    except pl.exceptions.ComputeError:
        # Ragged or otherwise irregular rows: the precise reader keeps every good row and
        # names each bad one with its line number.
        frame, rejects = _read_csv_precisely(data.decode("utf-8"), delimiter)
    return ReadResult(frame, "", rejects, "csv", encoding, delimiter, warnings)


def _to_utf8(raw: bytes, path: Path) -> tuple[bytes, str, tuple[str, ...]]:
    decoded = decode(raw)
    if decoded.bad_offset is None:
        return raw.removeprefix(b"\xef\xbb\xbf"), decoded.encoding, ()
    warning = (
        f"{path} is not valid UTF-8 (first bad byte at offset {decoded.bad_offset}); "
        f"read it as {decoded.encoding}. Save the file as UTF-8 to silence this warning."
    )
    return decoded.text.encode("utf-8"), decoded.encoding, (warning,)


def _read_csv_precisely(text: str, delimiter: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    found = read_rows(text, delimiter)
    # Empty cells are nulls, as polars' fast reader makes them.
    rows = [[cell or None for cell in cells] for _, cells in found.rows]
    names = _unique_names(found.header)
    frame = pl.DataFrame(rows, schema=dict.fromkeys(names, pl.String), orient="row")
    return frame, pl.DataFrame(found.rejects, schema=REJECT_SCHEMA, orient="row")


def _unique_names(header: list[str]) -> list[str]:
    # The same renaming polars applies, so both readers name duplicate headers alike.
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
