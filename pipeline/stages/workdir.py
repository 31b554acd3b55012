"""The run's work directory: what a killed run needs to resume without spending twice.

Finished answers live in the mailbox cache (committed one by one); the work directory keeps the
rest of the run's state: which run it is (a fingerprint of its input, output and settings) and
how many RCPTs it has spent against its budget. Started again with the same arguments, a run
picks its spending up from here; with other arguments it starts afresh. A finished run removes
its work directory.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from pipeline.core.sqlite import SqliteFile

_SCHEMA = "CREATE TABLE IF NOT EXISTS state (name TEXT PRIMARY KEY, value TEXT NOT NULL);"


def fingerprint(*parts: object) -> str:
    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:16]


class WorkDir(SqliteFile):
    def __init__(self, directory: Path, run_id: str) -> None:
        self.directory = directory
        super().__init__(
            directory / "run.sqlite",
            _SCHEMA,
            what="the run's work directory",
            remedy="Choose a writable place with --work-dir, or delete the directory.",
        )
        if self._get("run_id") != run_id:  # another run's leftovers: start afresh
            self._db.execute("DELETE FROM state")
            self._set("run_id", run_id)
            self._set("spent", "0")

    @property
    def spent(self) -> int:
        return int(self._get("spent") or 0)

    def record_spent(self, spent: int) -> None:
        self._set("spent", str(spent))

    def finish(self) -> None:
        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _get(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM state WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def _set(self, name: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO state VALUES (?, ?)", (name, value))
