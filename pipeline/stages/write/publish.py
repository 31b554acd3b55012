"""A run's one commit point: every file it writes waits under a temporary name beside its
target, and :meth:`Publication.commit` puts them all in place together, at the end.

Until then nothing a user can see has changed: a run that fails or is interrupted before its
commit point (a full disk while writing the report, Ctrl-C while deciding) removes its
temporary files and leaves every earlier output as it was. The commit itself is one
``os.replace`` a file (atomic on POSIX, and a signal waits for the last one, see
:func:`~pipeline.stages.signals.deferred`), then, for an object-store output, one step a file in
the order staged (the :class:`Store`): a file staged here is uploaded; one the Dask engine's
workers staged in the store itself (named by its URL) is copied to its final key there and its
staged keys deleted. Should one of them fail anyway, the error names every file already
replaced.

Temporary names carry the writer's process id (``.out.parquet.<pid>.tmp``), so what a killed
run left is recognised and swept by the next run that writes the same file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Protocol

from pipeline.core.errors import OutputError
from pipeline.stages.signals import Interrupted, deferred, published


def tmp_name(name: str, kind: str = "tmp") -> str:
    """The temporary name of the file (or folder, or object) *name* written by this process."""
    return f".{name}.{os.getpid()}.{kind}"


def tmp_of(path: Path) -> Path:
    """The temporary name *path* is written under by this process."""
    return path.with_name(tmp_name(path.name))


class Store(Protocol):
    """Where an object-store output's files go at the commit point
    (:class:`~pipeline.stages.objects.Upload`)."""

    def publish(self, path: Path) -> None:
        """The local file (or folder of parts) *path*, in place, sent to its URL."""

    def adopt(self, staged: str, final: Path) -> None:
        """What workers staged in the store at *staged* (an object, or a prefix of parts
        ending in ``/``) put at *final*'s URL, and the staged keys removed."""

    def remove(self, staged: str) -> None:
        """The staged object or prefix gone (nothing to do when it is not there)."""


class Publication:
    """The files of one run, staged as they are finished and published together.

    *store* takes each file where it belongs once it is in place (an object store); *name*
    says how a path is named to the user (its URL when uploaded)."""

    def __init__(self, store: Store | None = None, name: Callable[[Path], str] = str) -> None:
        # final -> temporary (a local path, or the URL of what workers staged in the store),
        # in the order staged
        self._staged: dict[Path, Path | str] = {}
        self._order: list[Path] = []  # every final path staged, in order
        self._store = store
        self._name = name
        self.written: list[str] = []  # as the user names them, in the order published

    def stage(self, tmp: Path | str, final: Path) -> None:
        """*tmp* is complete: it replaces *final* at :meth:`commit`. A string is the URL of
        what workers staged in the object store *final* goes to."""
        if isinstance(tmp, str) and self._store is None:
            raise ValueError(f"{tmp} is staged in an object store, and {final} goes to none.")
        self._staged[final] = tmp
        self._order.append(final)

    def write_text(self, path: Path, text: str) -> None:
        """*text* written (UTF-8) under *path*'s temporary name, and staged."""
        tmp = tmp_of(path)
        try:
            tmp.write_text(text, encoding="utf-8")
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            why = exc.strerror or str(exc)
            raise OutputError(f"Cannot write {path}: {why}. Nothing was replaced.") from exc
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self.stage(tmp, path)

    def commit(self) -> list[str]:
        """Put every staged file in place, in the order staged, and upload each if the output
        is an object store's; return what was written."""
        try:
            placed = self._place()
            if self._store is not None:
                for final in placed:
                    self._send(self._store, final)
        except OutputError as exc:
            raise OutputError(f"{exc} {self._progress()}") from exc
        except Interrupted as exc:
            exc.written = tuple(self.written)
            exc.left = tuple(self._left())
            raise
        finally:
            self.discard()
        published(self.written)
        return list(self.written)

    def discard(self) -> None:
        """Remove every temporary file not put in place."""
        for tmp in self._staged.values():
            if isinstance(tmp, str):
                assert self._store is not None  # see stage()
                self._store.remove(tmp)
            else:
                remove(tmp)
        self._staged.clear()

    def __enter__(self) -> Publication:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.discard()

    def _place(self) -> list[Path]:
        placed: list[Path] = []
        with deferred():  # a signal now waits: the renames take milliseconds
            for final, tmp in list(self._staged.items()):
                if isinstance(tmp, Path):
                    _replace(tmp, final)
                    del self._staged[final]
                placed.append(final)
                if self._store is None:
                    self.written.append(self._name(final))
        return placed

    def _send(self, store: Store, final: Path) -> None:
        """*final* where it belongs: uploaded, or (staged in the store) copied to its key; a
        staged URL is forgotten only once adopted, so a failure removes it."""
        staged = self._staged.get(final)
        if isinstance(staged, str):
            store.adopt(staged, final)
            del self._staged[final]
        else:
            store.publish(final)
        self.written.append(self._name(final))

    def _progress(self) -> str:
        if not self.written:
            return "Nothing was replaced."
        left = ", ".join(self._left())
        return f"Already replaced: {', '.join(self.written)}; left as they were: {left}."

    def _left(self) -> list[str]:
        return [n for n in map(self._name, self._order) if n not in self.written]


def _replace(tmp: Path, final: Path) -> None:
    """*tmp* over *final*; a folder (a dataset's parts) swaps with the folder it replaces."""
    try:
        if tmp.is_dir() and final.is_dir():
            old = final.with_name(f".{final.name}.{os.getpid()}.old")
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise OutputError(f"Cannot put {final} in place: {why}.") from exc


def remove(path: Path) -> None:
    """A temporary file, or a folder of parts, gone (nothing to do when it is not there)."""
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
