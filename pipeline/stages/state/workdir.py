"""The run's work directory: what a killed run needs to resume without spending twice.

Finished answers live in the mailbox cache (committed one by one); the work directory keeps the
rest of the run's state: which run it is (a fingerprint of its input, output and settings) and
how many requests it has spent against its budget. Started again with the same arguments, a run
picks its spending up from here; with other arguments it starts afresh.

A run removes only what it made: its own files, and the folders it created (each holds a
``.listclean-work`` mark) once nothing else is in them. A folder the user names that already
holds other files is never emptied: the run works in a ``listclean-work`` folder inside it.
What a killed run left (its spill folder) is swept by the next run in the same folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from pipeline.core.db.sqlite import SqliteFile
from pipeline.core.errors import UsageError

_SCHEMA = "CREATE TABLE IF NOT EXISTS state (name TEXT PRIMARY KEY, value TEXT NOT NULL);"
_STATE = "run.sqlite"
_INSIDE = "listclean-work"  # the run's own folder inside a folder that holds other files
_MARK = ".listclean-work"  # in every folder a run made: what a later run may remove


def fingerprint(*parts: object) -> str:
    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:16]


def check_work_dir(directory: Path) -> None:
    """Refuse, before any work, a work directory that cannot be one."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--work-dir {directory} is not a directory; name a folder.")


@dataclass
class WorkFolder:
    """The folder a run works in (spill files, its state), and the folders it made for it."""

    path: Path
    made: list[Path]  # innermost first

    def remove_made(self) -> None:
        """Remove the folders the run made, as long as nothing else is in them."""
        for folder in self.made:
            mark = folder / _MARK
            others = [p for p in folder.iterdir() if p != mark] if folder.is_dir() else []
            if others:  # something else is in it: it stays, and so do its parents
                break
            mark.unlink(missing_ok=True)
            with contextlib.suppress(FileNotFoundError):
                folder.rmdir()


@contextlib.contextmanager
def work_folder(directory: Path) -> Iterator[WorkFolder]:
    """The run's folder at (or inside) *directory*; the folders made for it go at the end
    if they are empty then."""
    check_work_dir(directory)
    folder = WorkFolder(*_claim(directory))
    try:
        yield folder
    finally:
        folder.remove_made()


class WorkDir(SqliteFile):
    """The resumable state of a run with address-level checks, in its work folder."""

    def __init__(self, folder: WorkFolder, run_id: str) -> None:
        self.directory = folder.path
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

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """A run that stops on an error before spending anything (a refused EHLO name, no
        reachable mail server) leaves nothing to resume: its state goes, as a finished run's
        does, so the folders made for it go too. A run that spent keeps its state."""
        try:
            nothing_spent = exc_type is not None and self.spent == 0
        except sqlite3.Error:  # the state itself is broken: leave it to be looked at
            nothing_spent = False
        if nothing_spent:
            self.finish()
        else:
            self.close()

    @property
    def kept(self) -> bool:
        """Whether the state is there for a run started again to resume from."""
        return (self.directory / _STATE).exists()

    @property
    def spent(self) -> int:
        return int(self._get("spent") or 0)

    def record_spent(self, spent: int) -> None:
        self._set("spent", str(spent))

    def spent_of(self, method: str) -> int:
        """What a method a route names beside the run's own has spent (see :attr:`spent`)."""
        return int(self._get(f"spent:{method}") or 0)

    def record_spent_of(self, method: str, spent: int) -> None:
        self._set(f"spent:{method}", str(spent))

    def finish(self) -> None:
        """The run is done: its state goes (the folders it made go with the work folder)."""
        self.close()
        for suffix in ("", "-wal", "-shm"):
            (self.directory / f"{_STATE}{suffix}").unlink(missing_ok=True)

    def _get(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM state WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def _set(self, name: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO state VALUES (?, ?)", (name, value))


def _claim(directory: Path) -> tuple[Path, list[Path]]:
    """The folder the run works in, and the folders it may remove at the end (innermost first).

    A folder a run made (it holds the mark) is used and is the run's to remove, once what a
    killed run left in it is swept; an empty folder is used as it is, and stays; a folder holding
    anything else gets a folder of the run's own inside it. A folder made here gets the mark."""
    if (directory / _MARK).exists():
        sweep_spills(directory)
        return directory, [directory]
    if directory.is_dir() and any(directory.iterdir()):
        return _claim(directory / _INSIDE)
    made = [p for p in (directory, *directory.parents) if not p.exists()]
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for folder in made:
        (folder / _MARK).touch(mode=0o600)
    return directory, made


def sweep_spills(directory: Path) -> None:
    """Remove the spill folders of runs that were killed (their process is gone)."""
    for folder in directory.glob("spill-*-*"):
        pid = folder.name.split("-")[1]
        if pid.isdigit() and not alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def alive(pid: int) -> bool:
    """Whether a process with id *pid* exists (a temporary file's writer, say)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, and belongs to someone else
        return True
    return True
