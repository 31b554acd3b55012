"""One owner of one SQLite file: the way every listclean database is opened, used and closed.

WAL mode lets readers (``listclean keys list``, a second process) work beside the one writer;
``synchronous=NORMAL`` is durable across process crashes in WAL mode; ``busy_timeout`` makes a
second process wait out a write instead of failing. Autocommit: each statement is its own
transaction unless the owner opens one with :meth:`SqliteFile._transaction`. Every SQLite error
surfaces as a :class:`StoreError` that names the file and says what to do.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self, TypeVar

from pipeline.core.errors import StoreError

T = TypeVar("T")

_PATIENCE = 5.0  # seconds a connection waits for another's lock (SQLite's busy timeout)


def _enter_wal(db: sqlite3.Connection) -> None:
    """Switch *db*'s file to WAL mode, waiting out other connections doing the same.

    SQLite does not call the busy handler where waiting could deadlock: when several
    connections switch a new file together, each holds a read lock and wants the write lock,
    and all but one get SQLITE_BUSY at once (several service instances starting on one new
    store). The failed statement drops its read lock, so the loser tries again until the
    winner has switched the file, within the same patience as any other lock."""
    deadline = time.monotonic() + _PATIENCE
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def beside_domain_cache(domain_cache: Path, name: str, configured: str = "") -> Path:
    """Where the file *name* lives: the file the config names, else ``<name>.sqlite`` next to
    the domain cache, in its family: beside a sandbox cache (``sandbox-domains.sqlite``) it is
    ``sandbox-<name>.sqlite``, so made-up answers never mix with real ones. The batch and the
    service both ask this, so they share every cache (answers that can be learned again) and
    every store (records that cannot: the bounce ledger, the contacts)."""
    if configured:
        return Path(configured)
    prefix = "sandbox-" if domain_cache.name.startswith("sandbox-") else ""
    return domain_cache.with_name(f"{prefix}{name}.sqlite")


def _create_private(path: Path) -> None:
    """Make *path* (and the folders to it) readable by its owner alone, whatever the umask:
    the stores hold key hashes, people's data and secrets, the caches people's addresses.
    SQLite gives the -wal and -shm files the database file's permissions."""
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


class SqliteFile:
    """Base of the stores: opens *path* with *schema*, closes on ``with`` exit.

    *remedy* says what to do when the file cannot be opened; *broken_remedy* (default: the
    same; "" for nothing) what to do when a statement fails on an open file. The public methods
    are the :class:`~pipeline.core.db.database.Database` a store written for both SQLite and
    PostgreSQL uses; the caches, which are SQLite only, use the private ones.
    """

    dialect: Final = "sqlite"

    def __init__(
        self,
        path: Path,
        schema: str,
        *,
        what: str,
        remedy: str,
        broken_remedy: str | None = None,
    ) -> None:
        self.path = path
        self.where = str(path)
        self._what = what
        self._broken_remedy = remedy if broken_remedy is None else broken_remedy
        try:
            _create_private(path)
            self._db = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=_PATIENCE
            )
            _enter_wal(self._db)
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(schema)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"Cannot open {what} at {path}: {exc}. {remedy}") from exc

    def __enter__(self) -> Self:
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

    @contextlib.contextmanager
    def _transaction(self, begin: str = "BEGIN") -> Iterator[None]:
        """Statements inside run as one transaction (``BEGIN IMMEDIATE`` to write at once)."""
        self._run(lambda db: db.execute(begin))
        try:
            yield
        except BaseException:
            self._run(lambda db: db.execute("ROLLBACK"))
            raise
        self._run(lambda db: db.execute("COMMIT"))

    def transaction(self, write: bool = False) -> contextlib.AbstractContextManager[None]:
        """One transaction; *write* takes the write lock at once (``BEGIN IMMEDIATE``), so a
        read-then-write cannot fail half-way on another process's write."""
        return self._transaction("BEGIN IMMEDIATE" if write else "BEGIN")

    def query(self, sql: str, params: Any = ()) -> list[Any]:
        return self._query(sql, params)

    def execute(self, sql: str, params: Any = ()) -> int:
        return self._run(lambda db: db.execute(sql, params).rowcount)

    def executemany(self, sql: str, rows: Sequence[Any]) -> int:
        return self._run(lambda db: db.executemany(sql, rows).rowcount) if rows else 0

    def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """*work* on the connection itself (a SQLite-only step, such as an upgrade)."""
        return self._run(work)

    def ping(self) -> None:
        self._query("SELECT 1")

    def _query(self, sql: str, params: Any = ()) -> list[Any]:
        return self._run(lambda db: db.execute(sql, params).fetchall())

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return work(self._db)
        except sqlite3.Error as exc:
            remedy = f" {self._broken_remedy}" if self._broken_remedy else ""
            raise StoreError(
                f"{self._what[:1].upper()}{self._what[1:]} at {self.path} failed: {exc}.{remedy}"
            ) from exc
