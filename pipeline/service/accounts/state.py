"""The service's shared state: API keys and quota counters, in SQLite or in PostgreSQL.

:class:`ServiceState` is what ``listclean keys`` and ``db migrate`` need of it; ``--db`` (or
``[service] db``) chooses where it lives (:func:`open_state`): a path is one SQLite file
(:class:`~pipeline.service.accounts.store.ServiceStore`, one instance on one host), a ``postgresql://``
URL a database several instances share
(:class:`~pipeline.service.accounts.pg_store.PostgresServiceStore`).

Both count the same way: a request takes its unit with one conditional statement
(``INSERT ... ON CONFLICT ... DO UPDATE SET used = used + 1 WHERE used < limit RETURNING
used``), keyed by the window's start (a UTC day or calendar month, never a sliding TTL), and a
request that fails on our side gives it back with a conditional decrement (``used > 0``).

:class:`LiveState` is the same state as the running service uses it, from its event loop
(:func:`open_live`): a local file's statements take microseconds and run on the loop as they
are (which also lets SQLite share one commit among a turn's requests,
:class:`LocalState`); a database across a socket is awaited on psycopg's async connections
(:class:`~pipeline.service.accounts.pg_store.PostgresLiveState`), so the loop serves other requests
while a statement travels.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from pipeline.core.db.database import Where, is_url
from pipeline.core.text import failure_line
from pipeline.service.accounts.pg_store import PostgresLiveState, PostgresServiceStore
from pipeline.service.accounts.store import ApiKey, ServiceStore

log = logging.getLogger("listclean.service")


class ServiceState(Protocol):
    """Keys and counters, wherever they live."""

    @property
    def where(self) -> str: ...  # the file, or the URL without its password

    def create_key(self, plan: str, label: str = "") -> tuple[ApiKey, str]: ...
    def list_keys(self) -> list[ApiKey]: ...
    def revoke_key(self, key_id: str) -> ApiKey: ...
    def find_key(self, secret: str) -> ApiKey | None: ...
    def consume(
        self, subject: str, policy: str, window_start: int, limit: int
    ) -> tuple[bool, int]: ...
    def refund(self, subject: str, policy: str, window_start: int) -> None: ...
    def used(self, subject: str, policy: str, window_start: int) -> int: ...
    def purge_usage(self, before: int) -> None: ...
    def ping(self) -> None: ...
    def close(self) -> None: ...


def open_state(where: Where, clock: Callable[[], float] = time.time) -> ServiceState:
    """The keys and counters at *where*."""
    if isinstance(where, str) and is_url(where):
        return PostgresServiceStore(where, clock)
    return ServiceStore(Path(where), clock)


class LiveState(Protocol):
    """What a request needs of the state, awaited from the event loop."""

    @property
    def where(self) -> str: ...

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


class LocalState:
    """A SQLite file's state on the loop: its statements run as they are called."""

    def __init__(self, store: ServiceStore) -> None:
        self.store = store
        self.where = store.where

    async def find_key(self, secret: str) -> ApiKey | None:
        return self.store.find_key(secret)

    async def consume(
        self, subject: str, policy: str, window_start: int, limit: int
    ) -> tuple[bool, int]:
        return self.store.consume(subject, policy, window_start, limit)

    async def refund(self, subject: str, policy: str, window_start: int) -> None:
        self.store.refund(subject, policy, window_start)

    async def used(self, subject: str, policy: str, window_start: int) -> int:
        return self.store.used(subject, policy, window_start)

    def used_now(self, subject: str, policy: str, window_start: int) -> int:
        return self.store.used(subject, policy, window_start)

    async def ping(self) -> None:
        self.store.ping()

    async def close(self) -> None:
        self.store.close()


async def open_live(where: Where, clock: Callable[[], float] = time.time) -> LiveState:
    """The state at *where* for the running service; on a SQLite file, the writes of one turn
    of the loop share a commit (see :meth:`ServiceStore.group_writes`)."""
    if isinstance(where, str) and is_url(where):
        return await PostgresLiveState.open(where)
    store = ServiceStore(Path(where), clock)
    store.group_writes(_committer(asyncio.get_running_loop()))
    return LocalState(store)


def _committer(loop: asyncio.AbstractEventLoop) -> Callable[[Callable[[], None]], object]:
    def schedule(commit: Callable[[], None]) -> object:
        def run() -> None:
            try:
                commit()
            except Exception as exc:  # the counts of this turn may be lost; say so
                log.error("cannot commit the quota counters: %s", failure_line(exc))

        return loop.call_soon(run)

    return schedule
