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
from types import TracebackType

from pipeline.core.config import CacheConfig
from pipeline.core.dns import NEGATIVE, TEMPORARY, DnsAnswer, DnsStatus
from pipeline.core.errors import StoreError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS domains (
    domain     TEXT PRIMARY KEY,
    status     TEXT NOT NULL,
    mx         TEXT NOT NULL,
    checked_at REAL NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
"""


class DomainCache:
    """Cached DNS answers per domain, with expiry."""

    def __init__(
        self, path: Path, config: CacheConfig, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = path
        self._config = config
        self._clock = clock
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            # The service and a nightly `clean` may share this file: wait out the other's write.
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"Cannot open the domain cache at {path}: {exc}. "
                "Choose a writable directory with --cache-dir, or delete the file if it is corrupt."
            ) from exc

    def __enter__(self) -> DomainCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

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
            if a.status is not DnsStatus.OFFLINE  # nothing was learned
        ]
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO domains VALUES (?, ?, ?, ?, ?)", rows)
        except sqlite3.Error as exc:
            raise self._broken(exc) from exc

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
