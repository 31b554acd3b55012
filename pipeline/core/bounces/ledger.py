"""The bounce ledger: what mail servers said about our past mail, kept across runs.

Bounce reports (tables exported by a sending service, or the delivery status notifications
themselves) become :class:`BounceEvent` rows; :class:`BounceLedger`
keeps them in a SQLite file (``bounces.sqlite`` beside the caches) or in the PostgreSQL
database the service instances share (``bounces.db`` a ``postgresql://`` URL) and answers,
for a batch of dedupe keys at once, the two flags of the spec:

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

import polars as pl

from pipeline.core.addresses.syntax import parse_address
from pipeline.core.bounces.reports import read_bounce_file
from pipeline.core.bounces.types import BounceEvent, BounceFlags, BounceKind, ImportReport
from pipeline.core.config import BouncesConfig
from pipeline.core.db.buckets import BucketTable, Shelf
from pipeline.core.db.database import Dialect, OwnsDatabase, Where, dialect_of, open_database

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
# The same in PostgreSQL; "id" gives events the order SQLite's rowid gives them.
_PG_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS events (
        id     BIGSERIAL PRIMARY KEY,
        key    TEXT NOT NULL,
        domain TEXT NOT NULL,
        kind   TEXT NOT NULL,
        status TEXT NOT NULL,
        at     DOUBLE PRECISION NOT NULL,
        reason TEXT NOT NULL,
        email  TEXT NOT NULL,
        source TEXT NOT NULL,
        UNIQUE (key, kind, status, at, reason)
    )""",
    "CREATE INDEX IF NOT EXISTS events_by_domain ON events (domain, key, kind, at)",
    "CREATE INDEX IF NOT EXISTS events_by_time ON events (at)",
)


class _Statements:
    """The ledger's statements, written once, spelled for *d*'s database."""

    def __init__(self, d: Dialect) -> None:
        order = "rowid" if d.name == "sqlite" else "id"
        q = d.q
        self.insert = (
            "INSERT INTO events (key, domain, kind, status, at, reason, email, source) "
            f"VALUES ({q}, {q}, {q}, {q}, {q}, {q}, {q}, {q}) ON CONFLICT DO NOTHING"
        )
        # Per address: its latest hard bounce and latest delivery; "known" compares the two.
        latest = f"""
            MAX(CASE WHEN e.kind = {d.p("hard")} THEN e.at END) AS last_hard,
            MAX(CASE WHEN e.kind = {d.p("delivered")} THEN e.at END) AS last_delivered"""
        known = "(last_hard IS NOT NULL AND (last_delivered IS NULL OR last_hard > last_delivered))"
        counted = f"SUM(CASE WHEN {known} THEN 1 ELSE 0 END)"
        # The keys asked for that have events; the index on (key, ...) that UNIQUE creates
        # serves both the join and the count of recent soft bounces.
        self.per_key = f"""
        WITH wanted(key) AS (SELECT DISTINCT * FROM {d.values(d.p("keys"))} AS v),
        per_key AS (
            SELECT e.key AS key, {latest}
            FROM wanted JOIN events AS e ON e.key = wanted.key
            GROUP BY e.key
        )
        SELECT key, last_hard, {known}, last_delivered IS NOT NULL AND NOT {known},
               (SELECT COUNT(*) FROM events AS s
                WHERE s.key = per_key.key AND s.kind = {d.p("soft")} AND s.at >= {d.p("since")}
                  AND (last_delivered IS NULL OR s.at > last_delivered))
        FROM per_key
        """
        # Among the domains asked for, those whose addresses in the ledger mostly are known
        # bounces.
        self.dead_domains = f"""
        WITH wanted(domain) AS (SELECT DISTINCT * FROM {d.values(d.p("domains"))} AS v),
        per_address AS (
            SELECT e.domain AS domain, {latest}
            FROM wanted JOIN events AS e ON e.domain = wanted.domain
            GROUP BY e.domain, e.key
        )
        SELECT domain FROM per_address
        GROUP BY domain
        HAVING {counted} >= {d.p("min_addresses")} AND {counted} >= {d.p("rate")} * COUNT(*)
        """
        columns = "email, key, domain, kind, status, at, reason, source"
        self.newest = f"SELECT {columns} FROM events ORDER BY at DESC, {order} DESC LIMIT {q}"
        self.newest_of = (
            f"SELECT {columns} FROM events WHERE key = {q} ORDER BY at DESC, {order} DESC LIMIT {q}"
        )
        self.forget = f"DELETE FROM events WHERE key IN {d.values()}"
        self.outcomes = (
            f"SELECT key, domain, kind, at FROM events WHERE kind IN ({q}, {q}) AND at >= {q} "
            f"ORDER BY at, {order}"
        )


_DAY = 86400.0


class BounceLedger(OwnsDatabase):
    """Bounce events of all imported reports, and the flags they add up to per address.

    :meth:`flags` answers a whole batch with two set-based queries (the keys, then their
    domains) in one read transaction, never one query per key.
    """

    def __init__(
        self, where: Where, config: BouncesConfig, clock: Callable[[], float] = time.time
    ) -> None:
        self._db = open_database(
            where,
            what="the bounce ledger",
            remedy="Choose a writable file with bounces.db or --cache-dir.",
            broken_remedy="Delete the file to start afresh (then import the reports again), "
            "or choose another one with bounces.db.",
            sqlite_schema=_SCHEMA,
            postgres_schema=_PG_SCHEMA,
        )
        self._sql = _Statements(dialect_of(self._db))
        self._config = config
        self._clock = clock
        self.where = self._db.where
        # A database across a socket (PostgreSQL): callers on an event loop call it off it.
        self.remote = self._db.dialect != "sqlite"

    def add(self, events: Iterable[BounceEvent]) -> tuple[int, int]:
        """Store *events*; (added, duplicates). Events without a key are left out."""
        rows = [
            (e.key, e.domain, e.kind.value, e.status, e.at, e.reason, e.email, e.source)
            for e in events
            if e.key
        ]
        if not rows:
            return 0, 0
        with self._db.transaction(write=True):
            added = self._db.executemany(self._sql.insert, rows)
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
        with self._db.transaction():  # both answers from one snapshot
            per_key = self._db.query(
                self._sql.per_key, {"keys": json.dumps(wanted), "since": since, **kinds}
            )
            dead = {
                domain
                for (domain,) in self._db.query(
                    self._sql.dead_domains,
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
        with self._db.transaction():
            keys = {key for (key,) in self._db.query("SELECT DISTINCT key FROM events")}
            return keys, self._dead_domains()

    def dead_domains(self) -> set[str]:
        """The domains the domain rule flags (every address of theirs is suspected)."""
        with self._db.transaction():
            return self._dead_domains()

    def _dead_domains(self) -> set[str]:
        kinds = {k.name.lower(): k.value for k in BounceKind}
        domains = [d for (d,) in self._db.query("SELECT DISTINCT domain FROM events")]
        found = self._db.query(
            self._sql.dead_domains,
            {
                "domains": json.dumps(domains),
                "min_addresses": self._config.domain_min_addresses,
                "rate": self._config.domain_hard_rate,
                **kinds,
            },
        )
        return {domain for (domain,) in found}

    def keys_after(self, after: str, limit: int) -> list[str]:
        """The next *limit* keys with events after *after*, in order: the ledger read a page
        at a time, in bounded memory."""
        q = dialect_of(self._db).q
        sql = f"SELECT DISTINCT key FROM events WHERE key > {q} ORDER BY key LIMIT {q}"
        return [key for (key,) in self._db.query(sql, (after, limit))]

    def forget(self, keys: Iterable[str]) -> int:
        """Delete the events of the addresses *keys* (an erasure or opt-out: see
        :mod:`pipeline.core.assembly.forget`); how many went."""
        with self._db.transaction(write=True):
            return self._db.execute(self._sql.forget, (json.dumps(sorted(set(keys))),))

    def outcomes(self, since: float = 0.0) -> list[tuple[str, str, str, float]]:
        """Every send with a known outcome at or after *since* (Unix time), oldest first:
        (key, domain, kind, at) of each delivery and hard bounce. Soft bounces are no outcome:
        the mail may still arrive. The calibration counts these
        (:mod:`pipeline.core.calibration`)."""
        kinds = (BounceKind.HARD.value, BounceKind.DELIVERED.value)
        return [tuple(r) for r in self._db.query(self._sql.outcomes, (*kinds, since))]

    def events(self, email: str | None = None, limit: int = 100) -> list[BounceEvent]:
        """The newest *limit* events, of one address (any spelling of it) when *email* is given."""
        limit = limit if limit >= 0 else 2**62  # a negative limit: all of them
        if email is None:
            rows = self._db.query(self._sql.newest, (limit,))
        else:
            rows = self._db.query(self._sql.newest_of, (parse_address(email).key, limit))
        return [
            BounceEvent(address, key, domain, BounceKind(kind), status, at, reason, source)
            for address, key, domain, kind, status, at, reason, source in rows
        ]


def _domain_of(key: str) -> str:
    # A key is local@domain and the domain holds no "@"; a quoted local part may.
    return key.rpartition("@")[2]


# --- the ledger's flags on a cluster's shared storage ---------------------------------------

_PAGE = 50_000  # keys a page of the snapshot holds (written by the driver in bounded memory)


def write_snapshot(ledger: BounceLedger, shelf: Shelf) -> int:
    """The ledger's flags, as they are now, written to *shelf* for workers that cannot reach
    the ledger's file: one row per key with events, and the dead domains. Returns the keys
    written (0: an empty ledger, nothing written)."""
    tables = _SnapshotTables(shelf)
    written, after = 0, ""
    while page := ledger.keys_after(after, _PAGE):
        tables.flags.put(_flag_rows(ledger.flags(page)))
        written, after = written + len(page), page[-1]
    dead = sorted(ledger.dead_domains())
    if dead:
        tables.dead.put(pl.DataFrame({"domain": dead, "dead": [True] * len(dead)}))
    return written + len(dead)


class SnapshotFlags:
    """The ledger's flags read from a snapshot (:func:`write_snapshot`), as the ledger
    answers them: a key without events on a dead domain is suspected."""

    def __init__(self, shelf: Shelf) -> None:
        self._tables = _SnapshotTables(shelf)
        self._dead: set[str] | None = None

    def flags(self, keys: Iterable[str]) -> dict[str, BounceFlags]:
        wanted = list(keys)
        found = {
            key: BounceFlags(known, suspected, last_hard, delivered)
            for key, known, suspected, last_hard, delivered in self._tables.flags.get(wanted)
            .select("key", "known", "suspected", "last_hard_at", "delivered")
            .iter_rows()
        }
        dead = self._dead_ones()
        never_seen = BounceFlags(known=False, suspected=True, last_hard_at=None)
        found.update({k: never_seen for k in wanted if k not in found and _domain_of(k) in dead})
        return found

    def scope(self) -> tuple[set[str], set[str]]:
        keys = set(self._tables.flags.rows().get_column("key").to_list())
        return keys, self._dead_ones()

    def _dead_ones(self) -> set[str]:
        if self._dead is None:
            self._dead = set(self._tables.dead.rows().get_column("domain").to_list())
        return self._dead


class _SnapshotTables:
    def __init__(self, shelf: Shelf) -> None:
        b = pl.Boolean
        flags = {"known": b, "suspected": b, "last_hard_at": pl.Float64, "delivered": b}
        self.flags = BucketTable(shelf, "bounce_flags", ("key",), flags)
        self.dead = BucketTable(shelf, "bounce_dead_ones", ("domain",), {"dead": b})


def _flag_rows(flags: dict[str, BounceFlags]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "key": list(flags),
            "known": [f.known for f in flags.values()],
            "suspected": [f.suspected for f in flags.values()],
            "last_hard_at": [f.last_hard_at for f in flags.values()],
            "delivered": [f.delivered for f in flags.values()],
        },
        schema={
            "key": pl.String,
            "known": pl.Boolean,
            "suspected": pl.Boolean,
            "last_hard_at": pl.Float64,
            "delivered": pl.Boolean,
        },
    )
