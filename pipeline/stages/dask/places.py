"""Where the workers of a Dask run write: a path every worker reaches (a shared mount, or this
machine for a LocalCluster) or a key of an object store, through fsspec with the run's
filesystem (s3fs for ``s3://``).

A file is written whole or not at all, so a task run again after its worker was lost never
leaves half of one behind: locally under a temporary name of the writing process, renamed
when complete (``os.replace``); in an object store as one PUT or multipart upload, which S3
makes visible only when it completes, aborted when the writing fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pipeline.core.errors import OutputError
from pipeline.stages.write.outputs import guard
from pipeline.stages.write.publish import tmp_of

if TYPE_CHECKING:  # fsspec comes with dask
    from fsspec import AbstractFileSystem


@dataclass(frozen=True)
class Place:
    """A file or folder the workers write: a local path, or a URL of *fs*'s store."""

    where: str
    fs: AbstractFileSystem | None = None  # None: the local file system

    def __truediv__(self, name: str) -> Place:
        return Place(f"{self.where.rstrip('/')}/{name}", self.fs)

    @property
    def name(self) -> str:
        return self.where.rstrip("/").rsplit("/", 1)[-1]

    def as_folder(self) -> Path | str:
        """The folder as the commit point stages it: a path, or a URL ending in ``/``."""
        return Path(self.where) if self.fs is None else self.where.rstrip("/") + "/"

    def as_file(self) -> Path | str:
        """The file as the commit point stages it: a path, or its URL."""
        return Path(self.where) if self.fs is None else self.where

    @contextlib.contextmanager
    def writing(self) -> Iterator[IO[bytes]]:
        """The file open for writing; in place, complete, once the block ends without error."""
        if self.fs is None:
            target = Path(self.where)
            tmp = tmp_of(target)  # this worker's process id: never another writer's
            try:
                with guard(target, lambda: tmp.open("wb")) as handle:
                    yield handle
                guard(target, lambda: os.replace(tmp, target))
            finally:
                tmp.unlink(missing_ok=True)
            return
        fs = self.fs
        upload: Any = guard(self.where, lambda: fs.open(self.where, "wb"))
        try:
            yield upload
        except BaseException:
            with contextlib.suppress(Exception):
                upload.discard()  # s3fs: the multipart upload aborted, nothing visible
                upload.closed = True  # and not completed by a later close()
            raise
        guard(self.where, upload.close)

    @contextlib.contextmanager
    def reading(self) -> Iterator[IO[bytes]]:
        try:
            opened = self._open_to_read()
        except OSError as exc:  # a staged part gone: the run's staging removed under it
            why = exc.strerror or str(exc)
            raise OutputError(f"Cannot read {self.where}: {why}. Nothing was replaced.") from exc
        with opened as handle:
            yield handle

    def _open_to_read(self) -> IO[bytes]:
        if self.fs is None:
            return Path(self.where).open("rb")
        opened: IO[bytes] = self.fs.open(self.where, "rb")
        return opened

    def put(self, local: Path) -> None:
        """The complete local file *local* moved here."""
        if self.fs is None:
            guard(self.where, lambda: shutil.move(local, self.where))
        else:
            fs = self.fs
            guard(self.where, lambda: fs.put_file(str(local), self.where))
            local.unlink(missing_ok=True)

    def make_folder(self) -> None:
        """The folder made (an object store has no folders: nothing to make)."""
        if self.fs is None:
            guard(self.where, lambda: Path(self.where).mkdir(parents=True))
