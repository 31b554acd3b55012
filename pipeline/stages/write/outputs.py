"""Stage 5, write: the enriched output, the rejects file and the run summary.

The output is Parquet, a dataset of Parquet parts, CSV or an Excel workbook
(:mod:`pipeline.stages.write.formats`; the CSV and workbook sinks are
:mod:`pipeline.stages.write.sinks`'s).
The Parquet output is written batch by batch, one row group per batch (pyarrow's
``ParquetWriter``), so a list of any size passes through bounded memory; a dataset output is a
folder of part files. Every file is written to a temporary name in the target directory and staged;
at the run's one commit point (:class:`~pipeline.stages.write.publish.Publication`) all of them are
renamed over their final names together (``os.replace`` is atomic on POSIX), so a run that fails or
is stopped before it publishes nothing, and a killed run never leaves a half-written output that
looks complete. The temporary name carries the writer's process id (``.out.parquet.<pid>.tmp``):
what a killed run left behind is removed by the next run that writes the same output, once no
process of that id is alive. An object-store output (:mod:`pipeline.stages.objects`) is written the
same way to a local staging folder, and its files are uploaded at the commit point, one after the
other, the summary last. The Dask engine's workers write the same bytes in parts, with the
helpers below (:mod:`pipeline.stages.dask.parts`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final, TypeVar

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.clock import now
from pipeline.core.decide import list_fields
from pipeline.core.errors import OutputError
from pipeline.core.schema import OUTPUT_COLUMNS, SCHEMA_VERSION
from pipeline.stages.base import Batch
from pipeline.stages.objects import Upload, is_glob, is_object_url
from pipeline.stages.state.workdir import alive
from pipeline.stages.write.formats import SUFFIXES, OutputFormat, stem_of
from pipeline.stages.write.publish import Publication, remove, tmp_of

_PART_ROWS: Final = 1_000_000  # rows per part file of a dataset output
# Columns with few distinct values, where dictionary encoding pays; elsewhere (addresses, the
# input's own columns) it costs more time than it saves space.
_DICTIONARY: Final = ["VERDICT", "DOMAIN_VERDICT", "REASON", "DOMAIN", "MX"]
# Free text (addresses, the input's own columns, SUGGESTION, DETAIL) gets no statistics: a row
# group holds rows in the list's order, so its least and greatest address prune nothing, and
# they cost a tenth of the write. Numbers, flags and the few-valued text columns keep them.
_STATISTICS_TEXT: Final = frozenset({"VERDICT", "DOMAIN_VERDICT", "REASON", "MX"})
T = TypeVar("T")


# --split's files by role: the rows of one VERDICT, or (None) the rows the list's export holds
# back from sending (unsubscribed, cleaned...), which go there whatever their VERDICT.
SPLIT: Final = {"valid": "Valid", "risky": "Risky", "invalid": "Invalid", "suppressed": None}


def companions(name: str) -> dict[str, str]:
    """The names of the files a run writes for the output *name*, by role: ``list.clean.parquet``
    has ``list.clean.rejects.csv``, ``.summary.json``, ``.report.html`` and, with ``--split``,
    ``list.clean.valid.parquet``, ``.risky.parquet``, ``.invalid.parquet`` and
    ``.suppressed.parquet``. The Dask engine writes a dataset's rejects as a folder of parts
    beside it instead of one file (``out/`` has ``out.rejects/``: ``rejects_parts``)."""
    stem = stem_of(name)
    suffix = name[len(stem) :]
    return {
        "output": name,
        "rejects": stem + ".rejects.csv",
        "rejects_parts": stem + ".rejects",
        "summary": stem + ".summary.json",
        "report": stem + ".report.html",
        **{role: f"{stem}.{role}{suffix}" for role in SPLIT},
    }


@dataclass(frozen=True)
class OutputPaths:
    parquet: Path  # the output: a file (Parquet, CSV, xlsx), or a folder of part files
    rejects: Path
    summary: Path
    report: Path
    split: dict[str, Path]  # role (valid, risky, invalid, suppressed) -> where --split writes
    dataset: bool = False
    upload: Upload | None = None  # where each file goes once complete (an object store)
    format: OutputFormat = OutputFormat.PARQUET

    @classmethod
    def for_output(
        cls,
        output: Path,
        dataset: bool = False,
        upload: Upload | None = None,
        fmt: OutputFormat | None = None,
    ) -> OutputPaths:
        named = {role: output.with_name(name) for role, name in companions(output.name).items()}
        return cls(
            parquet=output,
            rejects=named["rejects"],
            summary=named["summary"],
            report=named["report"],
            split={role: named[role] for role in SPLIT},
            dataset=dataset,
            upload=upload,
            format=fmt or (OutputFormat.DATASET if dataset else OutputFormat.PARQUET),
        )

    def files(self, split: bool = False) -> dict[str, Path]:
        """Every file the run writes, by role (see :func:`companions`)."""
        base = {
            "output": self.parquet,
            "rejects": self.rejects,
            "summary": self.summary,
            "report": self.report,
        }
        return {**base, **(self.split if split else {})}

    def of_split(self, role: str) -> OutputPaths:
        """Where the rows of one role go with --split: a whole output of its own."""
        return dataclasses.replace(self, parquet=self.split[role])

    def in_parts(self) -> OutputPaths:
        """The files as the Dask engine's workers write them: a dataset's rejects as a folder
        of CSV parts beside it (``out.rejects/``, never inside the dataset); the rest alike."""
        if self.format is not OutputFormat.DATASET:
            return self
        folder = self.rejects.with_name(companions(self.parquet.name)["rejects_parts"])
        return dataclasses.replace(self, rejects=folder)

    def name(self, path: Path) -> str:
        """How the run names *path* to its user: its URL when it is uploaded."""
        return self.upload.name(path) if self.upload else str(path)

    def publication(self) -> Publication:
        """The run's commit point for these files: renamed into place, then uploaded where
        they belong (for an object-store output)."""
        return Publication(self.upload, self.name)


def default_output(input_text: str, fmt: OutputFormat = OutputFormat.PARQUET) -> Path:
    """``<input stem>.clean.parquet`` beside the input file, or beside a folder (or glob) of
    shards, named after the folder; in the current directory for standard input (then
    ``stdin.clean.parquet``), another stream or an object-store URL. ``.csv`` or ``.xlsx`` for
    those formats. A scheduled job's working directory (``/``, ``$HOME``) is no place for it."""
    suffix = SUFFIXES.get(fmt, ".parquet")
    if input_text == "-":
        return Path.cwd() / f"stdin.clean{suffix}"
    path = Path(input_text.rstrip("/") or "list")
    if is_glob(path.name):  # exports/part-*.parquet: named after exports/
        path = path.parent
    stem = path.stem.removesuffix(".csv").removesuffix(".tsv")  # list.csv.gz: list.clean...
    local = not is_object_url(input_text) and (path.is_file() or path.is_dir())
    return (path.parent if local else Path.cwd()) / f"{stem}.clean{suffix}"


def output_frame(batch: Batch) -> pl.DataFrame:
    """The input's columns, then the spec's fields and the list's own (REASON, DUPLICATE,
    SAFE_TO_SEND, ...), typed as declared."""
    fields = list_fields()
    ours = batch.work.select(
        (fields[name] if name in fields else pl.col(name)).cast(dtype).alias(name)
        for name, dtype in OUTPUT_COLUMNS.items()
    )
    return pl.concat([batch.originals, ours], how="horizontal")


def output_schema(
    originals: Mapping[str, pl.DataType], further: Mapping[str, pl.DataType] | None = None
) -> pa.Schema:
    """The output's columns and types: the input's, then ours, then the further address
    columns' (*further*); the schema's version in the key-value metadata
    (``listclean.schema_version``)."""
    empty = pl.DataFrame(schema={**originals, **OUTPUT_COLUMNS, **(further or {})})
    return empty.to_arrow().schema.with_metadata({"listclean.schema_version": SCHEMA_VERSION})


class ParquetSink:
    """The enriched output, written as it comes, made visible whole at the run's commit point
    (:meth:`stage`)."""

    def __init__(self, paths: OutputPaths, schema: pa.Schema) -> None:
        self._final = paths.parquet
        self._dataset = paths.dataset
        self._schema = schema
        make_folder(self._final.parent)
        sweep_stale(self._final)
        self._tmp = tmp_of(self._final)
        self._writer: pq.ParquetWriter | None = None
        self._part_rows = 0
        self._parts = 0
        self._facts: Mapping[str, Any] = {}
        if self._dataset:
            guard(self._final, lambda: self._tmp.mkdir())

    def write(self, frame: pl.DataFrame) -> None:
        self.ready(frame)()

    def ready(self, frame: pl.DataFrame) -> Callable[[], None]:
        """*frame*'s write, its conversion to the output's Arrow types done (any thread)."""
        table = frame.to_arrow().cast(self._schema)
        return lambda: self._write(table)

    def _write(self, table: pa.Table) -> None:
        if self._writer is None or (self._dataset and self._part_rows >= _PART_ROWS):
            self._next_part()
        writer = self._writer
        assert writer is not None
        guard(self._final, lambda: writer.write_table(table))
        self._part_rows += table.num_rows

    def note(self, facts: Mapping[str, Any]) -> None:
        """Record *facts* (the run's provenance) under the ``listclean`` key of the key-value
        metadata of every file still open or to come; ``finished_at`` is when each was."""
        self._facts = facts

    def stage(self, into: Publication) -> None:
        """Finish the file (or folder of parts) and stage it for the run's commit point."""
        if self._writer is None:
            self._next_part()  # an empty list still gets a file with every column
        self._close_writer()
        into.stage(self._tmp, self._final)

    def close(self) -> None:
        """Drop what was written if it was not published."""
        if self._writer is not None:
            with contextlib.suppress(OSError, pa.ArrowException):
                self._writer.close()
        remove(self._tmp)

    def __enter__(self) -> ParquetSink:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _close_writer(self) -> None:
        writer = self._writer
        assert writer is not None
        _note(writer, self._facts)
        guard(self._final, writer.close)

    def _next_part(self) -> None:
        if self._writer is not None:
            self._close_writer()
        target = self._tmp / f"part-{self._parts:05d}.parquet" if self._dataset else self._tmp
        schema = self._schema
        self._writer = guard(self._final, lambda: _parquet_writer(target, schema))
        self._parts += 1
        self._part_rows = 0


def write_parquet(
    tables: Iterable[pa.Table],
    target: IO[bytes],
    schema: pa.Schema,
    facts: Mapping[str, Any],
    name: str,
) -> None:
    """*tables* as one Parquet file on the open *target* (*name* in messages), a row group
    each, written as :class:`ParquetSink` writes (the same encodings, the run's provenance):
    where it runs, a Dask worker writing a part, or joining parts row group by row group."""
    writer = guard(name, lambda: _parquet_writer(target, schema))
    try:
        for table in tables:
            guard(name, functools.partial(writer.write_table, table.cast(schema)))
        _note(writer, facts)
    finally:
        guard(name, writer.close)


def _parquet_writer(target: Path | IO[bytes], schema: pa.Schema) -> pq.ParquetWriter:
    """A writer of the output's Parquet, its encodings and statistics chosen as above."""
    text = {pa.large_string(), pa.string()}
    kept = [f.name for f in schema if f.type not in text or f.name in _STATISTICS_TEXT]
    return pq.ParquetWriter(target, schema, use_dictionary=_DICTIONARY, write_statistics=kept)


def _note(writer: pq.ParquetWriter, facts: Mapping[str, Any]) -> None:
    """*facts* under the ``listclean`` key of the file's key-value metadata, with
    ``finished_at``, when the file was."""
    if facts:
        noted = json.dumps({**facts, "finished_at": now()}, ensure_ascii=False)
        writer.add_key_value_metadata({"listclean": noted})


def rejects_head(columns: Sequence[str]) -> bytes:
    """The rejects file's header line: plain names, no quoting needed."""
    return (",".join(columns) + "\n").encode()


def write_rejects_csv(rejects: pl.DataFrame, target: IO[bytes]) -> None:
    """Rejected records appended to a rejects file (or a Dask worker's part of one)."""
    rejects.write_csv(target, include_header=False)


class RejectsSink:
    """The rejects file (line, reason, raw), appended batch by batch, published at the end."""

    def __init__(self, path: Path, columns: Sequence[str] = ("line", "reason", "raw")) -> None:
        self._final = path
        self._header = rejects_head(columns)
        make_folder(path.parent)
        sweep_stale(path)
        self._tmp = tmp_of(path)
        self._handle: IO[bytes] = self._open()
        self.reasons: Counter[str] = Counter()  # rejected records per reason, as written

    def _open(self) -> IO[bytes]:
        handle = guard(self._final, lambda: self._tmp.open("wb"))
        guard(self._final, lambda: handle.write(self._header))
        return handle

    def restart(self) -> None:
        """Start the file over (the list is read again from the top)."""
        guard(self._final, self._handle.close)
        self._handle = self._open()
        self.reasons.clear()

    def write(self, rejects: pl.DataFrame) -> None:
        if rejects.height:
            guard(self._final, lambda: write_rejects_csv(rejects, self._handle))
            self.reasons.update(rejects.get_column("reason").to_list())

    def stage(self, into: Publication) -> None:
        guard(self._final, self._handle.close)
        into.stage(self._tmp, self._final)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._handle.close()
        self._tmp.unlink(missing_ok=True)


def stage_summary(summary: Mapping[str, Any], path: Path, into: Publication) -> None:
    """``summary.json``, staged for the commit point."""
    sweep_stale(path)
    into.write_text(path, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")


def make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"Cannot create the output's folder {folder}: {exc.strerror}.") from exc


def guard(path: Path | str, work: Callable[[], T]) -> T:
    """*work*, with a failure to write (a full disk, say) reported as the file it was for."""
    try:
        return work()
    except (OSError, pa.ArrowException, pl.exceptions.PolarsError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OutputError(f"Cannot write {path}: {why}. Nothing was replaced.") from exc


def sweep_stale(path: Path) -> None:
    """Remove the temporary files an earlier, killed writer of *path* left beside it."""
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = tmp.name.removeprefix(f".{path.name}.").removesuffix(".tmp")
        if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            remove(tmp)
