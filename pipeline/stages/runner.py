"""The batch runner: read -> normalize -> domains -> verify -> write, over bounded batches.

A run is one event loop and two passes over the list, so memory depends on the batch size, not
on the list's length:

1. **scan**: each batch is read and normalized; its addresses go to the out-of-core duplicate
   marker (:mod:`pipeline.stages.state.dedupe`), its domains to the run's set of distinct
   domains, and the batch itself to the spill folder. Rejects go straight to the rejects file.
2. **between**: each distinct domain is checked once (cache, then DNS; answers are cached as they
   arrive). With ``--verify``, the distinct addresses worth asking are gathered from the spill
   and answered in the priority order and within the budget of the address step.
3. **decide**: each batch, read again (a list whose batches fit in a sixteenth of the run's
   memory is read once: its batches are kept from pass 1), is joined with its spilled work
   columns, gets its DUPLICATE flags, domain answers, address answers and bounce flags, is
   decided, and is written as one row group of the output.

Both passes use the machine's cores (``run.cores``; 0: every core the process may use): while
one batch is read, the batches before it are normalized (pass 1) or decided (pass 3) in a pool
of threads, at most one a core (polars works outside the interpreter's lock). The pool also
sets each batch's work columns aside, cuts its addresses into the duplicate marker's
partitions, encodes its output, counts it and packs its part of the history. What must happen
in order (appending to the marker's files, writing the output, adding the history's parts,
merging the counts) happens batch by batch, in the list's order, on a thread of its own, one
batch behind. A batch holds the run's memory divided by the batches in work at once (the
cores, and one more in turn), so the run stays within ``--memory``. With one core the passes
run batch after batch.

The engine's one resolver is made (and health-checked) the first time a step needs the network,
and closed when the run ends.

A front that must know what a run will check before anything is checked (the service's bulk
jobs, which charge a unit per distinct address checked) passes an *admit* coroutine: between
pass 1 and the domains it is told the rows read, the distinct addresses, and those whose
syntax passed (each a first row, duplicates not counted), and the run stops there if it raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import polars as pl

from pipeline.core.addresses.syntax import Syntax
from pipeline.core.bounces.step import BounceScope, Serialized, attach_bounces
from pipeline.core.domains.step import DomainStats, check_domains
from pipeline.core.engine import Engine
from pipeline.core.history.types import RunStart
from pipeline.core.mailboxes.types import CheckStats
from pipeline.core.progress import meter
from pipeline.stages.base import Batch
from pipeline.stages.history import HistoryPlan, LocalMemory, Prepared, with_calibration
from pipeline.stages.job import CleanJob
from pipeline.stages.provenance import Digest
from pipeline.stages.read.csv_source import ReadAgain
from pipeline.stages.read.reader import Choice, ListReader, ReadBatch, open_list
from pipeline.stages.sequence import Scanned, run_stages
from pipeline.stages.state.dedupe import Cut, DuplicateMarker
from pipeline.stages.state.spill import ReadOnce, Spill, named_failures, spill_folder
from pipeline.stages.steps import (
    answer_table,
    decide_work,
    held_keys,
    list_domains,
    normalize,
    probe_candidates,
    rows_of,
)
from pipeline.stages.summary import NormalizeStats, RunSummary, Tally
from pipeline.stages.write.formats import check_capacity
from pipeline.stages.write.outputs import OutputPaths, RejectsSink
from pipeline.stages.write.publish import Publication
from pipeline.stages.write.sinks import Sink, Write, open_outputs

_MIN_ROWS = 1_000
_MAX_ROWS = 1_000_000
T = TypeVar("T")
R = TypeVar("R")
# (rows read, distinct addresses, distinct addresses to check) -> None, or an error that stops
# the run before anything is checked
Admit = Callable[[int, int, int], Awaitable[None]]


def open_reader(job: CleanJob, folder: Path) -> ListReader:
    """The job's list, opened; refused before any work when the output cannot hold it."""
    choice = Choice(job.member, job.sheet, job.decoding, job.read, job.header_row, job.further)
    name = job.name or str(job.input)
    reader = open_list(name, job.input, folder, job.email_column, job.storage, choice)
    check_capacity(job.format, reader.known_rows)
    return reader


@dataclass
class _Scan:
    """What pass 1 learned: the spilled batches, the marker, the distinct domains, counts."""

    spill: Spill
    marker: DuplicateMarker
    originals: ReadOnce  # the read batches, for pass 2, while they fit
    domains: dict[str, None] = field(default_factory=dict)  # first-seen order
    held: list[pl.DataFrame] = field(default_factory=list)  # addresses held back (consent)
    syntax_ok: list[pl.Series] = field(default_factory=list)  # per row: its syntax passed
    rows: int = 0
    rejected: int = 0
    reading: float = 0.0  # seconds spent reading, the rest of the pass normalizing


def run_clean(
    job: CleanJob,
    engine: Engine,
    spill_parent: Path,
    history: HistoryPlan | None = None,
    admit: Admit | None = None,
) -> RunSummary:
    """Clean one list in one event loop; *spill_parent* holds the run's spill folder; with
    *history*, the run is recorded in the list's history (:mod:`pipeline.stages.history`);
    *admit* (see the module's doc) is asked before anything is checked."""
    return asyncio.run(_clean(job, engine, spill_parent, history, admit))


async def _clean(
    job: CleanJob,
    engine: Engine,
    spill_parent: Path,
    history: HistoryPlan | None,
    admit: Admit | None,
) -> RunSummary:
    try:
        with spill_folder(spill_parent) as folder, named_failures(folder):
            engine = with_calibration(engine, history)
            way = LocalWay(engine, folder, job.memory_mb, admit)
            return await run_stages(job, engine, folder, way, history)
    finally:
        await engine.dns.close()


class LocalWay:
    """The stages over a stream of bounded batches on this machine (see the module's doc)."""

    digest: Digest | None = None  # the input is hashed here, in a thread

    def __init__(
        self, engine: Engine, folder: Path, memory_mb: int, admit: Admit | None = None
    ) -> None:
        self._engine = engine
        self._folder = folder
        self._memory_mb = memory_mb
        self._admit = admit
        self._distinct = 0
        self._rows = 0  # a batch's rows
        self._table = pl.DataFrame()  # the domains' answers
        self._answers: pl.DataFrame | None = None  # the address checker's
        self._scan: _Scan | None = None
        self._rejects: RejectsSink | None = None
        self._memory: LocalMemory | None = None  # where the decided rows are remembered

    def open(self, job: CleanJob, folder: Path) -> ListReader:
        reader = open_reader(job, folder)
        # A batch a core is in work at once, and one more kept in turn: each holds its share
        # of the run's memory.
        cores = cores_of(self._engine)
        self._rows = batch_rows(job.memory_mb // (cores + (cores > 1)), reader.bytes_per_row)
        return reader

    def files(self, job: CleanJob) -> OutputPaths:
        return job.paths

    def scan(
        self, job: CleanJob, reader: ListReader, stack: contextlib.ExitStack
    ) -> tuple[Scanned, ListReader]:
        """Pass 1, the rejects written to the rejects file as they are read."""
        sink = RejectsSink(job.paths.rejects, list(reader.reject_schema))
        self._rejects = rejects = stack.enter_context(contextlib.closing(sink))
        sizes = (self._rows, self._memory_mb)
        self._scan = scan = _scan(reader, self._engine, self._folder, sizes, rejects)
        dedupe = scan.marker.finish()
        normalized = NormalizeStats(dedupe.distinct, dedupe.duplicates)
        self._distinct = dedupe.distinct
        return Scanned(scan.rows, scan.rejected, normalized, scan.reading), reader

    async def domains(self, engine: Engine) -> DomainStats:
        assert self._scan is not None
        if self._admit is not None:  # before the first check: what will be checked
            await self._admit(self._scan.rows, self._distinct, _to_check(self._scan))
        self._table, stats = await check_domains(engine.domains, list(self._scan.domains))
        return stats

    async def addresses(self, engine: Engine) -> CheckStats | None:
        assert self._scan is not None
        self._answers, checks = await _check_addresses(engine, self._scan, self._table)
        return checks

    def write(
        self,
        job: CleanJob,
        reader: ListReader,
        facts: dict[str, Any],
        publication: Publication,
        stack: contextlib.ExitStack,
    ) -> tuple[Tally, Counter[str]]:
        assert self._scan is not None and self._rejects is not None
        sink = stack.enter_context(
            open_outputs(job.paths, reader.schema, job.csv_bom, job.split, reader.further.fields)
        )
        sink.note(facts)
        tables = (self._table, self._answers)
        sinks = (sink, self._memory)
        tally = _decide_all(self._engine, self._scan, reader, self._rows, tables, sinks)
        sink.stage(publication)
        self._rejects.stage(publication)
        return tally, self._rejects.reasons

    def queries(self, engine: Engine) -> int:
        return engine.dns.queries_sent

    def remembering(self, plan: HistoryPlan, start: RunStart) -> LocalMemory:
        """Each batch's addresses remembered as the batch is written."""
        self._memory = LocalMemory(plan, start)
        return self._memory


# The spill keeps batches in memory up to this fraction of the run's memory, by their
# estimated size, and writes the rest to disk. That size undercounts what a kept batch holds
# (its strings are views into the read batch's buffers, which stay alive with them): a
# quarter made the 10M bench list's peak 1,531 MiB, a sixteenth 1,117 MiB, at the same speed
# (farm-bench, 3 pairs; the 1M warm run 1.01x). A short list still never touches the disk.
_KEPT_SHARE: Final = 16
# A list whose read batches fit in this share of the run's memory is read once: pass 2 takes
# them from memory. The 1M-row bench list (43 MiB of batches) ran in 0.97x the time, its
# peak lower (no second read's buffers); at an eighth, a list just within it (2.7M rows,
# 126 MiB) peaked 107 MiB higher, at 1,009 MiB.
_ONCE_SHARE: Final = 16


def batch_rows(memory_mb: int, bytes_per_row: float) -> int:
    """Rows per batch for a run that should stay within *memory_mb*: a batch is held a few
    times over (input, work columns, spill, output), each row costing about four times its
    size in the file plus our columns."""
    per_row = 4 * bytes_per_row + 1_200
    return int(min(_MAX_ROWS, max(_MIN_ROWS, memory_mb * 2**20 // (3 * per_row))))


def _scan(
    reader: ListReader, engine: Engine, folder: Path, sizes: tuple[int, int], rejects: RejectsSink
) -> _Scan:
    """Pass 1, again with the exact reader when the fast one turns out wrong (for each member
    of an archive it turns out wrong for: the exact reader never asks again)."""
    while True:
        try:
            return _scan_with(reader, engine, folder, sizes, rejects)
        except ReadAgain:
            reader.read_exactly()
            rejects.restart()


def _scan_with(
    reader: ListReader, engine: Engine, folder: Path, sizes: tuple[int, int], rejects: RejectsSink
) -> _Scan:
    rows, memory_mb = sizes
    spill = Spill(folder / "batches", memory_mb * 2**20 // _KEPT_SHARE, reader.expected_rows)
    spill.folder.mkdir(exist_ok=True)
    spill.clear()
    # About a million addresses a partition: one for a small list, up to the marker's most.
    partitions = min(256, max(1, reader.expected_rows // 1_000_000 + 1))
    originals = ReadOnce(memory_mb * 2**20 // _ONCE_SHARE)
    scan = _Scan(spill, DuplicateMarker(folder, partitions), originals)
    bar = meter(engine.progress, reader.known_rows, "read", "row")

    def normalized(item: tuple[int, int, ReadBatch]) -> _Normalized:
        index, first, read = item
        work = normalize(read.frame, reader.email_column, engine.lists)
        found = list_domains(read.frame, work, reader.further, engine.lists)
        keys = work.get_column("KEY")
        rows = pl.int_range(first, first + work.height, dtype=pl.UInt64, eager=True)
        cut = scan.marker.cut(keys, rows)
        # In memory or on disk (its own file, from any thread), without _CHECK: pass 2 makes
        # it again from DOMAIN and SYNTAX (attach_domains) for less than it costs to write and
        # read back (a seventh of the spill's bytes).
        spill.put(index, work.drop("_CHECK"))
        ok = work.get_column("SYNTAX") == Syntax.OK.value
        return _Normalized(cut, found, held_keys(work), ok)

    def kept(read: ReadBatch, done: _Normalized) -> None:
        rejects.write(read.rejects)
        scan.originals.add(read.frame)
        scan.rejected += read.rejects.height
        scan.marker.add_cut(done.cut)
        scan.domains.update(dict.fromkeys(done.found))
        scan.held.append(done.held)
        scan.syntax_ok.append(done.syntax_ok)
        scan.rows += read.frame.height
        bar.update(read.frame.height + read.rejects.height)

    try:
        with _pool(engine) as (pool, most), _in_turn(most) as turn:
            batches = _numbered(_timed(reader.batches(rows), scan))
            for (_index, _first, read), done in in_order(pool, normalized, batches, most):
                turn(kept, read, done)
    except BaseException:
        scan.marker.close()
        raise
    finally:
        bar.close()
    return scan


@dataclass(frozen=True)
class _Normalized:
    """What pass 1 learned of one batch on the pool, kept in the list's order."""

    cut: Cut  # its addresses, for the duplicate marker
    found: list[str]  # its distinct domains
    held: pl.DataFrame  # its addresses held back
    syntax_ok: pl.Series  # per row: its syntax passed


def _numbered(batches: Iterable[ReadBatch]) -> Iterator[tuple[int, int, ReadBatch]]:
    """Each batch with its number and the list's row number of its first row."""
    first = 0
    for index, read in enumerate(batches):
        yield index, first, read
        first += read.frame.height


def _timed(batches: Iterator[T], scan: _Scan) -> Iterator[T]:
    """*batches*, the seconds spent reading each added to *scan*'s."""
    while True:
        started = time.perf_counter()
        read = next(batches, None)
        scan.reading += time.perf_counter() - started
        if read is None:
            return
        yield read


def cores_of(engine: Engine) -> int:
    """The cores a run uses: ``run.cores``, else every core this process may run on."""
    given: int = engine.config.run.cores
    if given > 0:
        return given
    try:
        return max(1, len(os.sched_getaffinity(0)))  # the cores a pinned job keeps to
    except AttributeError:  # no affinity where the system has none to tell (macOS)
        return os.cpu_count() or 1


@contextlib.contextmanager
def _pool(engine: Engine) -> Iterator[tuple[ThreadPoolExecutor, int]]:
    """A pool of a thread a core, and how many batches may be in work at once."""
    cores = cores_of(engine)
    pool = ThreadPoolExecutor(cores, thread_name_prefix="listclean-batch")
    try:
        yield pool, cores
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _in_turn(cores: int) -> Iterator[Callable[..., None]]:
    """A way to do work in the list's order: on a thread of its own, one batch behind the
    caller (who reads the next meanwhile), when there are cores for it; else at once. An error
    in the work is raised at the next batch's turn, or at the end."""
    if cores < 2:
        yield lambda work, *args: work(*args)
        return
    writer = ThreadPoolExecutor(1, thread_name_prefix="listclean-write")
    last: list[Future[None]] = []

    def turn(work: Callable[..., None], *args: Any) -> None:
        if last:
            last.pop().result()
        last.append(writer.submit(work, *args))

    try:
        yield turn
        if last:
            last.pop().result()
    finally:
        writer.shutdown(wait=True, cancel_futures=True)


def in_order(
    pool: ThreadPoolExecutor, work: Callable[[T], R], items: Iterable[T], most: int
) -> Iterator[tuple[T, R]]:
    """Each item with *work* done on it in *pool*, in the items' order, at most *most* items
    in work at once (the next item is taken, read, while they work). An error in the work is
    raised here, in the item's turn; a consumer that stops early cancels what has not begun."""
    pending: deque[tuple[T, Future[R]]] = deque()
    try:
        for item in items:
            pending.append((item, pool.submit(work, item)))
            if len(pending) >= most:
                first, future = pending.popleft()
                yield first, future.result()
        while pending:
            first, future = pending.popleft()
            yield first, future.result()
    finally:
        for _item, future in pending:
            future.cancel()


def _to_check(scan: _Scan) -> int:
    """The distinct addresses the checks will look at: rows whose syntax passed, each the
    first row of its address."""
    if not scan.syntax_ok:
        return 0
    ok = pl.concat(scan.syntax_ok)
    return int((ok & ~scan.marker.flags(0, ok.len())).sum())


async def _check_addresses(
    engine: Engine, scan: _Scan, table: pl.DataFrame
) -> tuple[pl.DataFrame | None, CheckStats | None]:
    """The answers of the address checker (one row per address asked), in the order and
    within the budget it decides, from the addresses of the whole list."""
    if engine.checker is None or engine.offline:
        return None, None
    candidates = []
    offset = 0
    for index in range(scan.spill.count):
        work = _marked(scan, scan.spill.work(index), offset)
        offset += work.height
        candidates.append(probe_candidates(work, table))
    rows = pl.concat(candidates, how="vertical_relaxed") if candidates else None
    if rows is None or rows.is_empty():
        return None, None
    # The ledger's flags first: a paid verifier is never asked about a known bounce.
    rows = attach_bounces(engine.bounces, rows)
    checked, stats = await engine.checker.check(rows, engine.dns, engine.lists)
    return answer_table(checked, rows), stats


def _decide_all(
    engine: Engine,
    scan: _Scan,
    reader: ListReader,
    rows: int,
    tables: tuple[pl.DataFrame, pl.DataFrame | None],
    sinks: tuple[Sink, LocalMemory | None],
) -> Tally:
    """Pass 2: every batch read again (the original columns: cheaper to read than to keep,
    but for a short list, kept from pass 1), joined with its spilled work columns, decided
    (on the pool's threads), then written, counted and remembered in the list's order."""
    table, answers = tables
    sink, memory = sinks
    held = held_keys(pl.concat(scan.held)) if scan.held else None
    tally = Tally()
    # The ledger answers one thread at a time (one connection).
    bounces = Serialized(engine.bounces) if engine.bounces is not None else None
    scope: BounceScope | None = bounces.scope() if bounces is not None else None
    answered = (table, bounces, scope, answers)

    def decided(item: tuple[int, int, ReadBatch]) -> _Decided:
        index, offset, read = item
        work = scan.spill.work(index)
        if read.frame.height != work.height:  # the input changed (see InputPin), or a bug
            raise AssertionError(f"batch {index} read back with other rows than the first")
        batch = Batch(read.frame, _marked(scan, work, offset))
        work = decide_work(batch, table, bounces, scope, answers, held, engine.calibration)
        out = rows_of(batch, work, answered, (reader.further, engine.lists))
        counted = Tally()  # the batch's counts, merged in the list's order (as Dask's parts')
        counted.add(out)
        prepared = memory.prepare(work) if memory is not None else []
        write = sink.ready(out)
        scan.spill.drop(index)
        return _Decided(write, prepared, counted, work.height)

    def kept(done: _Decided) -> None:
        done.write()
        if memory is not None:
            memory.add_prepared(done.prepared)
        tally.merge(done.counted)
        bar.update(done.height)

    bar = meter(engine.progress, scan.rows, "write", "row")
    with contextlib.closing(bar), _pool(engine) as (pool, most), _in_turn(most) as turn:
        for _item, done in in_order(pool, decided, _numbered(_again(reader, scan, rows)), most):
            turn(kept, done)
    scan.marker.close()
    return tally


def _again(reader: ListReader, scan: _Scan, rows: int) -> Iterator[ReadBatch]:
    """The list's batches for pass 2: kept from pass 1 when they all were, else read again
    (the rejects were written in pass 1: none here)."""
    if not scan.originals.whole:
        yield from reader.batches(rows)
        return
    none = pl.DataFrame(schema=reader.reject_schema)
    for frame in scan.originals.take():
        yield ReadBatch(frame, none)


@dataclass(frozen=True)
class _Decided:
    """One batch decided on the pool, to be written, remembered and counted in turn."""

    write: Write  # its output rows' write, encoded
    prepared: list[Prepared]  # what the history keeps of it
    counted: Tally  # its counts
    height: int


def _marked(scan: _Scan, work: pl.DataFrame, offset: int) -> pl.DataFrame:
    return work.with_columns(scan.marker.flags(offset, work.height).alias("DUPLICATE"))
