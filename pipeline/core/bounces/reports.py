"""Bounce reports into events: tables exported by a sending service (CSV or Parquet), or DSNs.

A table's type column decides: ``hard``/``permanent`` -> hard, ``soft``/``transient``/
``temporary`` -> soft, ``delivered``/``success`` -> delivered (also spelled ``HardBounce``,
``soft_bounce``, ...); when the type cell is empty, the status cell: an enhanced status code
(RFC 3463 §3.1: class 5 permanent, 4 transient, 2 success) or else a bare SMTP reply code
(RFC 5321 §4.2.1: 5yz, 4yz, 2yz) decides in the same way. A row's time is its date cell, or
the file's modification time when it has none.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipeline.core.addresses.normalize import normalize_column
from pipeline.core.addresses.syntax import ParsedAddress, Syntax
from pipeline.core.bounces.dsn import MBOX_FROM_LINE, looks_like_message, messages_events, read_mbox
from pipeline.core.bounces.types import BounceEvent, BounceKind, Rejected
from pipeline.core.bounces.values import cell_text, timestamp
from pipeline.core.errors import InputError
from pipeline.core.files.tables import (
    FileKind,
    Table,
    file_kind,
    find_column,
    read_head,
    read_table,
)
from pipeline.core.status_codes import find_status, status_class

# Header names of a bounce table, compared after case-folding and dropping spaces, - and _
# ("E-Mail", "Bounce Type", "bounced_at" all match). The first name found wins.
_EMAIL_NAMES: Final = ("email", "emailaddress", "recipient", "address")


_TYPE_NAMES: Final = ("type", "kind", "bouncetype")


_STATUS_NAMES: Final = ("status", "code", "smtpstatus")


_DATE_NAMES: Final = ("date", "timestamp", "time", "bouncedat")


_REASON_NAMES: Final = ("reason", "diagnostic", "message")


# The cells of a row besides the address, in the order _row_event takes them.
_CELL_NAMES: Final = (_TYPE_NAMES, _STATUS_NAMES, _DATE_NAMES, _REASON_NAMES)


_TYPE_WORDS: Final = {
    "hard": BounceKind.HARD,
    "permanent": BounceKind.HARD,
    "soft": BounceKind.SOFT,
    "transient": BounceKind.SOFT,
    "temporary": BounceKind.SOFT,
    "delivered": BounceKind.DELIVERED,
    "delivery": BounceKind.DELIVERED,
    "success": BounceKind.DELIVERED,
}


# RFC 3463 §3.1 status classes and RFC 5321 §4.2.1 reply-code first digits mean the same.
_CLASSES: Final = {"2": BounceKind.DELIVERED, "4": BounceKind.SOFT, "5": BounceKind.HARD}


# RFC 5321 §4.2: a three-digit reply code at the start ("550", "450 Mailbox busy").
_REPLY_CODE: Final = re.compile(r"\s*([245])[0-5]\d(?![\d.])")


_SNIFF_BYTES: Final = 4096
_WHAT: Final = "bounce file"


def read_bounce_file(path: Path) -> tuple[list[BounceEvent], Rejected]:
    """The events in one bounce report, and (where, why) for each row or message skipped.

    Tables are CSV (delimiter and encoding sniffed) or Parquet; DSNs come one per ``.eml`` or
    many in an ``.mbox`` (also recognised by its first line, ``From sender date``). Bad
    content never raises: :class:`InputError` means the file cannot be read at all, or is a
    table without an email column.
    """
    head = read_head(path, _SNIFF_BYTES, _WHAT)
    mtime = _modified(path)
    suffix = path.suffix.lower()
    if file_kind(path, head) is FileKind.PARQUET:
        return _table_events(read_table(path, _WHAT), path, mtime)
    if suffix == ".mbox" or MBOX_FROM_LINE.match(head):
        return messages_events(read_mbox(path), path.name, mtime)
    if suffix == ".eml" or looks_like_message(head):
        return messages_events([(path.name, _read_bytes(path))], path.name, mtime)
    return _table_events(read_table(path, _WHAT), path, mtime)


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError as exc:
        raise InputError(f"Cannot read the {_WHAT} {path}: {exc.strerror}.") from exc


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read the bounce file {path}: {exc.strerror}.") from exc


def _table_events(table: Table, path: Path, mtime: float) -> tuple[list[BounceEvent], Rejected]:
    email_column = find_column(table.columns, _EMAIL_NAMES)
    if email_column is None:
        listing = ", ".join(repr(c) for c in table.columns) or "(none)"
        raise InputError(
            f"Cannot tell which column of {path} holds the bounced addresses: none is named "
            f"email, e-mail, recipient or address (in any case). Its columns are: {listing}. "
            "Rename the address column to one of those."
        )
    rejected = list(table.rejected)
    if not any(find_column(table.columns, n) for n in (_TYPE_NAMES, _STATUS_NAMES)):
        why = "the file has no type or status column: hard or soft?"
        return [], rejected + [(where, why) for where in table.where]
    raw = table.columns[email_column]
    cells = zip(*(_column(table, names) for names in _CELL_NAMES), strict=True)
    events: list[BounceEvent] = []
    for where, value, address, row in zip(table.where, raw, _parse_column(raw), cells, strict=True):
        result = _row_event(value, address, row, path.name, mtime)
        if isinstance(result, BounceEvent):
            events.append(result)
        else:
            rejected.append((where, result))
    return events, rejected


def _parse_column(values: list[Any]) -> list[ParsedAddress]:
    """parse_address for a whole column, through its vectorized twin."""
    texts = pl.Series([None if v is None else str(v) for v in values], dtype=pl.String)
    return [
        ParsedAddress(email, local, domain, key, Syntax(syntax), detail)
        for email, local, domain, key, syntax, detail in normalize_column(texts).iter_rows()
    ]


def _row_event(
    value: object,
    address: ParsedAddress,
    cells: tuple[object, ...],
    source: str,
    mtime: float,
) -> BounceEvent | str:
    """The event of one table row, or why there is none; *cells*: type, status, date, reason."""
    kind_cell, status_cell, date_cell, reason_cell = cells
    if address.syntax in (Syntax.INVALID, Syntax.EMPTY):
        return f"no address in {value!r}: {address.detail}"
    decided = _classify(kind_cell, status_cell)
    if isinstance(decided, str):
        return decided
    at = timestamp(date_cell, mtime)
    if at is None:
        return f"unreadable date {date_cell!r}: ISO 8601 or Unix seconds expected"
    kind, status = decided
    return BounceEvent(
        cell_text(value),
        address.key,
        address.domain,
        kind,
        status,
        at,
        cell_text(reason_cell),
        source,
    )


def _column(table: Table, names: tuple[str, ...]) -> list[Any]:
    found = find_column(table.columns, names)
    return table.columns[found] if found is not None else [None] * len(table.where)


def _classify(kind_value: object, status_value: object) -> tuple[BounceKind, str] | str:
    """(kind, enhanced status) from a row's type and status cells, or why neither tells."""
    status_text = cell_text(status_value)
    status = find_status(status_text)
    word = cell_text(kind_value)
    if word:
        # "HardBounce", "soft_bounce", "Permanent" -> hard, soft, permanent.
        kind = _TYPE_WORDS.get(re.sub(r"[^a-z]", "", word.casefold()).removesuffix("bounce"))
        if kind is None:
            return f"unknown bounce type {word!r}: hard, soft or delivered expected"
        return kind, status
    if status:
        return _CLASSES[status_class(status)], status
    reply = _REPLY_CODE.match(status_text)
    if reply:
        return _CLASSES[reply.group(1)], ""
    if status_text:
        return f"status {status_text!r} is no SMTP status code: cannot tell hard from soft"
    return "neither a bounce type nor an SMTP status"
