"""The service's keys and quota counters in PostgreSQL: the state several instances share.

The same tables and rules as the SQLite file (:mod:`pipeline.service.accounts.store`), for
instances on several hosts behind a load balancer:

- A unit is taken by one statement, ``INSERT ... ON CONFLICT DO UPDATE SET used = u.used + 1
  WHERE u.used < limit RETURNING used``. When two instances race for the last unit, PostgreSQL
  locks the row and evaluates the ``WHERE`` again on the version the other committed (READ
  COMMITTED's re-check of an updated row, see "Transaction Isolation" in its manual), so only
  one of them gets it. Commits are made with ``synchronous_commit`` on, before the answer
  they count is sent: a counted request survives a crash of the instance or of the server.
- The running service awaits these statements (:class:`PostgresLiveState`): those of one
  turn of its event loop travel together in one round trip and one transaction from one
  worker thread (:class:`~pipeline.core.db.postgres.LoopStatements`), each take still its own
  conditional statement, and the loop serves other requests while they do.
- Keys are looked up on every request, not remembered: another instance (or ``listclean keys
  revoke`` on any host) may have revoked one a moment ago, and one indexed look-up is cheaper
  than a way to hear about it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from pipeline.core.db.database import OwnsDatabase
from pipeline.core.db.postgres import LoopStatements, PostgresDb
from pipeline.service.accounts.store import ApiKey, new_key, sha, unknown_key

SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS api_keys (
        key_id     TEXT PRIMARY KEY,
        secret_sha TEXT NOT NULL UNIQUE,
        plan       TEXT NOT NULL,
        label      TEXT NOT NULL DEFAULT '',
        created_at DOUBLE PRECISION NOT NULL,
        revoked_at DOUBLE PRECISION
    )""",
    """CREATE TABLE IF NOT EXISTS usage (
        subject      TEXT NOT NULL,     -- "key:<key_id>" or "ip:<address>"
        policy       TEXT NOT NULL,     -- e.g. "email-month"
        window_start BIGINT NOT NULL,   -- Unix time the window (UTC day or month) began
        used         INTEGER NOT NULL,
        PRIMARY KEY (subject, policy, window_start)
    )""",
)
_KEY: Final = "key_id, plan, label, created_at, revoked_at"
_CONSUME: Final = (
    "INSERT INTO usage AS u VALUES (%s, %s, %s, 1) "
    "ON CONFLICT (subject, policy, window_start) DO UPDATE SET used = u.used + 1 "
    "WHERE u.used < %s RETURNING used"
)
_REFUND: Final = (
    "UPDATE usage SET used = used - 1 "
    "WHERE subject = %s AND policy = %s AND window_start = %s AND used > 0"
)
_USED: Final = "SELECT used FROM usage WHERE subject = %s AND policy = %s AND window_start = %s"
_FIND: Final = f"SELECT {_KEY} FROM api_keys WHERE secret_sha = %s"
# Connections each instance keeps: one for the batches of statements, one for the rare read
# that cannot wait (used_now), and one spare for a check after the server came back.
LIVE_CONNECTIONS: Final = 3


class PostgresServiceStore(OwnsDatabase):
    """Keys and counters in a PostgreSQL database (see :class:`.state.ServiceState`)."""

    def __init__(self, url: str, clock: Callable[[], float] = time.time, size: int = 1) -> None:
        self._db = self.db = PostgresDb(url, what="the service database", size=size)
        try:
            self._db.migrate(SCHEMA)
        except BaseException:
            self._db.close()
            raise
        self._clock = clock
        self.where = self._db.where

    def create_key(self, plan: str, label: str = "") -> tuple[ApiKey, str]:
        key, secret = new_key(plan, label, self._clock())
        self._db.execute(
            "INSERT INTO api_keys VALUES (%s, %s, %s, %s, %s, NULL)",
            (key.key_id, sha(secret), plan, label, key.created_at),
        )
        return key, secret

    def list_keys(self) -> list[ApiKey]:
        rows = self._db.query(f"SELECT {_KEY} FROM api_keys ORDER BY created_at, key_id")
        return [_key(row) for row in rows]

    def revoke_key(self, key_id: str) -> ApiKey:
        rows = self._db.query(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, %s) WHERE key_id = %s "
            f"RETURNING {_KEY}",
            (self._clock(), key_id),
        )
        if not rows:
            raise unknown_key(key_id)
        return _key(rows[0])

    def find_key(self, secret: str) -> ApiKey | None:
        rows = self._db.query(_FIND, (sha(secret),))
        return _key(rows[0]) if rows else None

    def consume(self, subject: str, policy: str, window_start: int, limit: int) -> tuple[bool, int]:
        if limit > 0:
            rows = self._db.query(_CONSUME, (subject, policy, window_start, limit))
            if rows:
                return True, int(rows[0][0])
        return False, self.used(subject, policy, window_start)

    def refund(self, subject: str, policy: str, window_start: int) -> None:
        self._db.execute(_REFUND, (subject, policy, window_start))

    def used(self, subject: str, policy: str, window_start: int) -> int:
        rows = self._db.query(_USED, (subject, policy, window_start))
        return int(rows[0][0]) if rows else 0

    def purge_usage(self, before: int) -> None:
        self._db.execute("DELETE FROM usage WHERE window_start < %s", (before,))


def _key(row: Sequence[Any]) -> ApiKey:
    key_id, plan, label, created_at, revoked_at = row
    return ApiKey(key_id, plan, label, created_at, revoked_at)


class PostgresLiveState:
    """The state as the running service uses it: each statement awaited on the loop, those of
    one turn sent together (:class:`~pipeline.core.db.postgres.LoopStatements`)."""

    def __init__(self, url: str) -> None:
        self._store = PostgresServiceStore(url, size=LIVE_CONNECTIONS)
        self._db = LoopStatements(self._store.db)
        self.where = self._store.where

    @classmethod
    async def open(cls, url: str) -> PostgresLiveState:
        return cls(url)

    async def close(self) -> None:
        self._db.close()
        self._store.close()

    async def find_key(self, secret: str) -> ApiKey | None:
        rows = await self._db.query(_FIND, (sha(secret),))
        return _key(rows[0]) if rows else None

    async def consume(
        self, subject: str, policy: str, window_start: int, limit: int
    ) -> tuple[bool, int]:
        if limit > 0:
            row = (subject, policy, window_start)
            rows = await self._db.query(_CONSUME, (*row, limit), lock=row)
            if rows:
                return True, int(rows[0][0])
        return False, await self.used(subject, policy, window_start)

    async def refund(self, subject: str, policy: str, window_start: int) -> None:
        row = (subject, policy, window_start)
        await self._db.query(_REFUND, row, lock=row)

    async def used(self, subject: str, policy: str, window_start: int) -> int:
        rows = await self._db.query(_USED, (subject, policy, window_start))
        return int(rows[0][0]) if rows else 0

    def used_now(self, subject: str, policy: str, window_start: int) -> int:
        return self._store.used(subject, policy, window_start)

    async def ping(self) -> None:
        await self._db.query("SELECT 1")
