"""The bounce ledger: what mail servers said about our past mail, kept across runs.

Bounce reports arrive as tables exported by a sending service (CSV or Parquet) or as the
delivery status notifications themselves (RFC 3464 DSNs, one ``.eml`` or a whole ``.mbox``).
:func:`read_bounce_file` turns either into :class:`BounceEvent` rows; :class:`BounceLedger`
keeps them in a SQLite file (``bounces.sqlite`` beside the caches) and answers, for a batch of
dedupe keys at once, the two flags of the spec:

``known`` (HAS_KNOWN_BOUNCES)
    The address's latest hard bounce is newer than its latest ``delivered`` event, or it has
    no ``delivered`` event at all. A later successful delivery clears an old hard bounce: the
    mailbox came back, or the bounce was a mistake of the receiving side.
``suspected`` (HAS_SUSPECTED_BOUNCES)
    Either the address has at least ``bounces.soft_threshold`` soft bounces within the last
    ``bounces.soft_window_days`` days, not counting those before its latest ``delivered``
    event; or its domain looks dead: at least ``bounces.domain_min_addresses`` of the domain's
    addresses are known bounces (as above) and they are at least ``bounces.domain_hard_rate``
    of the domain's distinct addresses in the ledger. The domain rule also flags addresses the
    ledger has never seen, which is its point: a new address at a domain whose mailboxes all
    bounce will bounce too. (An SMTP answer of "disabled" or "mailbox full" is added to this
    flag by the engine, not here.)

How a report becomes a kind of event:

* a table's type column: ``hard``/``permanent`` -> hard, ``soft``/``transient``/``temporary``
  -> soft, ``delivered``/``success`` -> delivered (also spelled ``HardBounce``,
  ``soft_bounce``, ...); when the type cell is empty, the status cell: an enhanced status code
  (RFC 3463 §3.1: class 5 permanent, 4 transient, 2 success) or else a bare SMTP reply code
  (RFC 5321 §4.2.1: 5yz, 4yz, 2yz) decides in the same way.
* a DSN recipient block (RFC 3464 §2.3): ``Action: failed`` is hard, unless its ``Status``
  is of class 4 (a sender that gave up retrying a temporary failure, typically 4.4.7), which
  is soft; ``delayed`` is soft; ``delivered`` is delivered; ``relayed`` and ``expanded`` say
  nothing about the mailbox and are skipped.

An event's identity is (key, kind, status, time, reason), so importing the same report twice
adds nothing. Its time is the table's date, or the DSN's ``Last-Attempt-Date``, else its
``Arrival-Date``, else the message's ``Date``; only when none is given is it the file's
modification time. Dates without a zone are taken as UTC.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import email
import email.errors
import json
import mailbox
import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from email.message import Message
from email.utils import parsedate_to_datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, TypeVar

import polars as pl

from pipeline.core.address import ParsedAddress, Syntax, normalize_column, parse_address
from pipeline.core.config import BouncesConfig
from pipeline.core.errors import InputError
from pipeline.core.sqlite import SqliteFile
from pipeline.core.status_codes import find_status, leading_status, status_class
from pipeline.core.tables import (
    decode,
    find_column,
    read_parquet,
    read_rows,
    sniff_delimiter,
)

__all__ = [
    "BounceEvent",
    "BounceFlags",
    "BounceKind",
    "BounceLedger",
    "ImportReport",
    "read_bounce_file",
]


class BounceKind(StrEnum):
    HARD = "hard"  # permanent failure: the mailbox does not take mail
    SOFT = "soft"  # temporary failure: full, throttled, unreachable for now
    DELIVERED = "delivered"  # accepted: clears earlier hard bounces


@dataclass(frozen=True)
class BounceEvent:
    email: str  # as found in the report
    key: str  # parse_address(email).key, the dedupe key the whole project joins on
    domain: str
    kind: BounceKind
    status: str  # RFC 3463 enhanced status code such as "5.1.1"; "" when unknown
    at: float  # Unix time of the event
    reason: str  # diagnostic text; may be ""
    source: str  # name of the file it came from


@dataclass(frozen=True)
class ImportReport:
    read: int  # events found in the file (= added + duplicates)
    added: int
    duplicates: int  # events the ledger already held
    rejected: list[tuple[str, str]]  # (where, why) for rows and messages that were skipped


@dataclass(frozen=True)
class BounceFlags:
    known: bool
    suspected: bool
    last_hard_at: float | None  # Unix time of the latest hard bounce, None when there is none


# --------------------------------------------------------------------------- reading

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
_UNIX_TIME: Final = re.compile(r"[+-]?\d+(?:\.\d+)?")

_PARQUET_MAGIC: Final = b"PAR1"
_SNIFF_BYTES: Final = 4096
# RFC 4155 §2: an mbox starts with "From ", the envelope sender and an asctime() date.
_MBOX_FROM_LINE: Final = re.compile(rb"From \S+ +[A-Z][a-z]{2} [A-Z][a-z]{2} ")
# An RFC 5322 §2.2 header field at the very start: field name, colon.
_HEADER_LINE: Final = re.compile(rb"[!-9;-~]+:")

# RFC 3464 §2.1 and RFC 6533 §6.2: the machine-readable part of a DSN.
_STATUS_PARTS: Final = ("message/delivery-status", "message/global-delivery-status")
# RFC 3464 §2.3.2: address-type "rfc822"; RFC 6533 §3 adds "utf-8".
_ADDRESS_TYPES: Final = ("rfc822", "utf-8")
_SKIPPED_ACTIONS: Final = ("relayed", "expanded")

Rejected = list[tuple[str, str]]


@dataclass(frozen=True)
class _Table:
    """A bounce table column by column, values as read; ``where`` names each row for rejects."""

    columns: dict[str, list[Any]]
    where: list[str]
    rejected: Rejected


def read_bounce_file(path: Path) -> tuple[list[BounceEvent], Rejected]:
    """The events in one bounce report, and (where, why) for each row or message skipped.

    Tables are CSV (delimiter and encoding sniffed) or Parquet; DSNs come one per ``.eml`` or
    many in an ``.mbox`` (also recognised by its first line, ``From sender date``). Bad
    content never raises: :class:`InputError` means the file cannot be read at all, or is a
    table without an email column.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
        mtime = path.stat().st_mtime
    except OSError as exc:
        raise InputError(
            f"Cannot read the bounce file {path}: {exc.strerror}. Check the path and permissions."
        ) from exc
    suffix = path.suffix.lower()
    if head.startswith(_PARQUET_MAGIC) or suffix == ".parquet":
        return _table_events(_read_parquet(path), path, mtime)
    if suffix == ".mbox" or _MBOX_FROM_LINE.match(head):
        return _messages_events(_read_mbox(path), path.name, mtime)
    if suffix == ".eml" or _looks_like_message(head):
        return _messages_events([(path.name, _read_bytes(path))], path.name, mtime)
    return _table_events(_read_csv(path), path, mtime)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read the bounce file {path}: {exc.strerror}.") from exc


def _looks_like_message(head: bytes) -> bool:
    """A message starts with a header field and names a Content-Type; a CSV header does not."""
    return _HEADER_LINE.match(head) is not None and b"content-type:" in head.lower()


# ---- tables


def _read_parquet(path: Path) -> _Table:
    frame = read_parquet(path)
    columns = {name: frame.get_column(name).to_list() for name in frame.columns}
    return _Table(columns, [f"{path.name} row {n}" for n in range(1, frame.height + 1)], [])


def _read_csv(path: Path) -> _Table:
    text = decode(_read_bytes(path)).text
    found = read_rows(text, sniff_delimiter(text[:65536]))
    rows = [(line, cells) for line, cells in found.rows if any(c.strip() for c in cells)]
    columns = {name: [cells[i] for _, cells in rows] for i, name in enumerate(found.header)}
    where = [f"{path.name} line {line}" for line, _ in rows]
    rejected: Rejected = [(f"{path.name} line {line}", why) for line, why, _ in found.rejects]
    return _Table(columns, where, rejected)


def _table_events(table: _Table, path: Path, mtime: float) -> tuple[list[BounceEvent], Rejected]:
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
    at = _timestamp(date_cell, mtime)
    if at is None:
        return f"unreadable date {date_cell!r}: ISO 8601 or Unix seconds expected"
    kind, status = decided
    return BounceEvent(
        _text(value), address.key, address.domain, kind, status, at, _text(reason_cell), source
    )


def _column(table: _Table, names: tuple[str, ...]) -> list[Any]:
    found = find_column(table.columns, names)
    return table.columns[found] if found is not None else [None] * len(table.where)


def _classify(kind_value: object, status_value: object) -> tuple[BounceKind, str] | str:
    """(kind, enhanced status) from a row's type and status cells, or why neither tells."""
    status_text = _text(status_value)
    status = find_status(status_text)
    word = _text(kind_value)
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


def _timestamp(value: object, fallback: float) -> float | None:
    """Unix time of a date cell; *fallback* when it is empty, None when it is unreadable."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return fallback
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dt.datetime):
        return _as_utc(value).timestamp()
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp()
    if isinstance(value, str):
        return _parse_date(value.strip())
    return None


def _parse_date(text: str) -> float | None:
    if _UNIX_TIME.fullmatch(text):
        return float(text)
    try:
        return _as_utc(dt.datetime.fromisoformat(text)).timestamp()
    except ValueError:
        pass
    # Some exports copy the message's RFC 5322 §3.3 date-time.
    return _rfc5322_date(text)


def _rfc5322_date(text: str) -> float | None:
    try:
        return _as_utc(parsedate_to_datetime(text)).timestamp()
    except (ValueError, TypeError):
        return None


def _as_utc(moment: dt.datetime) -> dt.datetime:
    # A date without a zone (or RFC 5322 §3.3's "-0000", "zone unknown") is taken as UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def _text(value: object) -> str:
    """A cell or header as one line of text: folded header lines are joined (RFC 5322 §2.2.3)."""
    return "" if value is None else " ".join(str(value).split())


# ---- delivery status notifications


def _read_mbox(path: Path) -> list[tuple[str, bytes]]:
    try:
        box = mailbox.mbox(path, create=False)
        with contextlib.closing(box):
            return [
                (f"{path.name} message {n}", box.get_bytes(key))
                for n, key in enumerate(box.iterkeys(), start=1)
            ]
    except (OSError, mailbox.Error) as exc:
        raise InputError(f"Cannot read {path} as an mbox file: {exc}.") from exc


def _messages_events(
    messages: Iterable[tuple[str, bytes]], source: str, mtime: float
) -> tuple[list[BounceEvent], Rejected]:
    events: list[BounceEvent] = []
    rejected: Rejected = []
    for where, raw in messages:
        try:
            found, problems = _dsn_events(email.message_from_bytes(raw), where, source, mtime)
        except (email.errors.MessageError, ValueError, LookupError) as exc:
            rejected.append((where, f"unreadable message: {exc}"))
            continue
        events += found
        rejected += problems
    return events, rejected


def _dsn_events(
    message: Message, where: str, source: str, mtime: float
) -> tuple[list[BounceEvent], Rejected]:
    """One event per recipient block of an RFC 3464 report (§2.2 per-message, §2.3 recipient)."""
    part = next((p for p in message.walk() if p.get_content_type() in _STATUS_PARTS), None)
    if part is None:
        what = f"{message.get_content_type()}, subject {_text(message.get('Subject'))!r}"
        return [], [(where, f"not a delivery status notification (RFC 3464): {what}")]
    blocks = _field_blocks(part)
    per_message = blocks[0] if blocks and not _is_recipient_block(blocks[0]) else None
    recipients = [b for b in blocks if b is not per_message]
    if not recipients:
        return [], [(where, "the delivery status has no per-recipient fields")]
    arrival = per_message.get("Arrival-Date") if per_message is not None else None
    fallback = _first_date((arrival, message.get("Date")), mtime)
    events: list[BounceEvent] = []
    rejected: Rejected = []
    for n, block in enumerate(recipients, start=1):
        result = _recipient_event(block, source, fallback)
        if isinstance(result, BounceEvent):
            events.append(result)
        elif result:
            rejected.append((f"{where}, recipient {n}", result))
    return events, rejected


def _field_blocks(part: Message) -> list[Message]:
    """The non-empty field blocks of a delivery-status part (RFC 3464 §2.1)."""
    # The email package parses message/delivery-status into one Message per block. It does
    # not decode the part first: a (rare) base64-encoded report yields no fields at all.
    payload = part.get_payload()
    if not isinstance(payload, list):
        return []
    return [block for block in payload if isinstance(block, Message) and len(block)]


def _is_recipient_block(block: Message) -> bool:
    return any(name in block for name in ("Final-Recipient", "Original-Recipient", "Action"))


def _recipient_event(block: Message, source: str, fallback: float) -> BounceEvent | str:
    """The event of one recipient block, why it is unusable, or "" for relayed/expanded."""
    action_text = _text(block.get("Action"))
    # RFC 3464 §2.3.3: the action value may be followed by a comment.
    action = action_text.split(" ", 1)[0].casefold()
    status = leading_status(_text(block.get("Status")))
    if action in _SKIPPED_ACTIONS:
        return ""  # handed on, not delivered or refused: says nothing about the mailbox
    if action == "failed":
        # A failure reported with a class 4 status is a sender giving up on a temporary
        # condition (typically 4.4.7, delivery time expired): the mailbox may be fine.
        kind = BounceKind.SOFT if status.startswith("4") else BounceKind.HARD
    elif action == "delayed":
        kind = BounceKind.SOFT
    elif action == "delivered":
        kind = BounceKind.DELIVERED
    else:
        return f"unknown Action {action_text!r}: failed, delayed or delivered expected"
    address, problem = _recipient_address(block)
    if problem:
        return problem
    parsed = parse_address(address)
    if parsed.syntax in (Syntax.INVALID, Syntax.EMPTY):
        return f"recipient {address!r} is no address: {parsed.detail}"
    at = _first_date((block.get("Last-Attempt-Date"),), fallback)
    reason = _diagnostic(_text(block.get("Diagnostic-Code")))
    return BounceEvent(address, parsed.key, parsed.domain, kind, status, at, reason, source)


def _recipient_address(block: Message) -> tuple[str, str]:
    """(address, "") from Final-Recipient, else Original-Recipient; ("", why) when unusable."""
    text = _text(block.get("Final-Recipient") or block.get("Original-Recipient"))
    if not text:
        return "", "no Final-Recipient field"
    # RFC 3464 §2.3.2: address-type ";" generic-address. Some senders leave out the type.
    address_type, separator, address = text.partition(";")
    if not separator:
        address = address_type
    elif address_type.strip().casefold() not in _ADDRESS_TYPES:
        return "", f"recipient address type {address_type.strip()!r} is not rfc822"
    return address.strip().strip("<>").strip(), ""


def _diagnostic(text: str) -> str:
    # RFC 3464 §2.3.6: diagnostic-type ";" text; the type ("smtp", "X-Postfix") is dropped.
    return re.sub(r"^[A-Za-z][\w-]*\s*;\s*", "", text)


def _first_date(values: Iterable[object], fallback: float) -> float:
    """Unix time of the first readable RFC 5322 date-time among *values*, else *fallback*."""
    for value in values:
        text = _text(value)
        moment = _rfc5322_date(text) if text else None
        if moment is not None:
            return moment
    return fallback


# --------------------------------------------------------------------------- the ledger

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    key    TEXT NOT NULL,   -- parse_address(email).key
    domain TEXT NOT NULL,
    kind   TEXT NOT NULL,   -- hard | soft | delivered
    status TEXT NOT NULL,   -- RFC 3463 enhanced status code, "" when unknown
    at     REAL NOT NULL,   -- Unix time of the event
    reason TEXT NOT NULL,
    email  TEXT NOT NULL,   -- the address as the report spelled it
    source TEXT NOT NULL,   -- the report's file name
    UNIQUE (key, kind, status, at, reason)   -- an event's identity: re-imports add nothing
);
CREATE INDEX IF NOT EXISTS events_by_domain ON events (domain, key, kind, at);
CREATE INDEX IF NOT EXISTS events_by_time ON events (at);
"""

_INSERT = (
    "INSERT OR IGNORE INTO events (key, domain, kind, status, at, reason, email, source) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)

# Per address: its latest hard bounce and latest delivery; "known" compares the two.
_LATEST = """
    MAX(CASE WHEN e.kind = :hard THEN e.at END) AS last_hard,
    MAX(CASE WHEN e.kind = :delivered THEN e.at END) AS last_delivered"""
_KNOWN = "(last_hard IS NOT NULL AND (last_delivered IS NULL OR last_hard > last_delivered))"

# The keys asked for that have events; the index on (key, ...) that UNIQUE creates serves
# both the join and the count of recent soft bounces.
_PER_KEY = f"""
WITH wanted(key) AS (SELECT DISTINCT value FROM json_each(:keys)),
per_key AS (
    SELECT e.key AS key, {_LATEST}
    FROM wanted JOIN events AS e ON e.key = wanted.key
    GROUP BY e.key
)
SELECT key, last_hard, {_KNOWN},
       (SELECT COUNT(*) FROM events AS s
        WHERE s.key = per_key.key AND s.kind = :soft AND s.at >= :since
          AND (last_delivered IS NULL OR s.at > last_delivered))
FROM per_key
"""

# Among the domains asked for, those whose addresses in the ledger mostly are known bounces.
_DEAD_DOMAINS = f"""
WITH wanted(domain) AS (SELECT DISTINCT value FROM json_each(:domains)),
per_address AS (
    SELECT e.domain AS domain, {_LATEST}
    FROM wanted JOIN events AS e ON e.domain = wanted.domain
    GROUP BY e.domain, e.key
)
SELECT domain FROM per_address
GROUP BY domain
HAVING SUM({_KNOWN}) >= :min_addresses AND SUM({_KNOWN}) >= :rate * COUNT(*)
"""

_COLUMNS = "email, key, domain, kind, status, at, reason, source"
_NEWEST = f"SELECT {_COLUMNS} FROM events ORDER BY at DESC, rowid DESC LIMIT ?"
_NEWEST_OF = f"SELECT {_COLUMNS} FROM events WHERE key = ? ORDER BY at DESC, rowid DESC LIMIT ?"

_DAY = 86400.0
_T = TypeVar("_T")


class BounceLedger(SqliteFile):
    """Bounce events of all imported reports, and the flags they add up to per address.

    :meth:`flags` answers a whole batch with two set-based queries (the keys, then their
    domains) in one read transaction, never one query per key.
    """

    def __init__(
        self, path: Path, config: BouncesConfig, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(
            path,
            _SCHEMA,
            what="the bounce ledger",
            remedy="Choose a writable file with bounces.db or --cache-dir.",
            broken_remedy="Delete the file to start afresh (then import the reports again), "
            "or choose another one with bounces.db.",
        )
        self._config = config
        self._clock = clock

    def add(self, events: Iterable[BounceEvent]) -> tuple[int, int]:
        """Store *events*; (added, duplicates). Events without a key are left out."""
        rows = [
            (e.key, e.domain, e.kind.value, e.status, e.at, e.reason, e.email, e.source)
            for e in events
            if e.key
        ]
        if not rows:
            return 0, 0
        with self._transaction("BEGIN IMMEDIATE"):
            added = self._run(lambda db: db.executemany(_INSERT, rows).rowcount)
        return added, len(rows) - added

    def import_file(self, path: Path) -> ImportReport:
        events, rejected = read_bounce_file(path)
        added, duplicates = self.add(events)
        return ImportReport(len(events), added, duplicates, rejected)

    def flags(self, keys: Iterable[str]) -> dict[str, BounceFlags]:
        """Flags of the *keys* that have events or sit on a dead domain; others are left out."""
        wanted = list(keys)
        domains = {_domain_of(key) for key in wanted}
        kinds = {k.name.lower(): k.value for k in BounceKind}
        since = self._clock() - self._config.soft_window_days * _DAY
        with self._transaction("BEGIN"):  # both answers from one snapshot of the file
            per_key = self._query(_PER_KEY, {"keys": json.dumps(wanted), "since": since, **kinds})
            dead = {
                domain
                for (domain,) in self._query(
                    _DEAD_DOMAINS,
                    {
                        "domains": json.dumps(sorted(domains)),
                        "min_addresses": self._config.domain_min_addresses,
                        "rate": self._config.domain_hard_rate,
                        **kinds,
                    },
                )
            }
        threshold = self._config.soft_threshold
        found = {
            key: BounceFlags(
                known=bool(known),
                suspected=recent_soft >= threshold or _domain_of(key) in dead,
                last_hard_at=last_hard,
            )
            for key, last_hard, known, recent_soft in per_key
        }
        if dead:
            never_seen = BounceFlags(known=False, suspected=True, last_hard_at=None)
            for key in wanted:
                if key not in found and _domain_of(key) in dead:
                    found[key] = never_seen
        return found

    def scope(self) -> tuple[set[str], set[str]]:
        """(keys that have events, domains the domain rule flags): the only keys that can get
        a flag. A batch asks :meth:`flags` for its keys within this scope, so a ledger of
        thousands costs a list of millions little, and an empty ledger costs nothing."""
        kinds = {k.name.lower(): k.value for k in BounceKind}
        with self._transaction("BEGIN"):
            keys = {key for (key,) in self._query("SELECT DISTINCT key FROM events")}
            domains = [d for (d,) in self._query("SELECT DISTINCT domain FROM events")]
            dead = {
                domain
                for (domain,) in self._query(
                    _DEAD_DOMAINS,
                    {
                        "domains": json.dumps(domains),
                        "min_addresses": self._config.domain_min_addresses,
                        "rate": self._config.domain_hard_rate,
                        **kinds,
                    },
                )
            }
        return keys, dead

    def events(self, email: str | None = None, limit: int = 100) -> list[BounceEvent]:
        """The newest *limit* events, of one address (any spelling of it) when *email* is given."""
        if email is None:
            rows = self._query(_NEWEST, (limit,))
        else:
            rows = self._query(_NEWEST_OF, (parse_address(email).key, limit))
        return [
            BounceEvent(address, key, domain, BounceKind(kind), status, at, reason, source)
            for address, key, domain, kind, status, at, reason, source in rows
        ]


def _domain_of(key: str) -> str:
    # A key is local@domain and the domain holds no "@"; a quoted local part may.
    return key.rpartition("@")[2]
