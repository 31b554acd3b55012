"""Batches set aside between a run's two passes, as Arrow IPC files in the run's spill folder.

A batch is two files, its original columns and its work columns, kept apart as in
:class:`~pipeline.stages.base.Batch` so an input column can never clash with a work column.
LZ4 compression: a tenth of the CPU of reading the input again, and about half the disk.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import polars as pl

from pipeline.stages.base import Batch

_COMPRESSION: Final = "lz4"


class Spill:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    def put(self, batch: Batch) -> None:
        batch.originals.write_ipc(self._path(self.count, "orig"), compression=_COMPRESSION)
        batch.work.write_ipc(self._path(self.count, "work"), compression=_COMPRESSION)
        self.count += 1

    def work(self, index: int) -> pl.DataFrame:
        return pl.read_ipc(self._path(index, "work"))

    def batch(self, index: int) -> Batch:
        originals = pl.read_ipc(self._path(index, "orig"))
        return Batch(originals, self.work(index))

    def drop(self, index: int) -> None:
        for part in ("orig", "work"):
            self._path(index, part).unlink(missing_ok=True)

    def clear(self) -> None:
        for index in range(self.count):
            self.drop(index)
        self.count = 0

    def _path(self, index: int, part: str) -> Path:
        return self.folder / f"batch-{index:06d}.{part}.arrow"


@contextlib.contextmanager
def spill_folder(parent: Path) -> Iterator[Path]:
    """A private folder for a run's spill files inside *parent*, removed with all it holds."""
    # The process id in the name lets a later run sweep what a killed one left.
    folder = Path(tempfile.mkdtemp(prefix=f"spill-{os.getpid()}-", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
