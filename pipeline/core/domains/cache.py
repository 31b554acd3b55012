"""The domain cache, in the three places it can live.

Domain answers are reused across runs until they expire, so tomorrow's run over a mostly
unchanged list sends no DNS queries for the domains it already knows. Expiry is decided by the
TTL chosen when the answer was stored: long for working mail DNS, shorter for NXDOMAIN-style
answers, minutes for temporary failures (see ``CacheConfig``); MX hosts' answers are kept
beside the domains', so that tomorrow's run does not ask again about the mail hosts that many
of its new domains share (:mod:`pipeline.core.domains.exchanges`).

- :class:`DomainCache` over a SQLite file (``domains.sqlite`` in the cache directory: one host)
  or a PostgreSQL database (``[cache] db`` a ``postgresql://`` URL: every host, every worker of
  a Dask cluster);
- :class:`DomainBuckets`, a bucketed table on the shared storage a Dask run uses when no
  database is named (:mod:`pipeline.core.db.buckets`): each worker reads and writes the
  buckets of the domains it resolves.

Both answer to :class:`DomainStore`; what an answer's TTL is, and which answers are kept at
all, is decided once, here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Final, Protocol

import polars as pl

from pipeline.core.config import CacheConfig
from pipeline.core.db.buckets import BucketTable, OnShelf, Shelf
from pipeline.core.db.database import OwnsDatabase, Where, dialect_of, open_database
from pipeline.core.domains.dns import NEGATIVE, TEMPORARY, DnsAnswer, DnsStatus, HostStatus

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS {p}domains (
    domain     TEXT PRIMARY KEY,
    status     TEXT NOT NULL,
    mx         TEXT NOT NULL,
    checked_at REAL NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {p}hosts (
    host       TEXT PRIMARY KEY,   -- an MX host name
    status     TEXT NOT NULL,      -- a HostStatus: has an address, has none, does not exist
    expires_at REAL NOT NULL
) WITHOUT ROWID;
"""
_PG_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS {p}domains (
        domain TEXT PRIMARY KEY, status TEXT NOT NULL, mx TEXT NOT NULL,
        checked_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS {p}hosts (
        host TEXT PRIMARY KEY, status TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL
    )""",
)
_REMEDY: Final = (
    "Choose a writable directory with --cache-dir, or delete the file if it is corrupt."
)
_BROKEN: Final = "Delete the file to start a fresh cache, or choose another --cache-dir."


class DomainStore(Protocol):
    """What the domain step keeps answers in (and MX hosts', see ``HostStore``)."""

    def get_many(self, domains: Iterable[str]) -> dict[str, DnsAnswer]: ...
    def put_many(self, answers: Mapping[str, DnsAnswer]) -> None: ...
    def get_hosts(self, hosts: Iterable[str]) -> dict[str, HostStatus]: ...
    def put_hosts(self, answers: Mapping[str, HostStatus]) -> None: ...


class _Ttl:
    """Which answers are kept, and for how long."""

    def __init__(self, config: CacheConfig, clock: Callable[[], float]) -> None:
        self._config = config
        self.clock = clock

    def domains(self, answers: Mapping[str, DnsAnswer]) -> list[tuple[str, str, str, float]]:
        """(domain, status, mx, expires_at) of the answers worth keeping."""
        now = self.clock()
        return [
            (domain, a.status.value, a.mx, now + self._domain(a.status))
            for domain, a in answers.items()
            # Nothing was learned: DNS was skipped, or the resolver was not trusted.
            if a.status not in (DnsStatus.OFFLINE, DnsStatus.UNTRUSTED)
        ]

    def hosts(self, answers: Mapping[str, HostStatus]) -> list[tuple[str, str, float]]:
        now = self.clock()
        return [(h, s.value, now + self._host(s)) for h, s in answers.items()]

    def _domain(self, status: DnsStatus) -> int:
        if status in TEMPORARY:
            return self._config.ttl_temporary
        if status in NEGATIVE:
            return self._config.ttl_negative
        return self._config.ttl_good

    def _host(self, status: HostStatus) -> int:
        if status is HostStatus.TEMPORARY:
            return self._config.ttl_temporary
        if status is HostStatus.ADDRESS:
            return self._config.ttl_good
        return self._config.ttl_negative


class DomainCache(OwnsDatabase):
    """Cached DNS answers per domain, and per MX host, in a SQLite file or PostgreSQL.

    *family* prefixes the tables: ``sandbox_`` keeps the sandbox's made-up answers apart from
    real ones in a database both share (a file is kept apart by its name)."""

    def __init__(
        self,
        where: Where,
        config: CacheConfig,
        clock: Callable[[], float] = time.time,
        family: str = "",
        size: int = 1,
    ) -> None:
        # The service and a nightly `clean` may share this file (SqliteFile waits out writes).
        self._db = open_database(
            where,
            what="the domain cache",
            remedy=_REMEDY,
            broken_remedy=_BROKEN,
            sqlite_schema=_SCHEMA.format(p=family),
            postgres_schema=[s.format(p=family) for s in _PG_SCHEMA],
            size=size,
        )
        self.where = self._db.where
        self._ttl = _Ttl(config, clock)
        d, q = dialect_of(self._db), dialect_of(self._db).q
        self._get = (
            f"SELECT domain, status, mx FROM {family}domains "
            f"WHERE domain IN {d.values()} AND expires_at > {q}"
        )
        self._put = (
            f"INSERT INTO {family}domains VALUES ({q}, {q}, {q}, {q}, {q}) "
            "ON CONFLICT (domain) DO UPDATE SET status = excluded.status, mx = excluded.mx, "
            "checked_at = excluded.checked_at, expires_at = excluded.expires_at"
        )
        self._get_hosts = (
            f"SELECT host, status FROM {family}hosts "
            f"WHERE host IN {d.values()} AND expires_at > {q}"
        )
        self._put_hosts = (
            f"INSERT INTO {family}hosts VALUES ({q}, {q}, {q}) ON CONFLICT (host) "
            "DO UPDATE SET status = excluded.status, expires_at = excluded.expires_at"
        )

    def get_many(self, domains: Iterable[str]) -> dict[str, DnsAnswer]:
        """Unexpired answers for those of *domains* that are cached."""
        # One JSON array parameter instead of one statement per domain: the join then runs
        # inside the database, which matters at tens of thousands of domains per run.
        rows = self._db.query(self._get, (json.dumps(list(domains)), self._ttl.clock()))
        # One answer object per (status, MX): domains share their mail hosts, and making an
        # answer for each of tens of thousands of rows was most of this read's time.
        made: dict[tuple[str, str], DnsAnswer] = {}
        answers = {}
        for domain, status, mx in rows:
            answer = made.get((status, mx))
            if answer is None:
                answer = made[status, mx] = DnsAnswer(DnsStatus(status), mx)
            answers[domain] = answer
        return answers

    def put_many(self, answers: Mapping[str, DnsAnswer]) -> None:
        """Store fresh answers, each with the TTL its kind deserves."""
        now = self._ttl.clock()
        rows = [(d, s, mx, now, expires) for d, s, mx, expires in self._ttl.domains(answers)]
        with self._db.transaction(write=True):
            self._db.executemany(self._put, rows)

    def get_hosts(self, hosts: Iterable[str]) -> dict[str, HostStatus]:
        """Unexpired statuses of those of *hosts* that are cached."""
        rows = self._db.query(self._get_hosts, (json.dumps(list(hosts)), self._ttl.clock()))
        return {host: HostStatus(status) for host, status in rows}

    def put_hosts(self, answers: Mapping[str, HostStatus]) -> None:
        with self._db.transaction(write=True):
            self._db.executemany(self._put_hosts, self._ttl.hosts(answers))


class DomainBuckets(OnShelf):
    """The domain cache as bucketed tables on a :class:`~pipeline.core.db.buckets.Shelf`
    (``domains`` and ``hosts``), for the workers of a cluster that share no database."""

    def __init__(
        self, shelf: Shelf, config: CacheConfig, clock: Callable[[], float] = time.time
    ) -> None:
        self.where = shelf.shown()
        self._ttl = _Ttl(config, clock)
        values = {"status": pl.String, "mx": pl.String, "expires_at": pl.Float64}
        self._domains = BucketTable(shelf, "domains", ("domain",), values, clock=clock)
        hosts = {"status": pl.String, "expires_at": pl.Float64}
        self._hosts = BucketTable(shelf, "hosts", ("host",), hosts, clock=clock)

    def get_many(self, domains: Iterable[str]) -> dict[str, DnsAnswer]:
        found = self._domains.get(domains)
        return {
            d: DnsAnswer(DnsStatus(s), mx)
            for d, s, mx in found.select("domain", "status", "mx").iter_rows()
        }

    def put_many(self, answers: Mapping[str, DnsAnswer]) -> None:
        kept = self._ttl.domains(answers)
        if kept:
            columns = ["domain", "status", "mx", "expires_at"]
            self._domains.put(pl.DataFrame(kept, schema=columns, orient="row"))

    def get_hosts(self, hosts: Iterable[str]) -> dict[str, HostStatus]:
        found = self._hosts.get(hosts).select("host", "status")
        return {h: HostStatus(s) for h, s in found.iter_rows()}

    def put_hosts(self, answers: Mapping[str, HostStatus]) -> None:
        kept = self._ttl.hosts(answers)
        if kept:
            columns = ["host", "status", "expires_at"]
            self._hosts.put(pl.DataFrame(kept, schema=columns, orient="row"))
