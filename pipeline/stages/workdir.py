"""The run's work directory: what a killed run needs to resume without spending twice.

Finished answers live in the mailbox cache (committed one by one); the work directory keeps the
rest of the run's state: which run it is (a fingerprint of its input, output and settings) and
how many requests it has spent against its budget. Started again with the same arguments, a run
picks its spending up from here; with other arguments it starts afresh.

A run removes only what it made: its own files, and the folders it created if they are empty
then. A folder the user names that already holds other files is never emptied: the run works in
a ``listclean-work`` folder inside it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pipeline.core.errors import UsageError
from pipeline.core.sqlite import SqliteFile

_SCHEMA = "CREATE TABLE IF NOT EXISTS state (name TEXT PRIMARY KEY, value TEXT NOT NULL);"
_STATE = "run.sqlite"
_INSIDE = "listclean-work"  # the run's own folder inside a folder that holds other files


def fingerprint(*parts: object) -> str:
    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:16]


def check_work_dir(directory: Path) -> None:
    """Refuse, before any work, a work directory that cannot be one."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--work-dir {directory} is not a directory; name a folder.")


class WorkDir(SqliteFile):
    def __init__(self, directory: Path, run_id: str) -> None:
        check_work_dir(directory)
        self.directory, self._made = _claim(directory)
        super().__init__(
            self.directory / _STATE,
            _SCHEMA,
            what="the run's work directory",
            remedy="Choose a writable place with --work-dir.",
        )
        if self._get("run_id") != run_id:  # another run's leftovers: start afresh
            self._db.execute("DELETE FROM state")
            self._set("run_id", run_id)
            self._set("spent", "0")
        # The folders an earlier attempt of this run made are this run's to remove too.
        made = json.loads(self._get("made") or "[]") + [str(p) for p in self._made]
        self._set("made", json.dumps(made))
        self._made = [Path(p) for p in made]

    @property
    def spent(self) -> int:
        return int(self._get("spent") or 0)

    def record_spent(self, spent: int) -> None:
        self._set("spent", str(spent))

    def finish(self) -> None:
        """The run is done: remove its files, and the folders it made if nothing else is in them."""
        self.close()
        for suffix in ("", "-wal", "-shm"):
            (self.directory / f"{_STATE}{suffix}").unlink(missing_ok=True)
        for folder in self._made:  # innermost first
            try:
                folder.rmdir()
            except OSError:  # something else is in it now: it stays
                break

    def _get(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM state WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def _set(self, name: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO state VALUES (?, ?)", (name, value))


def _claim(directory: Path) -> tuple[Path, list[Path]]:
    """The folder the run works in, and the folders it created for it (innermost first).

    An empty folder, or one an earlier attempt of a run left (it holds the state file), is used
    as it is; a folder holding anything else gets a folder of the run's own inside it."""
    if directory.is_dir() and any(directory.iterdir()):
        if not (directory / _STATE).exists():
            return _claim(directory / _INSIDE)
        return directory, []
    made = [p for p in (directory, *directory.parents) if not p.exists()]
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory, made
