"""A keyed table on shared storage, cut into buckets: where the workers of a cluster keep what
they learn when no database is configured.

A Dask run's workers may sit on many machines, and the storage every one of them reaches is a
folder of files: a shared mount (``file:///shared/...``) or an object-store prefix
(``s3://bucket/...``). SQLite cannot live there (its locks do not hold on a network file
system, and an object store has no locks at all), so a table is kept as files no writer ever
changes once written:

    ROOT/NAME/BB/SEGMENT.parquet        (a segment of one bucket's rows)
    ROOT/NAME/mixed/SEGMENT.parquet     (a writer's rows of several buckets)

``BB`` is the bucket of a row's first key column, the CRC-32 of its UTF-8 bytes modulo
:data:`BUCKETS`: a function of the value alone, the same in every process and every version
(polars' own hash is not promised to stay the same across versions, and a cache must outlive
an upgrade). A worker that owns a bucket reads that folder only. ``SEGMENT`` is the writer's
clock in nanoseconds and a random tag; each segment is written whole or not at all (a local
file under a hidden name, then renamed; one PUT in an object store, which S3 makes visible
only when complete), so a writer killed at any point leaves no half segment behind, only the
rows it had not written yet. A writer's commit is one segment, whatever buckets its rows fall
in: rows of several buckets go to the table's mixed segments, which every reader reads too,
and which a reader moves into their buckets once there are many.

Every row carries the time it was written (``_at``) and an identity (``_id``). A key's row is
its latest (``combine="last"``: answers, which a later one replaces) or the sum of all of its
rows (``combine="sum"``: counters, each row a delta); a row may be a tombstone (``_gone``,
written by :meth:`BucketTable.delete`). A table with an ``expires_at`` column forgets rows
past it (unless it keeps them: ``forget_expired=False``, a cache whose answers past their
lifetime are still handed out as due). A segment written before a value column was added reads
it as null. A reader that finds many segments in a bucket joins them into one and deletes those
it read: only what it read, so a segment written meanwhile survives, and a reader listing the
folder between the two steps sees rows twice, which their ``_id`` makes harmless.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, Literal, Self

import polars as pl

from pipeline.core.errors import StoreError

if TYPE_CHECKING:  # fsspec comes with an object-store install
    from fsspec import AbstractFileSystem

BUCKETS: Final = 64
_JOIN_FROM: Final = 16  # segments in a bucket from which a reader joins them into one
_MIXED: Final = "mixed"  # segments whose rows fall in several buckets
_READS: Final = 20  # listings of a folder that keeps changing before a reader gives up
_SYSTEM: Final = {"_at": pl.Int64, "_id": pl.String, "_gone": pl.Boolean}


def bucket_of(values: Iterable[str]) -> list[int]:
    """Each value's bucket: CRC-32 of its UTF-8 bytes, modulo :data:`BUCKETS`."""
    return [zlib.crc32(v.encode()) % BUCKETS for v in values]


def with_buckets(frame: pl.DataFrame, column: str, name: str = "_bucket") -> pl.DataFrame:
    """*frame* with the bucket of *column* (computed once per distinct value)."""
    distinct = frame.get_column(column).unique()
    table = pl.DataFrame(
        {column: distinct, name: pl.Series(bucket_of(distinct.to_list()), dtype=pl.UInt8)}
    )
    return frame.join(table, on=column, how="left", maintain_order="left")


@dataclass(frozen=True)
class Shelf:
    """A folder every worker reaches: a local (or mounted) path, or a prefix of *fs*'s object
    store. Picklable, so a task can carry it."""

    root: str
    fs: AbstractFileSystem | None = None  # None: this machine's file system

    def __truediv__(self, name: str) -> Shelf:
        return Shelf(f"{self.root.rstrip('/')}/{name}", self.fs)

    def shown(self) -> str:
        return self.root

    def names(self) -> list[str]:
        """The complete files in this folder, in name order (none when it does not exist)."""
        try:
            if self.fs is None:
                found = os.listdir(self.root) if os.path.isdir(self.root) else []
            else:
                listed = self.fs.ls(self.root, detail=False) if self.fs.exists(self.root) else []
                found = [str(p).rstrip("/").rsplit("/", 1)[-1] for p in listed]
        except OSError as exc:
            raise _broken(self.root, exc) from exc
        return sorted(n for n in found if not n.startswith("."))

    def write(self, name: str, fill: Callable[[IO[bytes]], object]) -> None:
        """The file *name* written whole by *fill*, or not at all."""
        target = f"{self.root.rstrip('/')}/{name}"
        try:
            if self.fs is None:
                Path(self.root).mkdir(parents=True, exist_ok=True)
                tmp = Path(self.root) / f".{name}.{os.getpid()}.tmp"
                try:
                    with tmp.open("wb") as handle:
                        fill(handle)
                    os.replace(tmp, target)
                finally:
                    tmp.unlink(missing_ok=True)
            else:
                with self.fs.open(target, "wb") as handle:
                    fill(handle)
        except OSError as exc:
            raise _broken(target, exc) from exc

    @contextlib.contextmanager
    def reading(self, name: str) -> Iterator[IO[bytes]]:
        path = f"{self.root.rstrip('/')}/{name}"
        if self.fs is None:
            with Path(path).open("rb") as handle:
                yield handle
        else:
            with self.fs.open(path, "rb") as handle:
                yield handle

    def remove(self, names: Iterable[str]) -> None:
        """The files *names* gone (those already gone too)."""
        for name in names:
            path = f"{self.root.rstrip('/')}/{name}"
            with contextlib.suppress(FileNotFoundError):
                if self.fs is None:
                    Path(path).unlink()
                else:
                    self.fs.rm(path)


def _broken(where: str, exc: OSError) -> StoreError:
    why = exc.strerror or str(exc) or type(exc).__name__
    return StoreError(
        f"The shared store at {where} failed: {why}. Every worker of the cluster must be able "
        "to read and write there: check the path or the bucket and its credentials, or name "
        "another with [cache] shared."
    )


class OnShelf:
    """Base of a store kept in bucket tables: nothing is held open between calls, so ``with``
    and :meth:`close` cost nothing, as a database's store is closed."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to close."""


class BucketTable:
    """One table on a :class:`Shelf`: rows keyed by *key* (the first column chooses the
    bucket), with the *values* columns; see the module's doc."""

    def __init__(
        self,
        shelf: Shelf,
        name: str,
        key: tuple[str, ...],
        values: Mapping[str, pl.DataType | type[pl.DataType]],
        *,
        combine: Literal["last", "sum"] = "last",
        clock: Callable[[], float] = time.time,
        forget_expired: bool = True,
    ) -> None:
        self.shelf = shelf / name
        self.key = key
        self.schema: dict[str, Any] = {**dict.fromkeys(key, pl.String), **values, **_SYSTEM}
        self._combine = combine
        self._clock = clock
        self._expires = forget_expired and "expires_at" in self.schema

    def get(self, keys: Iterable[str]) -> pl.DataFrame:
        """The rows whose first key column is one of *keys*, as :meth:`rows` gives them."""
        wanted = pl.DataFrame({self.key[0]: list(dict.fromkeys(keys))}, schema={self.key[0]: str})
        if wanted.is_empty():
            return self._empty()
        found = self.rows(sorted(set(bucket_of(wanted.get_column(self.key[0]).to_list()))))
        return found.join(wanted, on=self.key[0], how="semi")

    def rows(self, buckets: Iterable[int] | None = None) -> pl.DataFrame:
        """Each key's row (its latest, or the sum of its deltas) in *buckets* (all of them by
        default), unexpired and not deleted, without the bookkeeping columns."""
        chosen = list(range(BUCKETS) if buckets is None else buckets)
        # The mixed segments first: a reader moving their rows into the buckets writes those
        # before it removes these, so whatever this read misses here it finds there.
        frames = [self._mixed(set(chosen)), *(self._bucket(b) for b in chosen)]
        combined = self._combined(pl.concat(frames)) if frames else self._empty()
        return combined.drop(list(_SYSTEM))

    def put(self, rows: pl.DataFrame) -> None:
        """Add *rows* (the key and value columns) as one segment: in their bucket's folder, or
        when they fall in several, in the table's mixed segments (readers move those rows into
        their buckets once there are many), so that a writer's commit is one file whatever
        it holds."""
        if rows.is_empty():
            return
        at = time.time_ns()
        tag = secrets.token_hex(6)
        stamped = rows.with_columns(
            pl.lit(at, pl.Int64).alias("_at"),
            (pl.lit(f"{tag}-") + pl.int_range(pl.len()).cast(pl.String)).alias("_id"),
            pl.lit(False).alias("_gone"),
        ).select(list(self.schema))
        self._put(stamped, at, tag)

    def delete(self, keys: Iterable[str]) -> None:
        """The rows of *keys* (their first key column) forgotten: a tombstone each."""
        for_key = self.get(keys)
        if for_key.is_empty():
            return
        at, tag = time.time_ns(), secrets.token_hex(6)
        gone = (
            for_key.select(self.key)
            .unique()
            .with_columns(
                pl.lit(at, pl.Int64).alias("_at"),
                (pl.lit(f"{tag}-") + pl.int_range(pl.len()).cast(pl.String)).alias("_id"),
                pl.lit(True).alias("_gone"),
            )
        )
        self._put(pl.concat([gone, for_key.head(0)], how="diagonal_relaxed"), at, tag)

    def _put(self, stamped: pl.DataFrame, at: int, tag: str) -> None:
        stamped = stamped.cast(self.schema).select(list(self.schema))  # type: ignore[arg-type]
        buckets = set(bucket_of(stamped.get_column(self.key[0]).unique().to_list()))
        folder = self._folder(buckets.pop()) if len(buckets) == 1 else self.shelf / _MIXED
        folder.write(f"{at:020d}-{tag}.parquet", stamped.write_parquet)

    def _mixed(self, chosen: set[int]) -> pl.DataFrame:
        """The mixed segments' rows of the *chosen* buckets; once there are many segments,
        their rows are moved into their buckets' folders."""
        folder = self.shelf / _MIXED
        names, frame = self._read(folder)
        if frame is None:
            return self._empty()
        bucketed = with_buckets(frame, self.key[0])
        if len(names) >= _JOIN_FROM:
            at, tag = time.time_ns(), secrets.token_hex(6)
            for (bucket,), part in bucketed.partition_by("_bucket", as_dict=True).items():
                self._folder(int(bucket)).write(
                    f"{at:020d}-{tag}.parquet", part.drop("_bucket").write_parquet
                )
            folder.remove(names)
        return bucketed.filter(pl.col("_bucket").is_in(list(chosen))).drop("_bucket")

    def _bucket(self, bucket: int) -> pl.DataFrame:
        folder = self._folder(bucket)
        names, frame = self._read(folder)
        if frame is None:
            return self._empty()
        if len(names) >= _JOIN_FROM:
            frame = self._join(folder, names, frame)
        return frame

    def _read(self, folder: Shelf) -> tuple[list[str], pl.DataFrame | None]:
        """The segments of *folder*: their names, and their rows (each once, by _id). A
        segment gone between the listing and its reading was joined with others by another
        reader, which wrote the joined one first: the folder is listed again."""
        for _ in range(_READS):
            names = [n for n in folder.names() if n.endswith(".parquet")]
            try:
                frames = [self._segment(folder, name) for name in names]
            except FileNotFoundError:
                continue
            if not frames:
                return names, None
            return names, pl.concat(frames).unique("_id", keep="first", maintain_order=True)
        raise StoreError(
            f"The shared store's folder {folder.root} kept changing while it was read "
            f"({_READS} times). Run again; if it persists, check that its storage lists what "
            "was just written (a consistent object store or file system)."
        )

    def _segment(self, folder: Shelf, name: str) -> pl.DataFrame:
        try:
            with folder.reading(name) as handle:
                frame = pl.read_parquet(handle)
                missing = [c for c in self.schema if c not in frame.columns]
                frame = frame.with_columns(pl.lit(None).alias(c) for c in missing)
                return frame.cast(self.schema).select(list(self.schema))  # type: ignore[arg-type]
        except FileNotFoundError:
            raise
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise StoreError(
                f"The shared store's segment {folder.root}/{name} cannot be read: {exc}. "
                "Delete it (its rows are learned again)."
            ) from exc

    def _join(self, folder: Shelf, names: list[str], frame: pl.DataFrame) -> pl.DataFrame:
        """The bucket's segments *names* joined into one (superseded and expired rows left
        out, a counter's deltas kept), then removed."""
        kept = self._combined(frame, keep_tombstones=True) if self._combine == "last" else frame
        kept = self._unexpired(kept)
        at = time.time_ns()
        folder.write(f"{at:020d}-{secrets.token_hex(6)}.parquet", kept.write_parquet)
        folder.remove(names)
        return kept

    def _combined(self, frame: pl.DataFrame, keep_tombstones: bool = False) -> pl.DataFrame:
        """Each key's row: its latest (then only if unexpired: a row replaces the one before,
        as a database's upsert does), or its deltas summed."""
        if self._combine == "sum":
            value = [c for c in self.schema if c not in self.key and c not in _SYSTEM]
            summed = frame.group_by(list(self.key), maintain_order=True).agg(
                *(pl.col(c).sum() for c in value),
                pl.col("_at").max(),
                pl.col("_id").first(),
                pl.lit(False).alias("_gone"),
            )
            return summed.select(list(self.schema))
        latest = frame.sort("_at", maintain_order=True)
        latest = self._unexpired(latest.unique(list(self.key), keep="last", maintain_order=True))
        return latest if keep_tombstones else latest.filter(~pl.col("_gone"))

    def _unexpired(self, frame: pl.DataFrame) -> pl.DataFrame:
        if not self._expires:
            return frame
        # A tombstone has no expiry: it holds until a later row of its key.
        return frame.filter(pl.col("_gone") | (pl.col("expires_at") > self._clock()))

    def _folder(self, bucket: int) -> Shelf:
        return self.shelf / f"{bucket:02d}"

    def _empty(self) -> pl.DataFrame:
        return pl.DataFrame(schema=self.schema)
