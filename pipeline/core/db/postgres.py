"""One owner of one PostgreSQL database: how every listclean store opens, uses and closes one.

SQLite (:mod:`pipeline.core.db.sqlite`) is the embedded default; PostgreSQL is the store several
service instances share. A store is PostgreSQL when its setting or ``--db`` is a
``postgresql://`` (or ``postgres://``) URL, see :func:`is_url`.

- A small pool of connections (psycopg_pool), each in autocommit: a statement is its own
  transaction unless a store opens one with :meth:`PostgresDb.transaction`. Statements of one
  transaction run on the connection that opened it, wherever in the thread they are issued.
- ``synchronous_commit = on`` on every connection, whatever the server's default: a commit
  returns once its WAL record is flushed, so a quota unit or an opt-out that was answered
  survives a crash of the database server too.
- Schema: each store hands its ``CREATE ... IF NOT EXISTS`` statements to :meth:`migrate`,
  which runs them in one transaction under an advisory lock, so instances starting together
  never race to create the same table.
- Every error is a :class:`StoreError` naming the database with its password left out
  (:func:`redact`); one that keeps the database from being opened at all is a
  :class:`StoreUnreachableError` (exit 2): a wrong URL is fixed like a wrong flag.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Final, Self

from pipeline.core.errors import StoreError, StoreUnreachableError, UsageError

SCHEMES: Final = ("postgresql://", "postgres://")
# Seconds to wait for a connection: to the server when opening, from the pool afterwards. A
# request waits this long at most when the database is gone, then fails (503 on /healthz).
CONNECT_TIMEOUT: Final = 5.0
# Seconds after which an unused connection is checked before it is used again.
_RESTED: Final = 1.0
# pg_advisory_xact_lock key under which schemas are created: "listclean" as an int8.
_SCHEMA_LOCK: Final = 0x6C697374636C65


def is_url(where: object) -> bool:
    """Whether *where* (a ``--db`` value or a ``*.db`` setting) names a PostgreSQL database."""
    return isinstance(where, str) and where.startswith(SCHEMES)


def redact(url: str) -> str:
    """*url* with its password replaced by ``***``, fit for a message or a log line."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return _redact_query(url)
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return _redact_query(urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}")))


def _redact_query(url: str) -> str:
    # libpq also takes the password as a query parameter (?password=...).
    parts = urllib.parse.urlsplit(url)
    if not parts.query:
        return url
    pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    shown = [(k, "***" if k == "password" else v) for k, v in pairs]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(shown, safe="*")))


def _scrub(text: str, url: str) -> str:
    """*text* (a driver's message) without the password of *url*, should it quote it."""
    secret = urllib.parse.urlsplit(url).password
    pairs = urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query)
    secrets = [s for s in [secret, *(v for k, v in pairs if k == "password")] if s]
    for value in secrets:
        text = text.replace(value, "***").replace(urllib.parse.quote(value, safe=""), "***")
    return " ".join(text.split())  # one line: libpq's messages may span several


class PostgresDb:
    """A pool of connections to the database at *url*, closed on ``with`` exit.

    *what* names the store in messages ("the service database"); *size* is the most
    connections open at once (one per thread that works with the store at the same time).
    """

    dialect: Final = "postgresql"

    def __init__(self, url: str, *, what: str, size: int = 1) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise UsageError(
                f"{redact(url)} is a PostgreSQL database, which needs the driver: "
                "pip install 'listclean[postgres]'."
            ) from exc
        self.url = url
        self.where = redact(url)
        self._what = what
        self._local = threading.local()
        kwargs: dict[str, Any] = {"autocommit": True, "options": "-c synchronous_commit=on"}
        try:  # one direct attempt first: the pool would only say that it timed out
            psycopg.connect(
                url, connect_timeout=int(CONNECT_TIMEOUT), autocommit=True,
                options=kwargs["options"],
            ).close()  # fmt: skip
        except (psycopg.Error, ValueError) as exc:
            raise StoreUnreachableError(
                f"Cannot open {what} at {self.where}: {_scrub(str(exc), url)}. Check the URL "
                "(user, password, host, port, database name) and that the server is running."
            ) from exc
        # A connection that rested a while is checked as it leaves the pool (one empty round
        # trip): after the server restarted, one it dropped is replaced instead of failing a
        # request. A connection in steady use is not: its last statement just worked.
        self._used: dict[int, float] = {}
        self._pool = ConnectionPool(
            url, min_size=1, max_size=max(1, size), kwargs=kwargs, timeout=CONNECT_TIMEOUT,
            open=False, name=what, check=self._check,
        )  # fmt: skip
        self._pool.open(wait=True, timeout=CONNECT_TIMEOUT)

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
        self._pool.close()

    def migrate(self, schema: Sequence[str]) -> None:
        """Create what *schema*'s statements create, if missing, in one transaction."""
        with self.transaction(write=True):
            self.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in schema:
                self.execute(statement)

    @contextlib.contextmanager
    def transaction(self, write: bool = False) -> Iterator[None]:
        """The statements inside run as one transaction (committed on exit, rolled back on an
        exception). Without *write* it only reads, from one snapshot (REPEATABLE READ); with
        it, PostgreSQL locks rows as they are written (SQLite takes its write lock at once)."""
        if getattr(self._local, "conn", None) is not None:  # nested: part of the outer one
            yield
            return
        with self._failures(), self._pool.connection() as conn, conn.transaction():
            self._local.conn = conn
            try:
                if not write:  # one snapshot for every read inside, as SQLite's BEGIN gives
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield
            finally:
                self._local.conn = None
                self._used[id(conn)] = time.monotonic()

    def query(self, sql: str, params: Any = ()) -> list[Any]:
        """The rows *sql* returns."""
        with self._connection() as conn, conn.cursor() as cur:
            cur.execute(sql, params or None)
            return cur.fetchall() if cur.description is not None else []

    def execute(self, sql: str, params: Any = ()) -> int:
        """Run *sql*; how many rows it changed."""
        with self._connection() as conn, conn.cursor() as cur:
            cur.execute(sql, params or None)
            return max(0, int(cur.rowcount))

    def executemany(self, sql: str, rows: Sequence[Any]) -> int:
        """Run *sql* once per row of *rows*; how many rows they changed in all."""
        if not rows:
            return 0
        with self._connection() as conn, conn.cursor() as cur:
            cur.executemany(sql, rows)
            return max(0, int(cur.rowcount))

    def ping(self) -> None:
        """Raise :class:`StoreError` unless the database answers now."""
        self.query("SELECT 1")

    def many(self, statements: Sequence[tuple[str, Any]]) -> list[Any]:
        """Run *statements* in one round trip (pipeline mode) and one transaction, committed
        on return: for each, the rows it returns, or the rows it changed when it returns
        none. One that fails fails them all, and none of them is committed."""
        with self._connection() as conn:
            cursors = []
            with conn.pipeline():
                for sql, params in statements:
                    cursor = conn.cursor()
                    cursor.execute(sql, params or None)
                    cursors.append(cursor)
            return [c.fetchall() if c.description is not None else c.rowcount for c in cursors]

    def _check(self, conn: Any) -> None:
        if time.monotonic() - self._used.get(id(conn), 0.0) > _RESTED:
            conn.execute("")

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        current = getattr(self._local, "conn", None)
        if current is not None:
            with self._failures():
                yield current
            return
        with self._failures(), self._pool.connection() as conn:
            yield conn
            self._used[id(conn)] = time.monotonic()

    @contextlib.contextmanager
    def _failures(self) -> Iterator[None]:
        with _failures(self._what, self.url):
            yield


@contextlib.contextmanager
def _failures(what: str, url: str) -> Iterator[None]:
    """A driver's or the pool's error as a :class:`StoreError` naming the database."""
    import psycopg
    from psycopg_pool import PoolTimeout

    try:
        yield
    except (PoolTimeout, psycopg.Error) as exc:
        detail = _scrub(str(exc), url) or type(exc).__name__
        raise StoreError(
            f"{what[:1].upper()}{what[1:]} at {redact(url)} failed: {detail}."
        ) from exc


class LoopStatements:
    """Statements a running event loop awaits, sent to the database together.

    What the loop asks while no batch is travelling waits for the turn to end, then all of it
    goes to one worker thread and over one connection in pipeline mode: one round trip and one
    thread hop for the lot. While a batch travels the next one gathers, so the busier the
    service, the bigger the batches: the per-request cost of the driver, the pool and the
    thread falls with load, and the loop never waits on the database.

    A batch is one transaction (libpq's pipeline ends with one Sync), committed before any of
    its results comes back: a count is durable before the answer it counts is sent, as with
    SQLite's grouped commit. Its statements run one after the other, each seeing the ones
    before, so a conditional statement stays exact. Rows it writes stay locked until the batch
    commits; a statement that locks a row names it (*lock*), and each batch takes its locks in
    that order, so two instances' batches can wait for each other but never deadlock.
    """

    def __init__(self, db: PostgresDb) -> None:
        self._db = db
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="postgres")
        self._waiting: list[tuple[str, Any, tuple[Any, ...], asyncio.Future[Any]]] = []
        self._travelling = False
        self._called = False

    async def query(self, sql: str, params: Any = (), lock: tuple[Any, ...] = ()) -> Any:
        """The rows *sql* returns (or, for a statement that returns none, its row count).
        *lock*: the row it writes, as a sortable key; () for a read."""
        loop = asyncio.get_running_loop()
        result: asyncio.Future[Any] = loop.create_future()
        self._waiting.append((sql, params, lock, result))
        if not (self._travelling or self._called):
            self._called = True
            loop.call_soon(self._send)  # after the rest of this turn has asked too
        return await result

    def close(self) -> None:
        self._thread.shutdown(wait=True)

    def _send(self) -> None:
        self._called = False
        if self._travelling or not self._waiting:
            return
        # Reads first, then the writes in the order of the rows they lock.
        batch = sorted(self._waiting, key=lambda s: (bool(s[2]), s[2]))
        self._waiting = []
        self._travelling = True
        statements = [(sql, params) for sql, params, _, _ in batch]
        sent = asyncio.get_running_loop().run_in_executor(self._thread, self._db.many, statements)
        sent.add_done_callback(lambda done: self._arrived(batch, done))

    def _arrived(
        self, batch: list[tuple[str, Any, tuple[Any, ...], asyncio.Future[Any]]], done: Any
    ) -> None:
        self._travelling = False
        failed = done.exception()
        for at, (_, _, _, result) in enumerate(batch):
            if result.done():  # its caller gave up (a timed-out /healthz)
                continue
            if failed is not None:
                result.set_exception(failed)
            else:
                result.set_result(done.result()[at])
        self._send()
