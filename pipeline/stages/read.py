"""Stage 1, read: a CSV or Parquet list into a frame, keeping every original column.

CSV files are sniffed (delimiter among ``, ; TAB |``; UTF-8 with or without BOM, UTF-16, else
cp1252 or Latin-1 with a warning). Rows that cannot be parsed, such as a row with more fields
than the header, go to the rejects table with their line number, the reason and the raw text,
so that rows in = rows out + rows rejected, always. The fast reader (polars) is trusted only
when its row count equals the records counted without it (:func:`count_records`); otherwise
the exact reader, which accounts for every line, reads the file.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline.core.delimited import count_records, decode, read_rows, sniff_delimiter
from pipeline.core.errors import InputError
from pipeline.core.schema import OUTPUT_COLUMNS
from pipeline.core.tables import (
    HEAD_BYTES,
    FileKind,
    file_kind,
    find_column,
    read_head,
    read_parquet,
    refuse_kind,
)

_SNIFF_BYTES = 64 * 1024
_WHAT = "input file"
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
    kind = file_kind(path, read_head(path, HEAD_BYTES, _WHAT))
    if kind is FileKind.PARQUET:
        result = _read_parquet(path)
    elif kind is FileKind.TEXT:
        result = _read_csv(path)
    else:
        raise refuse_kind(path, kind, _WHAT)
    column = find_email_column(result.frame.columns, email_column, path)
    frame, renamed = _avoid_collisions(_as_text(result.frame, column, path))
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


def _as_text(frame: pl.DataFrame, column: str, path: Path) -> pl.DataFrame:
    """*frame* with its email column as text. Numbers and nulls are cast; bytes are decoded as
    UTF-8, a value that is not UTF-8 spelled with \\x escapes (so it is never an address); a
    column of lists or records holds no address and is refused."""
    dtype = frame.schema[column]
    if dtype == pl.String:
        return frame
    if dtype == pl.Binary:
        decoded = frame.get_column(column).map_elements(_decoded, return_dtype=pl.String)
        return frame.with_columns(decoded.alias(column))
    if dtype.is_nested() or dtype == pl.Object:
        raise InputError(
            f"The email column {column!r} of {path} holds {dtype} values (lists or records), "
            "not text. Name the column of plain addresses with --email-column."
        )
    return frame.with_columns(pl.col(column).cast(pl.String))


def _decoded(value: bytes) -> str:
    return value.decode("utf-8", errors="backslashreplace")


def _read_parquet(path: Path) -> ReadResult:
    return ReadResult(read_parquet(path), "", pl.DataFrame(schema=REJECT_SCHEMA), "parquet")


def _read_csv(path: Path) -> ReadResult:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read the {_WHAT} {path}: {exc.strerror}.") from exc
    data, encoding, warnings = _to_utf8(raw, path)
    if not data.strip():
        raise InputError(f"{path} is empty: there is no header row and no address in it.")
    delimiter = sniff_delimiter(data[:_SNIFF_BYTES].decode("utf-8", errors="ignore"))
    fast = _read_fast(data, delimiter)
    if fast is not None:
        return ReadResult(
            fast, "", pl.DataFrame(schema=REJECT_SCHEMA), "csv", encoding, delimiter, warnings
        )
    frame, rejects = _read_csv_precisely(data.decode("utf-8"), delimiter)
    return ReadResult(frame, "", rejects, "csv", encoding, delimiter, warnings)


def _read_fast(data: bytes, delimiter: str) -> pl.DataFrame | None:
    """polars' reader, when its rows are exactly the records in *data*; None otherwise
    (ragged rows, a lone CR ending a line, a quote that never closes, ...)."""
    records = count_records(data)
    if records is None:
        return None
    try:
        frame = pl.read_csv(data, separator=delimiter, infer_schema=False, quote_char='"')
    except pl.exceptions.ComputeError:
        return None
    return frame if frame.height == records - 1 else None


def _to_utf8(raw: bytes, path: Path) -> tuple[bytes, str, tuple[str, ...]]:
    decoded = decode(raw)
    if decoded.encoding == "utf-8":
        return raw.removeprefix(b"\xef\xbb\xbf"), decoded.encoding, ()
    if decoded.bad_offset is None:  # UTF-16: a Unicode encoding, nothing to warn about
        return decoded.text.encode("utf-8"), decoded.encoding, ()
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
