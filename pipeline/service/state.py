"""The service's shared state: API keys and quota counters, in SQLite or in PostgreSQL.

:class:`ServiceState` is what the service and ``listclean keys`` need of it; ``--db`` (or
``[service] db``) chooses where it lives (:func:`open_state`): a path is one SQLite file
(:class:`~pipeline.service.store.ServiceStore`, one instance on one host), a ``postgresql://``
URL a database several instances share
(:class:`~pipeline.service.pg_store.PostgresServiceStore`).

Both count the same way: a request takes its unit with one conditional statement
(``INSERT ... ON CONFLICT ... DO UPDATE SET used = used + 1 WHERE used < limit RETURNING
used``), keyed by the window's start (a UTC day or calendar month, never a sliding TTL), and a
request that fails on our side gives it back with a conditional decrement (``used > 0``).

:class:`Offload` is how the service calls a store without stalling its event loop: a local
file's statements take microseconds and run on the loop (which also lets SQLite share one
commit among a turn's requests); a database across a socket is called from worker threads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ParamSpec, Protocol, TypeVar

from pipeline.core.database import Where, is_url
from pipeline.service.pg_store import PostgresServiceStore
from pipeline.service.store import ApiKey, ServiceStore

P = ParamSpec("P")
T = TypeVar("T")

# Worker threads (and PostgreSQL connections) per instance for the shared state's statements:
# enough to keep a few round trips in flight while the loop serves other requests.
WORKERS = 8


class ServiceState(Protocol):
    """Keys and counters, wherever they live."""

    @property
    def where(self) -> str: ...  # the file, or the URL without its password

    @property
    def remote(self) -> bool: ...  # statements cross a socket: call them off the event loop

    def create_key(self, plan: str, label: str = "") -> tuple[ApiKey, str]: ...
    def list_keys(self) -> list[ApiKey]: ...
    def revoke_key(self, key_id: str) -> ApiKey: ...
    def find_key(self, secret: str) -> ApiKey | None: ...
    def find_keys(self, secrets: Sequence[str]) -> list[ApiKey | None]: ...
    def consume(
        self, subject: str, policy: str, window_start: int, limit: int
    ) -> tuple[bool, int]: ...
    def refund(self, subject: str, policy: str, window_start: int) -> None: ...
    def used(self, subject: str, policy: str, window_start: int) -> int: ...
    def purge_usage(self, before: int) -> None: ...
    def ping(self) -> None: ...
    def close(self) -> None: ...


def open_state(
    where: Where, clock: Callable[[], float] = time.time, workers: int = 1
) -> ServiceState:
    """The keys and counters at *where*; *workers*: threads that may use it at once."""
    if isinstance(where, str) and is_url(where):
        return PostgresServiceStore(where, clock, size=workers)
    return ServiceStore(Path(where), clock)


class Offload:
    """Calls a store's methods: directly on the event loop for a local file, else on the
    workers of *executor* so that a round trip to the database never stalls the loop."""

    def __init__(self, executor: ThreadPoolExecutor | None) -> None:
        self._executor = executor

    async def __call__(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        if self._executor is None:
            return work(*args, **kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: work(*args, **kwargs))
