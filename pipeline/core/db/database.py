"""Where a store lives: a SQLite file or a PostgreSQL database, behind one small interface.

A store's setting or ``--db`` value chooses (:func:`open_database`): a path is a SQLite file
(the embedded default, one host), a ``postgresql://`` URL a PostgreSQL database (the store
several service instances share). A store written once against :class:`Database` runs on
either; what differs between the two is only the text of its statements (``?`` against
``%s``, FTS5 against tsvector), which each store keeps per :attr:`Database.dialect`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Self

from pipeline.core.db import postgres
from pipeline.core.db.postgres import PostgresDb
from pipeline.core.db.sqlite import SqliteFile, beside_domain_cache

Where = Path | str  # a SQLite file, or a postgresql:// URL


class Database(Protocol):
    """What a store needs of its database; :class:`SqliteFile` and :class:`PostgresDb`."""

    @property
    def dialect(self) -> str: ...  # "sqlite" | "postgresql"

    @property
    def where(self) -> str: ...  # the file, or the URL without its password

    def query(self, sql: str, params: Any = ()) -> list[Any]: ...
    def execute(self, sql: str, params: Any = ()) -> int: ...
    def executemany(self, sql: str, rows: Sequence[Any]) -> int: ...
    def transaction(self, write: bool = False) -> contextlib.AbstractContextManager[None]: ...
    def ping(self) -> None: ...
    def close(self) -> None: ...


class OwnsDatabase:
    """A store that owns one :class:`Database` (``self._db``): closed with ``with``, asked
    whether it answers with :meth:`ping`."""

    _db: Database

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def ping(self) -> None:
        """Raise :class:`~pipeline.core.errors.StoreError` unless the store answers now."""
        self._db.ping()


def is_url(where: Where | None) -> bool:
    """Whether *where* names a PostgreSQL database rather than a file."""
    return postgres.is_url(where)


def shown(where: Where) -> str:
    """*where* as a message may show it (a URL's password left out)."""
    return postgres.redact(where) if isinstance(where, str) and is_url(where) else str(where)


def open_database(
    where: Where,
    *,
    what: str,
    remedy: str,
    broken_remedy: str | None = None,
    sqlite_schema: str,
    postgres_schema: Sequence[str],
    size: int = 1,
) -> Database:
    """The database at *where*, its schema created if missing. *size*: the most threads that
    use it at once (PostgreSQL connections; a SQLite file has one connection)."""
    if isinstance(where, str) and is_url(where):
        db = PostgresDb(where, what=what, size=size)
        try:
            db.migrate(postgres_schema)
        except BaseException:
            db.close()
            raise
        return db
    return SqliteFile(
        Path(where), sqlite_schema, what=what, remedy=remedy, broken_remedy=broken_remedy
    )


@dataclass(frozen=True)
class Dialect:
    """How a statement written once is spelled for one database: SQLite (``sqlite3``'s ``?``
    and ``:name``, JSON arrays through ``json_each``) or PostgreSQL (psycopg's ``%s`` and
    ``%(name)s``, ``jsonb_array_elements_text``). A list of values travels as one JSON text
    parameter in both, so a statement takes the same parameters on either database."""

    name: str  # "sqlite" | "postgresql"

    @property
    def q(self) -> str:
        """A positional placeholder."""
        return "?" if self.name == "sqlite" else "%s"

    def p(self, name: str) -> str:
        """The named placeholder *name*."""
        return f":{name}" if self.name == "sqlite" else f"%({name})s"

    def values(self, placeholder: str | None = None, integers: bool = False) -> str:
        """A subquery of the values of the JSON array at *placeholder* (default: positional);
        *integers* for a list of ids (PostgreSQL compares no text with a number)."""
        at = placeholder or self.q
        if self.name == "sqlite":
            return f"(SELECT value FROM json_each({at}))"
        cast = "::bigint" if integers else ""
        return f"(SELECT jsonb_array_elements_text({at}::jsonb){cast})"


SQLITE = Dialect("sqlite")
POSTGRESQL = Dialect("postgresql")


def dialect_of(db: Database) -> Dialect:
    return SQLITE if db.dialect == "sqlite" else POSTGRESQL


def store_where(domain_cache: Path, name: str, configured: str = "") -> Where:
    """Where the store *name* lives: the database URL or file its setting names, else beside
    the domain cache (:func:`~pipeline.core.db.sqlite.beside_domain_cache`)."""
    if is_url(configured):
        return configured
    return beside_domain_cache(domain_cache, name, configured)


def cache_where(domain_cache: Path, name: str, db: str = "") -> tuple[Where, str]:
    """Where the cache *name* (``domains``, ``mailboxes``) lives, and the prefix of its tables:
    the database *db* (``[cache] db``) names, the sandbox's made-up answers in tables of their
    own (``sandbox_``); else its SQLite file, the domain cache itself or beside it."""
    sandbox = domain_cache.name.startswith("sandbox-")
    if is_url(db):
        return db, "sandbox_" if sandbox else ""
    return (domain_cache if name == "domains" else beside_domain_cache(domain_cache, name)), ""


def exists(where: Where) -> bool:
    """Whether the store at *where* may hold anything: a database always may, a file once
    it was made (a store that was never made is not made now just to find it empty)."""
    return is_url(where) or Path(where).exists()
