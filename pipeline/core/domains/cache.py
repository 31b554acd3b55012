"""The on-disk domain cache: one owner of one SQLite file.

Domain answers are reused across runs until they expire, so tomorrow's run over a mostly
unchanged list sends no DNS queries for the domains it already knows. The file is opened in WAL
mode with one writer (this object); no cursor leaves this module. Expiry is decided by the TTL
chosen when the answer was stored: long for working mail DNS, shorter for NXDOMAIN-style
answers, minutes for temporary failures (see ``CacheConfig``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from pipeline.core.config import CacheConfig
from pipeline.core.db.sqlite import SqliteFile
from pipeline.core.domains.dns import NEGATIVE, TEMPORARY, DnsAnswer, DnsStatus, HostStatus
from pipeline.core.errors import StoreError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS domains (
    domain     TEXT PRIMARY KEY,
    status     TEXT NOT NULL,
    mx         TEXT NOT NULL,
    checked_at REAL NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hosts (
    host       TEXT PRIMARY KEY,   -- an MX host name
    status     TEXT NOT NULL,      -- a HostStatus: has an address, has none, does not exist
    expires_at REAL NOT NULL
) WITHOUT ROWID;
"""


class DomainCache(SqliteFile):
    """Cached DNS answers per domain, and per MX host (whether it has an address), with expiry.

    Hosts are kept so that tomorrow's run does not ask again about the mail hosts that many of
    its new domains share (pipeline.core.domains.exchanges)."""

    def __init__(
        self, path: Path, config: CacheConfig, clock: Callable[[], float] = time.time
    ) -> None:
        # The service and a nightly `clean` may share this file (SqliteFile waits out writes).
        super().__init__(
            path,
            _SCHEMA,
            what="the domain cache",
            remedy="Choose a writable directory with --cache-dir, "
            "or delete the file if it is corrupt.",
        )
        self._config = config
        self._clock = clock

    def get_many(self, domains: Iterable[str]) -> dict[str, DnsAnswer]:
        """Unexpired answers for those of *domains* that are cached."""
        # One JSON array parameter instead of one statement per domain: the join then runs
        # entirely inside SQLite, which matters at tens of thousands of domains per run.
        try:
            rows = self._db.execute(
                "SELECT d.domain, d.status, d.mx FROM json_each(?) AS w "
                "JOIN domains AS d ON d.domain = w.value WHERE d.expires_at > ?",
                (json.dumps(list(domains)), self._clock()),
            ).fetchall()
        except sqlite3.Error as exc:
            raise self._broken(exc) from exc
        return {domain: DnsAnswer(DnsStatus(status), mx) for domain, status, mx in rows}

    def put_many(self, answers: Mapping[str, DnsAnswer]) -> None:
        """Store fresh answers, each with the TTL its kind deserves."""
        now = self._clock()
        rows = [
            (domain, a.status.value, a.mx, now, now + self._ttl(a.status))
            for domain, a in answers.items()
            # Nothing was learned: DNS was skipped, or the resolver was not trusted.
            if a.status not in (DnsStatus.OFFLINE, DnsStatus.UNTRUSTED)
        ]
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO domains VALUES (?, ?, ?, ?, ?)", rows)
        except sqlite3.Error as exc:
            raise self._broken(exc) from exc

    def get_hosts(self, hosts: Iterable[str]) -> dict[str, HostStatus]:
        """Unexpired statuses of those of *hosts* that are cached."""
        try:
            rows = self._db.execute(
                "SELECT h.host, h.status FROM json_each(?) AS w "
                "JOIN hosts AS h ON h.host = w.value WHERE h.expires_at > ?",
                (json.dumps(list(hosts)), self._clock()),
            ).fetchall()
        except sqlite3.Error as exc:
            raise self._broken(exc) from exc
        return {host: HostStatus(status) for host, status in rows}

    def put_hosts(self, answers: Mapping[str, HostStatus]) -> None:
        now = self._clock()
        rows = [(h, s.value, now + self._host_ttl(s)) for h, s in answers.items()]
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO hosts VALUES (?, ?, ?)", rows)
        except sqlite3.Error as exc:
            raise self._broken(exc) from exc

    def _host_ttl(self, status: HostStatus) -> int:
        if status is HostStatus.TEMPORARY:
            return self._config.ttl_temporary
        if status is HostStatus.ADDRESS:
            return self._config.ttl_good
        return self._config.ttl_negative

    def _ttl(self, status: DnsStatus) -> int:
        if status in TEMPORARY:
            return self._config.ttl_temporary
        if status in NEGATIVE:
            return self._config.ttl_negative
        return self._config.ttl_good

    def _broken(self, exc: sqlite3.Error) -> StoreError:
        return StoreError(
            f"The domain cache at {self.path} failed: {exc}. "
            "Delete the file to start a fresh cache, or choose another --cache-dir."
        )
