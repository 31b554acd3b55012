"""The service's API keys and quota counters: one store, in a SQLite file or in PostgreSQL.

``--db`` (or ``[service] db``) chooses where it lives
(:func:`~pipeline.core.db.database.open_database`): a path is one SQLite file (one instance
on one host), a ``postgresql://`` URL a database several instances share. The tables and rules
are the same in both; the statements of each are in :mod:`.sql`.

Keys are random 256-bit secrets shown once at creation and stored only as their SHA-256: a
secret of that entropy cannot be found from its hash, so a slow password hash adds nothing. Each
key has a short public id (``key_id``) for listing and revoking.

Quota counting must be exact under concurrency and survive restarts. Each request's
check-and-increment is a single ``INSERT ... ON CONFLICT DO UPDATE SET used = used + 1 WHERE
used < limit RETURNING used`` statement, keyed by the window's start (a UTC day or calendar
month, never a sliding TTL), committed before the answer is sent: two requests can never both
take the last unit, and a restart resumes from the committed counts. A request that fails on
our side gives its unit back with a conditional decrement (``used > 0``).

- In a SQLite file, the running service is the only writer; WAL mode lets ``listclean keys``
  read and revoke while it runs. Keys are looked up once and then remembered, until any other
  connection writes to the file (SQLite's ``PRAGMA data_version`` tells, at the cost of one
  statement): a key revoked by ``listclean keys revoke`` is refused from the next request on.
- In PostgreSQL, when two instances race for the last unit, PostgreSQL locks the row and
  evaluates the ``WHERE`` again on the version the other committed (READ COMMITTED's re-check
  of an updated row, see "Transaction Isolation" in its manual), so only one of them gets it.
  Commits are made with ``synchronous_commit`` on: a counted request survives a crash of the
  instance or of the server. Keys are looked up on every request, not remembered: another
  instance (or ``listclean keys revoke`` on any host) may have revoked one a moment ago, and
  one indexed look-up is cheaper than a way to hear about it.

How the running service reaches the store from its event loop: :mod:`.state`.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.core.db.database import OwnsDatabase, Where, dialect_of, open_database
from pipeline.core.errors import UsageError
from pipeline.service.accounts import sql

_SECRET_PREFIX = "lc_"


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    plan: str
    label: str
    created_at: float
    revoked_at: float | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def sha(secret: str) -> str:
    """What is stored of a key's secret."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_key(plan: str, label: str, now: float) -> tuple[ApiKey, str]:
    """A new key on *plan* (its record) and its secret, which is shown once and never stored."""
    key_id = "k_" + secrets.token_hex(4)
    secret = _SECRET_PREFIX + secrets.token_urlsafe(32)
    return ApiKey(key_id, plan, label, now, None), secret


def unknown_key(key_id: str) -> UsageError:
    return UsageError(
        f"There is no API key with id {key_id!r}. `listclean keys list` shows the ids."
    )


def key_of(rows: Sequence[Sequence[Any]]) -> ApiKey | None:
    """The key the first of *rows* (``sql.Statements.find_key``'s columns) holds, if any."""
    if not rows:
        return None
    key_id, plan, label, created_at, revoked_at = rows[0]
    return ApiKey(key_id, plan, label, created_at, revoked_at)


def count_of(rows: Sequence[Sequence[Any]]) -> int:
    """The count ``sql.Statements.used`` (or ``consume``) returned: 0 for no row."""
    return int(rows[0][0]) if rows else 0


class ServiceStore(OwnsDatabase):
    """Keys and counters in one SQLite file or PostgreSQL database (``listclean keys``, ``db
    migrate``, and under the running service, :mod:`.state`). *size*: the most threads that
    use it at once (PostgreSQL connections)."""

    def __init__(self, where: Where, clock: Callable[[], float] = time.time, size: int = 1) -> None:
        self._db = self.db = open_database(
            where,
            what="the service database",
            remedy="Choose a writable path with --db.",
            broken_remedy="",
            sqlite_schema=sql.SCHEMA,
            postgres_schema=sql.PG_SCHEMA,
            size=size,
        )
        self.sql = sql.Statements(dialect_of(self._db))
        self.where = self._db.where
        self._clock = clock
        self._keys: dict[str, ApiKey] = {}  # secret_sha -> key, while the file is unchanged
        self._version = -1  # PRAGMA data_version when _keys was last known good
        self._before_write: Callable[[], None] | None = None

    def before_writes(self, hook: Callable[[], None]) -> None:
        """Call *hook* before each statement that writes (the running service's SQLite state
        opens its transaction of grouped writes there, see :mod:`.state`)."""
        self._before_write = hook

    def create_key(self, plan: str, label: str = "") -> tuple[ApiKey, str]:
        """A new key on *plan*; returns its record and the secret, which is never stored."""
        key, secret = new_key(plan, label, self._clock())
        self._write(self.sql.create_key, (key.key_id, sha(secret), plan, label, key.created_at))
        return key, secret

    def list_keys(self) -> list[ApiKey]:
        return [ApiKey(*row) for row in self._db.query(self.sql.list_keys)]

    def revoke_key(self, key_id: str) -> ApiKey:
        """Revoke *key_id* (idempotent); raises UsageError for an unknown id."""
        key = key_of(self._write(self.sql.revoke_key, (self._clock(), key_id)))
        if key is None:
            raise unknown_key(key_id)
        return key

    def find_key(self, secret: str, *, current: bool = False) -> ApiKey | None:
        """The key whose secret this is (revoked ones included), or None. *current*: the
        caller knows no other connection can have written since :meth:`check_keys` (it holds
        the write lock), so the remembered keys are not checked again."""
        digest = sha(secret)
        if self.sql.data_version is None:  # a shared database: asked every time
            return key_of(self._db.query(self.sql.find_key, (digest,)))
        if not current:
            self.check_keys()
        if digest not in self._keys:
            key = key_of(self._db.query(self.sql.find_key, (digest,)))
            if key is None:  # unknown secrets are not remembered: anyone can send new ones
                return None
            self._keys[digest] = key
        return self._keys[digest]

    def check_keys(self) -> None:
        """Forget the remembered keys if another connection wrote to the file since the last
        check (SQLite: ``PRAGMA data_version``; a shared database keeps none)."""
        if self.sql.data_version is None:
            return
        version = self._db.query(self.sql.data_version)[0][0]
        if version != self._version:  # a key may have changed
            self._keys.clear()
            self._version = version

    def consume(self, subject: str, policy: str, window_start: int, limit: int) -> tuple[bool, int]:
        """Take one unit if fewer than *limit* were used in the window: (taken, used now)."""
        if limit > 0:
            rows = self._write(self.sql.consume, (subject, policy, window_start, limit))
            if rows:
                return True, count_of(rows)
        return False, self.used(subject, policy, window_start)

    def refund(self, subject: str, policy: str, window_start: int) -> None:
        """Give back one unit taken in the window: the request failed on our side."""
        self._write(self.sql.refund, (subject, policy, window_start))

    def add_used(self, subject: str, policy: str, window_start: int, units: int) -> None:
        """Add *units* this connection took under its write lock (no limit checked again)."""
        self._write(self.sql.add_used, (units, subject, policy, window_start))

    def consume_units(
        self, subject: str, policy: str, window_start: int, units: int, limit: int
    ) -> tuple[bool, int]:
        """Take *units* at once if they fit under *limit* with what the window used, or none
        (a bulk job's reservation): (taken, used now)."""
        if units <= 0:
            return True, self.used(subject, policy, window_start)
        if units <= limit:
            row = (subject, policy, window_start, units, limit)
            rows = self._write(self.sql.consume_units, row)
            if rows:
                return True, count_of(rows)
        return False, self.used(subject, policy, window_start)

    def refund_units(self, subject: str, policy: str, window_start: int, units: int) -> None:
        """Give back *units* taken in the window (never below zero): work a bulk job left
        undone."""
        if units > 0:
            self._write(self.sql.refund_units, (units, units, subject, policy, window_start))

    def used(self, subject: str, policy: str, window_start: int) -> int:
        return count_of(self._db.query(self.sql.used, (subject, policy, window_start)))

    def purge_usage(self, before: int) -> None:
        """Forget counters of windows that started before *before* (they can never matter)."""
        self._write(self.sql.purge_usage, (before,))

    def _write(self, statement: str, params: tuple[object, ...]) -> list[Any]:
        if self._before_write is not None:
            self._before_write()
        return self._db.query(statement, params)
