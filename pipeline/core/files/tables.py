"""Files of rows as people export them: one reader for lists, bounce reports and contacts.

One rule tells what a file is from its first bytes (:func:`file_kind`: Parquet, text, or a
compressed file, archive or workbook, which the list reader unpacks and the other tables refuse
by name), one finds a column by its header (:func:`find_column`; each
kind of table keeps its own candidate names), and one reads a record table of either kind column
by column (:func:`read_table`). Delimited text itself (encodings, delimiters, the exact record
reader) is :mod:`pipeline.core.files.delimited`'s.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipeline.core.errors import InputError
from pipeline.core.files.delimited import decode, read_rows, sniff_delimiter

_SNIFF_CHARS: Final = 65536
# Apache Parquet files start (and end) with these four bytes.
PARQUET_MAGIC: Final = b"PAR1"
HEAD_BYTES: Final = 10  # enough for every signature below


class FileKind(StrEnum):
    """What a file is, by its first bytes (and, for a broken Parquet file, its name)."""

    EMPTY = "empty"
    TEXT = "text"
    PARQUET = "parquet"
    GZIP = "gzip"
    BZIP2 = "bzip2"
    ZSTD = "zstd"
    ZIP = "zip"
    XLSX = "xlsx"
    ARROW = "arrow"


# File signatures (the first bytes of each format's specification).
_SIGNATURES: Final = (
    (b"\x1f\x8b", FileKind.GZIP),  # RFC 1952 §2.3.1
    (b"\x28\xb5\x2f\xfd", FileKind.ZSTD),  # RFC 8878 §3.1.1: a Zstandard frame
    (b"PK\x03\x04", FileKind.ZIP),  # PKWARE APPNOTE §4.3.7: a local file header
    (b"ARROW1", FileKind.ARROW),  # Arrow IPC file format
)
# What to do with a file we recognise but cannot read (yet), said in the refusal.
_REMEDIES: Final = {
    FileKind.GZIP: "is gzip-compressed: decompress it (gunzip) and pass the CSV inside",
    FileKind.BZIP2: "is bzip2-compressed: decompress it (bunzip2) and pass the CSV inside",
    FileKind.ZSTD: "is Zstandard-compressed: decompress it (unzstd) and pass the CSV inside",
    FileKind.ZIP: "is a zip archive: extract the CSV file from it and pass that",
    FileKind.XLSX: "is an Excel workbook (.xlsx): save the sheet as CSV UTF-8 and pass that",
    FileKind.ARROW: "is an Arrow IPC file, not Parquet or CSV: write it out as Parquet",
}


def file_kind(path: Path, head: bytes) -> FileKind:
    """The kind of *path* from its first :data:`HEAD_BYTES` bytes."""
    if not head:
        return FileKind.EMPTY
    if head.startswith(PARQUET_MAGIC) or path.suffix.lower() == ".parquet":
        # A .parquet name without the magic is a broken Parquet file (a truncated copy,
        # say), refused as one rather than read as text.
        return FileKind.PARQUET
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return FileKind.XLSX if kind is FileKind.ZIP and _is_workbook(path) else kind
    # bzip2: "BZh", the block size (1-9), then the first block's magic (the digits of pi) or,
    # for no data at all, the end-of-stream magic (those of the square root of pi).
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return FileKind.BZIP2
    return FileKind.TEXT


def _is_workbook(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name.startswith("xl/") for name in archive.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def refuse_kind(path: Path, kind: FileKind, what: str) -> InputError:
    """The error for a file of a kind no table can be read from."""
    if kind is FileKind.EMPTY:
        return InputError(f"The {what} {path} is empty: there is no header row and no data.")
    return InputError(f"The {what} {path} {_REMEDIES[kind]}.")


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
    kind = file_kind(path, read_head(path, HEAD_BYTES, what))
    if kind not in (FileKind.PARQUET, FileKind.TEXT):
        raise refuse_kind(path, kind, what)
    if kind is FileKind.PARQUET:
        frame = read_parquet(path)
        if text:
            frame = frame.select(pl.all().cast(pl.String).fill_null(""))
        columns = {name: frame.get_column(name).to_list() for name in frame.columns}
        return Table(columns, [f"{path.name} row {n}" for n in range(1, frame.height + 1)], [])
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read the {what} {path}: {exc.strerror}.") from exc
    decoded = decode(raw, f"The {what} {path}").text
    found = read_rows(decoded, sniff_delimiter(decoded[:_SNIFF_CHARS]))
    rows = [(line, cells) for line, cells in found.rows if any(c.strip() for c in cells)]
    columns = {name: [cells[i] for _, cells in rows] for i, name in enumerate(found.header)}
    where = [f"{path.name} line {line}" for line, _ in rows]
    rejected = [(f"{path.name} line {line}", why) for line, why, _ in found.rejects]
    return Table(columns, where, rejected)


def check_parquet(path: Path) -> None:
    """InputError unless *path* starts like a Parquet file (a name is not enough)."""
    if not read_head(path, len(PARQUET_MAGIC), "Parquet file").startswith(PARQUET_MAGIC):
        raise InputError(
            f"{path} is named like a Parquet file but is not one (it does not start with "
            "PAR1). Check the file, or pass a CSV or Parquet list."
        )


def read_parquet(path: Path) -> pl.DataFrame:
    """A Parquet file, or an InputError that names it (a truncated copy is the usual cause)."""
    check_parquet(path)
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(
            f"Cannot read {path} as Parquet: {exc}. Check that the file is complete."
        ) from exc
