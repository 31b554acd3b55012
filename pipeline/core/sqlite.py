"""One owner of one SQLite file: the way every listclean database is opened and closed.

WAL mode lets readers (``listclean keys list``, a second process) work beside the one writer;
``synchronous=NORMAL`` is durable across process crashes in WAL mode; ``busy_timeout`` makes a
second process wait out a write instead of failing. Autocommit: each statement is its own
transaction unless the owner opens one.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import TracebackType
from typing import Self

from pipeline.core.errors import StoreError


class SqliteFile:
    """Base of the stores: opens *path* with *schema*, closes on ``with`` exit."""

    def __init__(self, path: Path, schema: str, *, what: str, remedy: str) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
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
