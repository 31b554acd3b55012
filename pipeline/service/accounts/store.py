"""The service's SQLite file: API keys and quota counters, with one owner.

Keys are random 256-bit secrets shown once at creation and stored only as their SHA-256: a
secret of that entropy cannot be found from its hash, so a slow password hash adds nothing. Each
key has a short public id (``key_id``) for listing and revoking.

Quota counting must be exact under concurrency and survive restarts. The service runs one
event loop with this object as the only writer, and each request's check-and-increment is a
single ``INSERT ... ON CONFLICT DO UPDATE ... WHERE used < limit`` statement committed before
the answer is sent, so two requests can never both take the last unit, and a restart resumes
from the committed counts. WAL mode lets ``listclean keys`` read and revoke while it runs.

Keys are looked up once and then remembered, until any other connection writes to the file
(SQLite's ``PRAGMA data_version`` tells, at the cost of one statement): a key revoked by
``listclean keys revoke`` is refused from the next request on.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.db.sqlite import SqliteFile
from pipeline.core.errors import StoreError, UsageError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
    key_id     TEXT PRIMARY KEY,
    secret_sha TEXT NOT NULL UNIQUE,
    plan       TEXT NOT NULL,
    label      TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    revoked_at REAL
);
CREATE TABLE IF NOT EXISTS usage (
    subject      TEXT NOT NULL,     -- "key:<key_id>" or "ip:<address>"
    policy       TEXT NOT NULL,     -- e.g. "email-month"
    window_start INTEGER NOT NULL,  -- Unix time the counting window began
    used         INTEGER NOT NULL,
    PRIMARY KEY (subject, policy, window_start)
) WITHOUT ROWID;
"""
_SECRET_PREFIX = "lc_"
_CONSUME = (
    "INSERT INTO usage VALUES (?, ?, ?, 1) "
    "ON CONFLICT (subject, policy, window_start) DO UPDATE SET used = used + 1 "
    "WHERE used < ? RETURNING used"
)
_USED = "SELECT used FROM usage WHERE subject = ? AND policy = ? AND window_start = ?"


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


class ServiceStore(SqliteFile):
    """Keys and counters in one SQLite file (see
    :class:`~pipeline.service.accounts.state.ServiceState`)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        super().__init__(
            path, _SCHEMA, what="the service database", remedy="Choose a writable path with --db."
        )
        self._clock = clock
        self._keys: dict[str, ApiKey] = {}  # secret_sha -> key, while the file is unchanged
        self._version = -1  # PRAGMA data_version when _keys was last known good
        self._schedule: Callable[[Callable[[], None]], object] | None = None
        self._open = False  # a transaction of grouped writes is open

    def group_writes(self, schedule: Callable[[Callable[[], None]], object]) -> None:
        """From now on, the writes of one moment share a transaction: the first opens it and
        *schedule* runs its commit soon after. The service schedules it on the event loop's
        next turn (``loop.call_soon``), which comes before any answer to a request counted in
        this turn is sent (those wait at least for the engine's next pass): counts are still
        committed before the answers they count, one commit for a whole turn of requests."""
        self._schedule = schedule

    def commit(self) -> None:
        """Commit the grouped writes, if any are open."""
        if self._open:
            self._open = False
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._broken(exc) from exc

    def close(self) -> None:
        self.commit()
        super().close()

    def create_key(self, plan: str, label: str = "") -> tuple[ApiKey, str]:
        """A new key on *plan*; returns its record and the secret, which is never stored."""
        key, secret = new_key(plan, label, self._clock())
        self._write(
            "INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, NULL)",
            (key.key_id, sha(secret), plan, label, key.created_at),
        )
        return key, secret

    def list_keys(self) -> list[ApiKey]:
        rows = self._read(
            "SELECT key_id, plan, label, created_at, revoked_at FROM api_keys "
            "ORDER BY created_at, key_id",
            (),
        )
        return [ApiKey(*row) for row in rows]

    def revoke_key(self, key_id: str) -> ApiKey:
        """Revoke *key_id* (idempotent); raises UsageError for an unknown id."""
        self._write(
            "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
            (self._clock(), key_id),
        )
        rows = self._read(
            "SELECT key_id, plan, label, created_at, revoked_at FROM api_keys WHERE key_id = ?",
            (key_id,),
        )
        if not rows:
            raise unknown_key(key_id)
        return ApiKey(*rows[0])

    def find_key(self, secret: str) -> ApiKey | None:
        """The key whose secret this is (revoked ones included), or None."""
        return self.find_keys([secret])[0]

    def find_keys(self, secrets: Sequence[str]) -> list[ApiKey | None]:
        """:meth:`find_key` for each of *secrets*: one look at the file's version, and one
        query for those not remembered."""
        version = self._read("PRAGMA data_version", ())[0][0]
        if version != self._version:  # another connection wrote: a key may have changed
            self._keys.clear()
            self._version = version
        shas = [sha(secret) for secret in secrets]
        missing = sorted({sha for sha in shas if sha not in self._keys})
        if missing:
            rows = self._read(
                "SELECT secret_sha, key_id, plan, label, created_at, revoked_at FROM api_keys "
                f"WHERE secret_sha IN ({', '.join('?' * len(missing))})",
                tuple(missing),
            )
            # Unknown secrets are not remembered: anyone can send new ones.
            self._keys.update((row[0], ApiKey(*row[1:])) for row in rows)
        return [self._keys.get(sha) for sha in shas]

    def consume(self, subject: str, policy: str, window_start: int, limit: int) -> tuple[bool, int]:
        """Take one unit if fewer than *limit* were used in the window: (taken, used now)."""
        if limit > 0:
            rows = self._write(_CONSUME, (subject, policy, window_start, limit))
            if rows:
                return True, int(rows[0][0])
        return False, self.used(subject, policy, window_start)

    def refund(self, subject: str, policy: str, window_start: int) -> None:
        """Give back one unit taken in the window: the request failed on our side."""
        self._write(
            "UPDATE usage SET used = used - 1 "
            "WHERE subject = ? AND policy = ? AND window_start = ? AND used > 0",
            (subject, policy, window_start),
        )

    def used(self, subject: str, policy: str, window_start: int) -> int:
        rows = self._read(_USED, (subject, policy, window_start))
        return int(rows[0][0]) if rows else 0

    def purge_usage(self, before: int) -> None:
        """Forget counters of windows that started before *before* (they can never matter)."""
        self._write("DELETE FROM usage WHERE window_start < ?", (before,))

    def _read(self, sql: str, params: tuple[object, ...]) -> list[Any]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._broken(exc) from exc

    def _write(self, sql: str, params: tuple[object, ...]) -> list[Any]:
        try:
            if self._schedule is not None and not self._open:
                self._db.execute("BEGIN IMMEDIATE")
                self._open = True
                self._schedule(self.commit)
            # Autocommit (durable on return) unless grouped (durable at the scheduled commit).
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._broken(exc) from exc

    def _broken(self, exc: sqlite3.Error) -> StoreError:
        return StoreError(f"The service database at {self.path} failed: {exc}.")
