"""Where the jobs' files live: a folder every instance of one host reaches, or an ``s3://``
prefix every instance of several hosts reaches (through fsspec, as ``clean`` reads and writes
objects: :mod:`pipeline.stages.objects`).

Each job has a folder named by its id: ``input/`` holds the list as uploaded, ``out/`` what the
job wrote (the enriched list as Parquet and its companions, as ``clean`` names them) and the
other formats made from it on their first download. A local folder's files are written under
a temporary name and renamed; an object is put whole, so a reader never sees half of one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final

from pipeline.core.config import StorageConfig
from pipeline.core.errors import StoreError
from pipeline.stages.objects import filesystem, is_object_url

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

INPUT: Final = "input"
OUTPUT: Final = "out"


@dataclass(frozen=True)
class Storage:
    """The jobs' files under *root* (a folder, or an ``s3://bucket/prefix`` URL)."""

    root: str
    config: StorageConfig

    @property
    def remote(self) -> bool:
        return is_object_url(self.root)

    def location(self, job_id: str, *parts: str) -> str:
        """A job's file as ``clean`` names an input or an output: a path, or a URL."""
        return "/".join((self.root.rstrip("/"), job_id, *parts))

    def local_folder(self, job_id: str) -> Path | None:
        """The job's folder on this host's disk; None for an object store."""
        return None if self.remote else Path(self.root) / job_id

    def _fs(self) -> AbstractFileSystem:
        return filesystem(self.root, self.config)

    def put(self, local: Path, job_id: str, *parts: str) -> None:
        """*local* made the job's file *parts*: moved there (a folder), or uploaded whole."""
        target = self.location(job_id, *parts)
        try:
            if self.remote:
                self._fs().put_file(str(local), target)
                local.unlink(missing_ok=True)
                return
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            os.replace(local, target)
        except Exception as exc:  # fsspec's stores raise their own errors, OSError or not
            raise StoreError(f"Cannot store the job file {target}: {exc}.") from exc

    def exists(self, job_id: str, *parts: str) -> bool:
        target = self.location(job_id, *parts)
        return self._fs().exists(target) if self.remote else Path(target).is_file()

    def size(self, job_id: str, *parts: str) -> int:
        target = self.location(job_id, *parts)
        return int(self._fs().size(target)) if self.remote else Path(target).stat().st_size

    @contextlib.contextmanager
    def open(self, job_id: str, *parts: str) -> Iterator[IO[bytes]]:
        """The job's file *parts*, to read; FileNotFoundError when it is not there."""
        target = self.location(job_id, *parts)
        if self.remote:
            with self._fs().open(target, "rb") as handle:
                yield handle
            return
        with open(target, "rb") as local:
            yield local

    def remove(self, job_id: str) -> None:
        """Every file of the job, gone (nothing there is no error)."""
        if not self.remote:
            shutil.rmtree(Path(self.root) / job_id, ignore_errors=True)
            return
        fs = self._fs()
        with contextlib.suppress(FileNotFoundError):
            fs.rm(self.location(job_id), recursive=True)


def default_root(db: object, data_dir: Path) -> Path:
    """Where jobs keep their files when ``[jobs] storage`` is empty: a ``jobs`` folder beside
    the service database file, or in *data_dir* when the database is not a file."""
    if isinstance(db, Path):
        return db.parent / "jobs"
    return data_dir / "jobs"
