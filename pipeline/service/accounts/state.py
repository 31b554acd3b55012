"""The service's keys and counters as the running service uses them, from its event loop.

The store is one (:class:`~pipeline.service.accounts.store.ServiceStore`, in a SQLite file or a
PostgreSQL database); what differs is how the loop reaches it (:func:`open_live`):

- A local file's statements take microseconds and run on the loop as they are
  (:class:`LocalState`), which also lets SQLite share one commit among a turn's requests: the
  first write of a turn opens a transaction, and its commit runs on the loop's next turn
  (``loop.call_soon``), which comes before any answer to a request counted in this turn is sent
  (those wait at least for the engine's next pass). Counts are still committed before the
  answers they count, with one commit for a whole turn of requests. A refund is the exception:
  the 5xx answer it goes with is sent in the same turn, so it commits at once.
  That transaction holds the file's write lock (``BEGIN IMMEDIATE``) until its commit: no other
  connection can write meanwhile. So within it a counter is read from the file once, by the
  turn's first take of it; the turn's other takes of it are counted in memory, by the same
  rule (``used < limit``), and written with one statement at the commit. And the remembered
  keys are checked against other connections' writes once, when the lock is taken; a key
  revoked before that is refused from that request on, as without the lock.
- A database across a socket is awaited (:class:`SharedState`): the statements of one turn of
  the loop travel together in one round trip and one transaction from one worker thread
  (:class:`~pipeline.core.db.postgres.LoopStatements`), each take still its own conditional
  statement, and the loop serves other requests while they do. A batch is committed before
  any of its results comes back, so here too a count is durable before the answer it counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from pipeline.core.db.database import Where
from pipeline.core.db.postgres import LoopStatements, PostgresDb
from pipeline.core.text import failure_line
from pipeline.service.accounts.store import ApiKey, ServiceStore, count_of, key_of, sha

log = logging.getLogger("listclean.service")

# Connections each instance keeps to a PostgreSQL database: one for the batches of statements,
# one for the rare read that cannot wait (used_now), and one spare for a check after the
# server came back.
LIVE_CONNECTIONS: Final = 3


class LiveState(Protocol):
    """What a request needs of the state, awaited from the event loop."""

    @property
    def where(self) -> str: ...  # the file, or the URL without its password

    async def find_key(self, secret: str) -> ApiKey | None: ...
    async def consume(
        self, subject: str, policy: str, window_start: int, limit: int
    ) -> tuple[bool, int]: ...
    async def refund(self, subject: str, policy: str, window_start: int) -> None: ...
    async def used(self, subject: str, policy: str, window_start: int) -> int: ...
    async def ping(self) -> None: ...

    def used_now(self, subject: str, policy: str, window_start: int) -> int:
        """:meth:`used` for a caller that cannot wait (the answer to a request aiohttp could
        not parse): the one read that blocks the loop whatever the store is."""
        ...

    async def close(self) -> None: ...


async def open_live(where: Where, clock: Callable[[], float] = time.time) -> LiveState:
    """The state at *where* for the running service."""
    store = ServiceStore(where, clock, size=LIVE_CONNECTIONS)
    if isinstance(store.db, PostgresDb):
        return SharedState(store, store.db)
    return LocalState(store, asyncio.get_running_loop())


Counter = tuple[str, str, int]  # subject, policy, window start


@dataclass
class _Count:
    used: int
    added: int = 0  # taken in memory, not yet written


class LocalState:
    """A SQLite file's state on the loop: its statements run as they are called, and the writes
    of one turn of the loop share a transaction."""

    def __init__(self, store: ServiceStore, loop: asyncio.AbstractEventLoop) -> None:
        self.store = store
        self.where = store.where
        self._loop = loop
        self._group: contextlib.ExitStack | None = None  # the open transaction of this turn
        # Counters read in this turn's transaction: (subject, policy, window start) -> the
        # count now, and the units taken in memory since (written at the commit).
        self._counts: dict[Counter, _Count] = {}
        store.before_writes(self._join)

    async def find_key(self, secret: str) -> ApiKey | None:
        return self.store.find_key(secret, current=self._group is not None)

    async def consume(
        self, subject: str, policy: str, window_start: int, limit: int
    ) -> tuple[bool, int]:
        counter = (subject, policy, window_start)
        count = self._counts.get(counter)
        if count is None:
            taken, used = self.store.consume(subject, policy, window_start, limit)
            if self._group is not None:  # held until the commit: nobody else can change it
                self._counts[counter] = _Count(used)
            return taken, used
        if count.used >= limit:
            return False, count.used
        count.used += 1
        count.added += 1
        return True, count.used

    async def refund(self, subject: str, policy: str, window_start: int) -> None:
        """A unit given back is committed at once: its request's 5xx answer is sent in this
        very turn, and must not reach the client before the unit is back (refunds are rare)."""
        self._write_counts()
        self._counts.clear()
        self.store.refund(subject, policy, window_start)
        self.commit()

    async def used(self, subject: str, policy: str, window_start: int) -> int:
        return self.used_now(subject, policy, window_start)

    def used_now(self, subject: str, policy: str, window_start: int) -> int:
        count = self._counts.get((subject, policy, window_start))
        return count.used if count is not None else self.store.used(subject, policy, window_start)

    async def ping(self) -> None:
        self.store.ping()

    async def close(self) -> None:
        self.commit()
        self.store.close()

    def commit(self) -> None:
        """Commit the grouped writes, if any are open (rolled back if writing the counts fails)."""
        group = self._group
        if group is None:
            return
        try:
            with group:
                self._write_counts()
        finally:
            self._group = None
            self._counts.clear()

    def _write_counts(self) -> None:
        """The units taken in memory, into the open transaction."""
        for (subject, policy, start), count in self._counts.items():
            if count.added:
                self.store.add_used(subject, policy, start, count.added)
                count.added = 0

    def _join(self) -> None:
        """Before a write: open this turn's transaction, unless it is open, and have the loop
        commit it on its next turn. Autocommit would make each write durable on return; grouped,
        they are durable at the scheduled commit."""
        if self._group is None:
            group = contextlib.ExitStack()
            group.enter_context(self.store.db.transaction(write=True))
            self._group = group
            self._loop.call_soon(self._commit_soon)
            self.store.check_keys()  # from here until the commit, nobody else writes

    def _commit_soon(self) -> None:
        try:
            self.commit()
        except Exception as exc:  # the counts of this turn may be lost; say so
            log.error("cannot commit the quota counters: %s", failure_line(exc))


class SharedState:
    """A PostgreSQL database's state, each statement awaited on the loop and those of one turn
    sent together (:class:`~pipeline.core.db.postgres.LoopStatements`). Keys are looked up on
    every request: another instance may have revoked one a moment ago."""

    def __init__(self, store: ServiceStore, db: PostgresDb) -> None:
        self.store = store
        self.where = store.where
        self._sql = store.sql
        self._db = LoopStatements(db)

    async def find_key(self, secret: str) -> ApiKey | None:
        return key_of(await self._db.query(self._sql.find_key, (sha(secret),)))

    async def consume(
        self, subject: str, policy: str, window_start: int, limit: int
    ) -> tuple[bool, int]:
        if limit > 0:
            row = (subject, policy, window_start)
            rows = await self._db.query(self._sql.consume, (*row, limit), lock=row)
            if rows:
                return True, count_of(rows)
        return False, await self.used(subject, policy, window_start)

    async def refund(self, subject: str, policy: str, window_start: int) -> None:
        row = (subject, policy, window_start)
        await self._db.query(self._sql.refund, row, lock=row)

    async def used(self, subject: str, policy: str, window_start: int) -> int:
        return count_of(await self._db.query(self._sql.used, (subject, policy, window_start)))

    def used_now(self, subject: str, policy: str, window_start: int) -> int:
        return self.store.used(subject, policy, window_start)

    async def ping(self) -> None:
        await self._db.query("SELECT 1")

    async def close(self) -> None:
        self._db.close()
        self.store.close()
