"""The bounce wing's value types: events read from reports and the flags they add up to."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


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
    delivered: bool = False  # a delivery is on record, newer than any hard bounce: it exists


Rejected = list[tuple[str, str]]
