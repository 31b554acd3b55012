"""The run history: every run of a list, and what it decided about each of its addresses.

One store beside the caches (``history.sqlite``; ``sandbox-history.sqlite`` for ``--sandbox``
runs), or a PostgreSQL database every host shares (``[history] db`` a ``postgresql://`` URL,
the only kind several machines may write at once: a Dask run's workers).

``runs``
    One row per run: its list, when it started and finished, whether it was a sandbox run, how
    many distinct addresses it kept, the digest of its settings, the listclean version and its
    own figures (JSON). A run is *staged* (``finished_at`` null) while it writes, and kept from
    :meth:`RunHistory.finish` on, which the run calls once its files are published; a staged run
    is never anyone's "last run", and the next run of the list to finish removes it.
``parts``
    The run's addresses, a part at a time (up to 131,072 rows of a local run's batch, an
    input part of a Dask run: each writer adds its own): the hash of each distinct address
    (:mod:`pipeline.core.history.keys`), its VERDICT, REASON and SCORE, as one Parquet blob
    (zstd). A million addresses take about 8.4 MB a run: the 8-byte hashes, which do not
    compress, and a few bits for the rest.

Retention (``[history] retention_days``) is applied when a run finishes: runs of any list that
started longer ago go, their parts with them; the run finishing is always kept. An erasure
(:meth:`RunHistory.forget`) takes the addresses' hashes out of every run.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import polars as pl

from pipeline.core.db.database import Dialect, OwnsDatabase, Where, dialect_of, open_database
from pipeline.core.history.compare import Previous, previous_table
from pipeline.core.history.keys import HASH, hashes_of
from pipeline.core.history.types import KEPT, PastRun, RunStart

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS runs (
    run_id          TEXT PRIMARY KEY,
    list_name       TEXT NOT NULL,
    sandbox         INTEGER NOT NULL,
    started_at      REAL NOT NULL,
    finished_at     REAL,              -- null while the run is staged
    addresses       INTEGER NOT NULL,
    settings_digest TEXT NOT NULL,
    version         TEXT NOT NULL,
    counts          TEXT NOT NULL      -- the run's own figures, JSON
);
CREATE INDEX IF NOT EXISTS runs_of_list ON runs (list_name, sandbox, finished_at);
CREATE TABLE IF NOT EXISTS parts (
    run_id    TEXT NOT NULL,
    part      INTEGER NOT NULL,
    addresses INTEGER NOT NULL,
    answers   BLOB NOT NULL,           -- Parquet: HASH, VERDICT, REASON, SCORE
    PRIMARY KEY (run_id, part)
);
"""
_PG_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY, list_name TEXT NOT NULL, sandbox INTEGER NOT NULL,
        started_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION,
        addresses BIGINT NOT NULL, settings_digest TEXT NOT NULL, version TEXT NOT NULL,
        counts TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS runs_of_list ON runs (list_name, sandbox, finished_at)",
    """CREATE TABLE IF NOT EXISTS parts (
        run_id TEXT NOT NULL, part INTEGER NOT NULL, addresses BIGINT NOT NULL,
        answers BYTEA NOT NULL, PRIMARY KEY (run_id, part)
    )""",
)
_RUN_COLUMNS: Final = (
    "run_id, list_name, sandbox, started_at, finished_at, addresses, settings_digest, version, "
    "counts"
)


class _Statements:
    """The store's statements, written once, spelled for *d*'s database."""

    def __init__(self, d: Dialect) -> None:
        q = d.q
        self.begin = (
            f"INSERT INTO runs ({_RUN_COLUMNS}) "
            f"VALUES ({q}, {q}, {q}, {q}, NULL, 0, {q}, {q}, '{{}}') "
            "ON CONFLICT (run_id) DO NOTHING"  # begun again (a Dask task run twice): the same
        )
        self.add_part = (
            f"INSERT INTO parts (run_id, part, addresses, answers) VALUES ({q}, {q}, {q}, {q}) "
            "ON CONFLICT (run_id, part) DO UPDATE SET addresses = excluded.addresses, "
            "answers = excluded.answers"
        )
        self.finish = (
            f"UPDATE runs SET finished_at = {q}, addresses = {q}, counts = {q} WHERE run_id = {q}"
        )
        self.last = (
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE list_name = {q} AND sandbox = {q} "
            f"AND finished_at IS NOT NULL AND started_at < {q} "
            "ORDER BY started_at DESC LIMIT 1"
        )
        self.runs = (
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE list_name = {q} AND sandbox = {q} "
            "AND finished_at IS NOT NULL ORDER BY started_at"
        )
        self.run = f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = {q}"
        self.names = (
            f"SELECT DISTINCT list_name FROM runs WHERE sandbox = {q} "
            "AND finished_at IS NOT NULL ORDER BY list_name"
        )
        self.parts = f"SELECT answers FROM parts WHERE run_id = {q} ORDER BY part"
        self.part_numbers = f"SELECT part FROM parts WHERE run_id = {q} ORDER BY part"
        # Staged runs of the list older than one that finished: killed, or failed.
        self.stale = (
            f"SELECT run_id FROM runs WHERE list_name = {q} AND sandbox = {q} "
            f"AND finished_at IS NULL AND started_at < {q}"
        )
        self.expired = (
            f"SELECT run_id FROM runs WHERE started_at < {q} AND run_id <> {q} "
            "AND finished_at IS NOT NULL"
        )
        self.drop_parts = f"DELETE FROM parts WHERE run_id IN {d.values()}"
        self.drop_runs = f"DELETE FROM runs WHERE run_id IN {d.values()}"
        self.every_part = "SELECT run_id, part FROM parts ORDER BY run_id, part"
        self.one_part = f"SELECT answers FROM parts WHERE run_id = {q} AND part = {q}"
        self.count_part = (
            f"UPDATE parts SET addresses = {q}, answers = {q} WHERE run_id = {q} AND part = {q}"
        )
        self.recount = (
            f"UPDATE runs SET addresses = addresses - {q} WHERE run_id = {q} "
            "AND finished_at IS NOT NULL"
        )


class RunHistory(OwnsDatabase):
    """The run history (SQLite file or PostgreSQL); see the module's doc."""

    def __init__(
        self,
        where: Where,
        retention_days: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._db = open_database(
            where,
            what="the run history",
            remedy="Choose a writable file with history.db or --cache-dir.",
            broken_remedy="Delete the file to start the history afresh, or choose another one "
            "with history.db.",
            sqlite_schema=_SCHEMA,
            postgres_schema=_PG_SCHEMA,
        )
        self._sql = _Statements(dialect_of(self._db))
        self._retention = retention_days
        self._clock = clock
        self.where = self._db.where

    def begin(self, run: RunStart) -> None:
        """Stage *run*: its parts may be added from now on. Staging it again (a task run again
        after its worker was lost) changes nothing."""
        self._db.execute(
            self._sql.begin,
            (
                run.run_id,
                run.list_name,
                int(run.sandbox),
                run.started_at,
                run.settings_digest,
                run.version,
            ),
        )

    def add_part(self, run_id: str, part: int, kept: pl.DataFrame | Packed) -> None:
        """One part of a staged run's addresses (:data:`~pipeline.core.history.types.KEPT`,
        or already :func:`packed`); a part added again (a Dask task run twice) replaces the
        first."""
        done = kept if isinstance(kept, Packed) else packed(kept)
        self._db.execute(self._sql.add_part, (run_id, part, done.rows, done.data))

    def finish(self, run_id: str, addresses: int, counts: dict[str, Any]) -> bool:
        """Keep the staged run *run_id*; remove the list's staged runs that started before it,
        and every run past the retention. False when the run is no longer there (a run of the
        same list that finished first removed it as stale)."""
        found = self._runs(self._sql.run, (run_id,))
        if not found:
            return False
        run, now = found[0], self._clock()
        with self._db.transaction(write=True):
            self._db.execute(self._sql.finish, (now, addresses, json.dumps(counts), run_id))
            gone = [r for (r,) in self._db.query(self._sql.stale, _list_of(run))]
            if self._retention > 0:
                limit = now - self._retention * 86400
                gone += [r for (r,) in self._db.query(self._sql.expired, (limit, run_id))]
            self._drop(gone)
        return True

    def discard(self, run_id: str) -> None:
        """A staged run that will not finish (its run failed), removed with its parts."""
        with self._db.transaction(write=True):
            self._drop([run_id])

    def last(self, list_name: str, sandbox: bool, before: float | None = None) -> PastRun | None:
        """The list's latest finished run that started before *before* (default: any)."""
        limit = before if before is not None else float("inf")
        found = self._runs(self._sql.last, (list_name, int(sandbox), limit))
        return found[0] if found else None

    def previous(self, run: RunStart, reasons: bool = True) -> Previous | None:
        """The last finished run of *run*'s list before it, with what it kept (for
        :func:`~pipeline.core.history.compare.compare`); None on the list's first run.
        *reasons*: with each address's REASON, which only the changes file shows (without
        them, a third less memory, and no REASON text to read)."""
        last = self.last(run.list_name, run.sandbox, run.started_at)
        if last is None:
            return None
        columns = (HASH, "VERDICT", "REASON") if reasons else (HASH, "VERDICT")
        # Part by part, each read and made compact before the next is fetched: a run of
        # millions never sits in memory whole as it was stored, and its parts are sorted
        # together without a copy joined first.
        parts = [previous_table(pl.DataFrame(schema=KEPT).select(columns))]
        with self._db.transaction():  # every part from one snapshot
            numbers = [n for (n,) in self._db.query(self._sql.part_numbers, (last.run_id,))]
            for number in numbers:
                ((blob,),) = self._db.query(self._sql.one_part, (last.run_id, number))
                parts.append(previous_table(_unpacked(blob, columns)))
        return Previous(last, _sorted_by_hash(parts))

    def runs(self, list_name: str, sandbox: bool = False) -> list[PastRun]:
        """The list's finished runs, oldest first."""
        return self._runs(self._sql.runs, (list_name, int(sandbox)))

    def list_names(self, sandbox: bool = False) -> list[str]:
        """The names of the lists that have a finished run."""
        return [name for (name,) in self._db.query(self._sql.names, (int(sandbox),))]

    def kept(self, run_id: str) -> pl.DataFrame:
        """What the run kept of each of its addresses (:data:`KEPT`), its parts in order."""
        blobs = [blob for (blob,) in self._db.query(self._sql.parts, (run_id,))]
        frames = [_unpacked(b, tuple(KEPT)) for b in blobs]
        return pl.concat([pl.DataFrame(schema=KEPT), *frames], how="vertical")

    def forget(self, keys: Iterable[str]) -> int:
        """Take the addresses *keys* (dedupe keys) out of every run; how many (run, address)
        entries went. Each part holding one is written again without it."""
        hashes = pl.Series(HASH, hashes_of(set(keys)), dtype=pl.UInt64)
        if hashes.is_empty():
            return 0
        gone = 0
        for run_id, part in self._db.query(self._sql.every_part):
            gone += self._forget_in(run_id, part, hashes)
        return gone

    def _forget_in(self, run_id: str, part: int, hashes: pl.Series) -> int:
        with self._db.transaction(write=True):
            rows = self._db.query(self._sql.one_part, (run_id, part))
            if not rows:
                return 0
            kept = _unpacked(rows[0][0], tuple(KEPT))
            left = kept.filter(~pl.col(HASH).is_in(hashes.implode()))
            removed = kept.height - left.height
            if removed:
                done = packed(left)
                self._db.execute(self._sql.count_part, (done.rows, done.data, run_id, part))
                self._db.execute(self._sql.recount, (removed, run_id))
        return removed

    def _drop(self, run_ids: list[str]) -> None:
        if run_ids:
            wanted = json.dumps(sorted(set(run_ids)))
            self._db.execute(self._sql.drop_parts, (wanted,))
            self._db.execute(self._sql.drop_runs, (wanted,))

    def _runs(self, sql: str, params: tuple[Any, ...]) -> list[PastRun]:
        return [
            PastRun(r, name, bool(s), start, end or 0.0, n, digest, v, json.loads(counts))
            for r, name, s, start, end, n, digest, v, counts in self._db.query(sql, params)
        ]


def _list_of(run: PastRun) -> tuple[str, int, float]:
    return run.list_name, int(run.sandbox), run.started_at


_SORT_BUCKETS: Final = 4  # bits: the previous table is sorted in 16 pieces


def _sorted_by_hash(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """The rows of *parts* (emptied) sorted by HASH, a range of hashes (by their top bits)
    at a time, the ranges then put end to end: a sort of the whole table at once needs about
    four times its size beside it (9.2M addresses: 360 MiB for a 79 MiB table), one range at
    a time a sixteenth of that, in the same time."""
    table = pl.concat(parts, rechunk=False)
    parts.clear()  # the table holds them now, and goes before the ranges are put together
    top = (pl.col(HASH) // (1 << (64 - _SORT_BUCKETS))).cast(pl.UInt8)
    pieces = [table.filter(top == b).sort(HASH) for b in range(1 << _SORT_BUCKETS)]
    del table
    return pl.concat(pieces, rechunk=True)


def _unpacked(blob: bytes | memoryview, columns: tuple[str, ...]) -> pl.DataFrame:
    """*columns* of a part's Parquet bytes, typed as :data:`KEPT` types them."""
    frame = pl.read_parquet(io.BytesIO(bytes(blob)), columns=list(columns))
    return frame.cast({c: KEPT[c] for c in columns})


@dataclass(frozen=True)
class Packed:
    """A part's addresses as the history stores them (:func:`packed`)."""

    rows: int
    data: bytes  # the Parquet bytes of KEPT's columns


def packed(kept: pl.DataFrame) -> Packed:
    """*kept* as the Parquet bytes of a part (:data:`KEPT`'s columns, zstd); any thread may
    pack a part, beside the one that adds them."""
    buffer = io.BytesIO()
    kept.select(list(KEPT)).cast(KEPT).write_parquet(buffer, compression="zstd")  # type: ignore[arg-type]
    return Packed(kept.height, buffer.getvalue())
