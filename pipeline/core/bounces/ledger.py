"""The bounce ledger: what mail servers said about our past mail, kept across runs.

Bounce reports (tables exported by a sending service, or the delivery status notifications
themselves) become :class:`BounceEvent` rows; :class:`BounceLedger`
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

``delivered`` (not a spec field)
    A delivery to the address is on record and no hard bounce since: the mailbox exists. The
    SMTP step uses it to tell a server that refuses *us* from one that refuses a mailbox.

An event's identity is (key, kind, status, time, reason), so importing the same report twice
adds nothing. Reading reports is :mod:`pipeline.core.bounces.reports`'s work.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from pipeline.core.address import parse_address
from pipeline.core.bounces.reports import read_bounce_file
from pipeline.core.bounces.types import BounceEvent, BounceFlags, BounceKind, ImportReport
from pipeline.core.config import BouncesConfig
from pipeline.core.sqlite import SqliteFile

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
SELECT key, last_hard, {_KNOWN}, last_delivered IS NOT NULL AND NOT {_KNOWN},
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
                delivered=bool(delivered),
            )
            for key, last_hard, known, delivered, recent_soft in per_key
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

    def forget(self, keys: Iterable[str]) -> int:
        """Delete the events of the addresses *keys* (an erasure or opt-out: see
        :mod:`pipeline.core.forget`); how many went."""
        wanted = (json.dumps(sorted(set(keys))),)
        with self._transaction("BEGIN IMMEDIATE"):
            gone: int = self._run(
                lambda db: (
                    db.execute(
                        "DELETE FROM events WHERE key IN (SELECT value FROM json_each(?))", wanted
                    ).rowcount
                )
            )
        return gone

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
