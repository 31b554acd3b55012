"""The changes file (``--changes PATH``): the addresses that are new since the list's last run
or whose VERDICT changed, one row each, in the format PATH's suffix names.

| suffix | written as |
|---|---|
| ``.csv`` | UTF-8, a header line, then the rows as they come |
| ``.parquet`` | one row group per stretch of rows |
| ``.jsonl``, ``.ndjson`` | one JSON object a line (no header line: an empty file on a first run) |
| ``.xlsx`` | one sheet with a header row, written at the end |

Its columns are :data:`pipeline.core.history.compare.CHANGE_COLUMNS`. Like every file of a run
it is written under a temporary name beside its place and published at the run's commit
point; on a list's first run it holds only the header.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import IO, Final

import polars as pl
import pyarrow.parquet as pq

from pipeline.core.errors import UsageError
from pipeline.stages.objects import is_object_url, local_path
from pipeline.stages.write.formats import EXCEL_MAX_ROWS
from pipeline.stages.write.outputs import guard, make_folder, sweep_stale
from pipeline.stages.write.publish import Publication, remove, tmp_of

FORMATS: Final = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".jsonl": "ndjson",
    ".ndjson": "ndjson",
    ".xlsx": "xlsx",
}


def changes_path(text: str) -> Path:
    """``--changes``'s value as a local path (``file://`` taken off), refused before any work
    when its suffix names no format it is written in, or it names an object store."""
    if is_object_url(text):
        raise UsageError(
            f"--changes {text}: the changes file is written on a file system; name a local path "
            "(or file:///shared/path for a Dask cluster)."
        )
    path = Path(local_path(text))
    if format_of(path) is None:
        known = ", ".join(FORMATS)
        raise UsageError(
            f"--changes {text}: its suffix names no format the changes file is written in; "
            f"end it with one of {known}."
        )
    if path.is_dir():
        raise UsageError(f"--changes {text} is a directory; name a file such as changes.csv.")
    return path


def format_of(path: PurePath) -> str | None:
    return FORMATS.get(path.suffix.lower())


class ChangesSink:
    """The changes file, written as its rows come under *tmp* (default: this process's
    temporary name beside *path*), staged for the commit point by :meth:`stage`."""

    def __init__(
        self, path: Path, columns: Mapping[str, pl.DataType], tmp: Path | None = None
    ) -> None:
        self.path = path
        self.tmp = tmp or tmp_of(path)
        self.rows = 0
        self._format = format_of(path) or "csv"
        self._empty = pl.DataFrame(schema=dict(columns))
        self._held: list[pl.DataFrame] = []  # an xlsx file's rows, written at the end
        self._parquet: pq.ParquetWriter | None = None
        self._text: IO[bytes] | None = None
        make_folder(path.parent)
        sweep_stale(path)
        guard(path, self._open)

    def _open(self) -> None:
        if self._format == "parquet":
            schema = self._empty.to_arrow().schema
            self._parquet = pq.ParquetWriter(self.tmp, schema, compression="zstd")
        elif self._format in ("csv", "ndjson"):
            self._text = self.tmp.open("wb")
            if self._format == "csv":
                self._empty.write_csv(self._text)

    def write(self, rows: pl.DataFrame) -> None:
        if rows.is_empty():
            return
        rows = rows.select(self._empty.columns)
        self.rows += rows.height
        guard(self.path, lambda: self._write(rows))

    def _write(self, rows: pl.DataFrame) -> None:
        if self._parquet is not None:
            self._parquet.write_table(rows.to_arrow())
        elif self._text is not None and self._format == "csv":
            rows.write_csv(self._text, include_header=False)
        elif self._text is not None:
            rows.write_ndjson(self._text)
        else:
            self._held.append(rows)

    def finish(self) -> Path:
        """The file complete under its temporary name."""
        guard(self.path, self._finish)
        return self.tmp

    def _finish(self) -> None:
        if self._parquet is not None:
            self._parquet.close()
            self._parquet = None
        elif self._text is not None:
            self._text.close()
            self._text = None
        elif self._format == "xlsx":
            if self.rows > EXCEL_MAX_ROWS:
                raise OSError(
                    0,
                    f"{self.rows:,} changed addresses are more than a sheet holds "
                    f"({EXCEL_MAX_ROWS:,}); name a .csv or .parquet changes file",
                )
            frame = pl.concat([self._empty, *self._held], how="vertical")
            frame.write_excel(self.tmp, worksheet="changes", autofit=False)

    def stage(self, publication: Publication) -> None:
        """Finish the file and stage it for the run's commit point."""
        publication.stage(self.finish(), self.path)

    def close(self) -> None:
        """Whatever was not finished is closed and removed (the run failed)."""
        with contextlib.suppress(Exception):
            if self._parquet is not None:
                self._parquet.close()
            if self._text is not None:
                self._text.close()
        if self._parquet is not None or self._text is not None:
            remove(self.tmp)
        self._parquet = self._text = None
