"""Out-of-core duplicate marking: which rows repeat the address of an earlier row.

The rule is the in-memory one, ``DUPLICATE = (KEY != "") & ~KEY.is_first_distinct()``: a row
is a duplicate exactly when a row with a smaller row number has the same non-empty KEY. Nothing
else: a hash collision never makes two different addresses equal, and no repeat is missed.

How, in bounded memory:

* pass 1, :meth:`DuplicateMarker.add` per batch: every non-empty KEY goes, with its row number,
  to one of ``partitions`` Arrow IPC spill files, chosen by :func:`partition_of` on the KEY.
  All rows of one address land in the same file. Memory: one batch.
* :meth:`DuplicateMarker.finish`: each spill file is resolved alone. Rows are sorted by a 64-bit
  hash of the KEY, then by row number; only rows whose hash another row shares are candidates, and
  among those the KEY strings themselves decide (polars compares values, not hashes). A file
  with more than ``max_partition_rows`` rows is read back in chunks: repeats inside a chunk are
  marked at once, the first row of each address goes on to child files split by the next level
  of the hash, and each child is resolved the same way. Memory: one partition.
* pass 2, :meth:`DuplicateMarker.flags`: the duplicate rows live in a bitmap, a polars Boolean
  Series (bit-packed, one bit per row: 1.2 MiB for 10M rows, 60 MiB for 500M). It answers any
  row range in any order (batches, a resumed run, a worker asking for its own rows); a sorted
  stream of duplicate row numbers would cost 64 bits per duplicate, be smaller only below 1.6%
  duplicates, and need a merge over every partition's stream to be read in row order.

One partition function serves the whole pipeline: :func:`partition_of` hashes a string column
with a seed that depends on its *level*. A Dask run (:mod:`pipeline.stages.dask.shuffle`)
sends each part's (KEY, row number) pairs to buckets by the KEY at level 1
(:data:`KEY_LEVEL`) and settles each bucket with :func:`repeated_rows`, the rule above; the
marker spills KEYs at that level too and splits oversized files at levels 2 and up.
Hashes are ``polars.Series.hash``: stable across processes and machines for one
polars version (pinned in requirements.lock); every worker of a run must use the same version.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

import polars as pl
import pyarrow as pa
import pyarrow.ipc as ipc

Hasher = Callable[[pl.Series, int], pl.Series]
"""``(values, seed) -> UInt64 hashes``, one per value; equal values must hash alike."""

Compression = Literal["lz4", "zstd"] | None

DOMAIN_LEVEL = 0
KEY_LEVEL = 1
_MAX_LEVEL = 5  # past this, a file is resolved in memory whatever its size (see _resolve)
_MAX_FANOUT = 256
_MAX_PARTITIONS = 1000  # a file open per partition in pass 1: under the usual limit of 1024 fds
# large_string, not polars' native string_view: a view slice still points into the whole
# batch's character buffers, and IPC writes those whole (256 slices of a 1M-row batch: 500 MiB
# for 3 MiB of keys). Converting costs ~0.1 s per 1M rows.
_SCHEMA = pa.schema([("ROW", pa.uint64()), ("KEY", pa.large_string())])


def stable_hash(values: pl.Series, seed: int) -> pl.Series:
    """polars' own hash: the same for equal values in every process of one polars version."""
    return values.hash(seed=seed)


def partition_of(
    values: pl.Series, partitions: int, *, level: int = 0, hasher: Hasher = stable_hash
) -> pl.Series:
    """The partition (``0 <= p < partitions``, UInt32) of each value at hash *level*."""
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, not {partitions}.")
    return (hasher(values, level) % partitions).cast(pl.UInt32).rename("PARTITION")


@dataclass(frozen=True)
class DedupeStats:
    rows: int  # rows seen, with or without a KEY
    distinct: int  # distinct non-empty KEYs
    duplicates: int  # rows marked as repeats


def repeated_rows(frame: pl.DataFrame, hasher: Hasher = stable_hash, seed: int = 0) -> pl.Series:
    """ROW of each row of *frame* (columns ROW, KEY) whose KEY has a smaller ROW in *frame*.

    Sorting by hash beats polars' ``is_first_distinct`` on the strings about 3x (4M keys: 0.27 s
    against 0.93 s); the exact comparison only runs on rows whose hash another row shares.
    """
    by_hash = frame.with_columns(_H=hasher(frame.get_column("KEY"), seed)).sort("_H", "ROW")
    shared = (pl.col("_H") == pl.col("_H").shift(1)) | (pl.col("_H") == pl.col("_H").shift(-1))
    candidates = by_hash.filter(shared)
    # One KEY has one hash, so its rows sit together in ROW order: the first one seen is the
    # smallest. A colliding other KEY interleaves but is told apart by value.
    return candidates.filter(~pl.col("KEY").is_first_distinct()).get_column("ROW")


@dataclass(frozen=True)
class Cut:
    """A batch's keyed rows cut into the marker's partitions (:meth:`DuplicateMarker.cut`)."""

    parts: list[tuple[int, pa.Table]]  # (partition, its rows as spilled)
    keyed: int  # rows with a KEY
    end: int  # one past the batch's highest row number


class DuplicateMarker:
    """Marks repeated addresses over a list fed batch by batch; see the module docstring.

    ``work_dir`` receives a directory of the marker's own (``dedupe-*``), removed by
    :meth:`finish` or :meth:`close`; nothing else in ``work_dir`` is touched. ``partitions``
    spill files are open at once during pass 1; a file is resolved in memory when it holds at
    most ``max_partition_rows`` rows (at the peak about 160 bytes a row: 2M rows, 300 MiB), else
    it is split further.
    ``hasher`` is for tests: whatever it returns, the result stays exact.
    """

    def __init__(
        self,
        work_dir: Path,
        partitions: int = 256,
        *,
        max_partition_rows: int = 2_000_000,
        compression: Compression = None,
        hasher: Hasher = stable_hash,
    ) -> None:
        if not 1 <= partitions <= _MAX_PARTITIONS or max_partition_rows < 1:
            raise ValueError(
                f"partitions must be 1 to {_MAX_PARTITIONS} (not {partitions}) and "
                f"max_partition_rows at least 1 (not {max_partition_rows})."
            )
        work_dir.mkdir(parents=True, exist_ok=True)
        self._directory = Path(tempfile.mkdtemp(prefix="dedupe-", dir=work_dir))
        self._options = ipc.IpcWriteOptions(compression=compression)
        self._hasher = hasher
        self._max_rows = max_partition_rows
        self._spill = _Spill(self._directory / "k", partitions, KEY_LEVEL, hasher, self._options)
        self._rows = 0
        self._keyed = 0
        self._duplicates = 0
        self._flags: pl.Series | None = None

    def __enter__(self) -> DuplicateMarker:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def add(self, keys: pl.Series, rows: pl.Series | None = None) -> None:
        """Pass 1: one batch of KEYs ("" or null: no address) with their row numbers.

        Without *rows* they are the next rows after the highest seen so far (input order).
        With *rows* (global row numbers, any order, each row given once) the batch may come
        from anywhere in the list, as in one partition of a partitioned run.
        """
        if rows is None:
            rows = pl.int_range(self._rows, self._rows + len(keys), dtype=pl.UInt64, eager=True)
        self.add_cut(self.cut(keys, rows))

    def cut(self, keys: pl.Series, rows: pl.Series) -> Cut:
        """A batch of KEYs with their row numbers made ready for :meth:`add_cut`: the work of
        :meth:`add` that any thread may do, beside other batches'."""
        if len(rows) != len(keys):
            raise ValueError(f"A batch of {len(keys)} keys but {len(rows)} row numbers.")
        frame = pl.DataFrame({"ROW": rows.cast(pl.UInt64), "KEY": keys.cast(pl.String)})
        end = int(frame.select(pl.col("ROW").max()).item()) + 1 if frame.height else 0
        keyed = frame.filter(pl.col("KEY") != "")  # drops nulls too
        return Cut(self._spill.cut(keyed), keyed.height, end)

    def add_cut(self, cut: Cut) -> None:
        """Pass 1: a batch :meth:`cut` made, added by one thread (the files are appended to)."""
        if self._flags is not None:
            raise RuntimeError("DuplicateMarker.add() was called after finish().")
        self._rows = max(self._rows, cut.end)
        self._keyed += cut.keyed
        self._spill.append_cut(cut.parts)

    def finish(self) -> DedupeStats:
        """Resolve every spill file, remove them, and count."""
        if self._flags is not None:
            raise RuntimeError("DuplicateMarker.finish() was called twice.")
        self._flags = pl.repeat(False, self._rows, dtype=pl.Boolean, eager=True).alias("DUPLICATE")
        try:
            for path, count in self._spill.close():
                self._resolve(path, count, KEY_LEVEL)
        finally:
            self.close()
        return DedupeStats(self._rows, self._keyed - self._duplicates, self._duplicates)

    def flags(self, offset: int, length: int) -> pl.Series:
        """Pass 2: DUPLICATE for rows ``offset .. offset + length - 1`` (a zero-copy slice)."""
        flags = self._finished()
        if offset < 0 or length < 0 or offset + length > flags.len():
            raise ValueError(
                f"Rows {offset} to {offset + length - 1} are outside the {flags.len()} rows seen."
            )
        return flags.slice(offset, length)

    def flags_at(self, rows: pl.Series) -> pl.Series:
        """Pass 2: DUPLICATE for the given global row numbers, in their order."""
        return self._finished().gather(rows)

    def close(self) -> None:
        """Remove the marker's directory; flags stay readable after :meth:`finish`."""
        self._spill.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    def _finished(self) -> pl.Series:
        if self._flags is None:
            raise RuntimeError("DuplicateMarker.finish() must be called before reading flags.")
        return self._flags

    def _resolve(self, path: Path, count: int, level: int) -> None:
        # Past _MAX_LEVEL splitting has stopped paying (only a degenerate hasher gets there):
        # the file is resolved whole, still exactly.
        if count <= self._max_rows or level >= _MAX_LEVEL:
            self._mark(repeated_rows(pl.read_ipc(path), self._hasher, level + 1))
            path.unlink()
            return
        children = self._split(path, count, level + 1)
        path.unlink()
        for child, child_count in children:
            self._resolve(child, child_count, level + 1)

    def _split(self, path: Path, count: int, level: int) -> list[tuple[Path, int]]:
        """Mark repeats inside each chunk; send each address's first row on to a child file."""
        fanout = min(_MAX_FANOUT, 2 * math.ceil(count / self._max_rows))
        children = _Spill(path.with_suffix(""), fanout, level, self._hasher, self._options)
        for chunk in _chunks(path, self._max_rows):
            repeats = repeated_rows(chunk, self._hasher, level)
            self._mark(repeats)
            children.append(chunk.filter(~pl.col("ROW").is_in(repeats.implode())))
        return children.close()

    def _mark(self, rows: pl.Series) -> None:
        assert self._flags is not None
        self._flags = self._flags.scatter(rows, True)  # in place: the Series owns its bitmap
        self._duplicates += len(rows)


class _Spill:
    """One Arrow IPC file per partition, receiving (ROW, KEY) rows batch by batch."""

    def __init__(
        self,
        directory: Path,
        partitions: int,
        level: int,
        hasher: Hasher,
        options: ipc.IpcWriteOptions,
    ) -> None:
        directory.mkdir()
        self._directory = directory
        self._level = level
        self._hasher = hasher
        self._options = options
        self._counts = [0] * partitions
        self._writers: dict[int, ipc.RecordBatchFileWriter] = {}

    def append(self, frame: pl.DataFrame) -> None:
        self.append_cut(self.cut(frame))

    def cut(self, frame: pl.DataFrame) -> list[tuple[int, pa.Table]]:
        """*frame*'s rows by partition, as they are spilled (any thread)."""
        part = partition_of(
            frame.get_column("KEY"),
            len(self._counts),
            level=self._level,
            hasher=self._hasher,
        )
        groups = frame.with_columns(part).partition_by(
            "PARTITION", as_dict=True, include_key=False, maintain_order=True
        )
        return [(int(p), rows.to_arrow().cast(_SCHEMA)) for (p,), rows in groups.items()]

    def append_cut(self, parts: list[tuple[int, pa.Table]]) -> None:
        for partition, rows in parts:
            self._writer(partition).write_table(rows)
            self._counts[partition] += rows.num_rows

    def close(self) -> list[tuple[Path, int]]:
        """Close the files (again is harmless); the non-empty ones with their row counts."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        return [(self._path(p), n) for p, n in enumerate(self._counts) if n]

    def _path(self, partition: int) -> Path:
        return self._directory / f"{partition:04d}.arrow"

    def _writer(self, partition: int) -> ipc.RecordBatchFileWriter:
        if partition not in self._writers:
            self._writers[partition] = ipc.new_file(
                str(self._path(partition)), _SCHEMA, options=self._options
            )
        return self._writers[partition]


def _chunks(path: Path, rows: int) -> Iterator[pl.DataFrame]:
    """The file's rows in chunks of at most *rows* (or one record batch, if that is bigger)."""
    with pa.OSFile(str(path)) as source:
        reader = ipc.open_file(source)
        pending: list[pa.RecordBatch] = []
        held = 0
        for index in range(reader.num_record_batches):
            batch = reader.get_batch(index)
            if pending and held + batch.num_rows > rows:
                yield pl.DataFrame(pa.Table.from_batches(pending))
                pending, held = [], 0
            pending.append(batch)
            held += batch.num_rows
        if pending:
            yield pl.DataFrame(pa.Table.from_batches(pending))
