"""The Dask engine (``--engine dask``): one list cleaned by the workers of a Dask cluster, with
exactly the local engine's answers. The work is the stage functions of
:mod:`pipeline.stages.steps` and the engine's steps, run per input part by
:mod:`pipeline.stages.dask.tasks`; this module plans the run and merges what comes back.

How a run goes:

1. **read and scan**: the driver plans the list's parts from metadata (Parquet footers: whole
   row groups) and the workers read them; a list only read in order (CSV, packed, zip, xlsx)
   is first read by one worker with the local reader into Parquet shards beside the output
   (:func:`~pipeline.stages.dask.tasks.convert`: the local rejects and line numbers), then
   read like Parquet. Only standard input, or a run with an object-store output, is read by
   the driver and shipped batch by batch. Each part is normalized on the worker that read it
   and its rows stay there to the end; each row keeps its row number in the list (its part's
   first row plus its place in the part: no global scan).
2. **duplicates**: only narrow (KEY, row number) pairs cross the network, shuffled by a hash
   of the KEY into buckets; in each bucket the first row in input order of each KEY wins,
   and each part gets back the row numbers of its duplicates (and of its rows whose address
   another row holds back from sending), exactly as the local engine decides
   (:mod:`pipeline.stages.dask.shuffle`).
3. **domains**: each part sends one record per distinct domain; the driver reads the domain
   cache once for every distinct domain of the list; the domains it lacks are resolved in
   chunks on the workers (each domain once in the whole cluster), the driver checks the
   resolver once and judges the MX hosts (each asked once per run, far fewer than domains),
   and commits each chunk's answers to its cache as the chunk arrives. Each part then joins
   its own domains' table. A second run sends no query for cached domains.
4. **addresses**: see :mod:`pipeline.stages.dask.checks` (the budget shared out by the driver in
   the local engine's order; one worker per mail provider; answers committed by the driver).
5. **decide and write**: each part is decided where it is, with the answers the driver
   shipped, and its output rows (in input order) written by that worker as a part file
   (:mod:`pipeline.stages.dask.staging`; a single Parquet file is joined from the parts by
   one worker), staged for the run's commit point. Other outputs (CSV, xlsx,
   ``--split``, object stores) are written by the driver through the local sinks.

No task is tied to a worker: the scheduler places each, and a lost worker's tasks run again
elsewhere (:mod:`pipeline.stages.dask.cluster`).

Workers open no cache or store: the caches live with the driver (``--cache-dir``), which ships
what workers need and commits what they learn. So workers need no shared disk, and their
local directories may differ.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.bounces.step import BounceScope
from pipeline.core.config import StorageConfig
from pipeline.core.domains.dns import DnsAnswer, DnsStatus
from pipeline.core.domains.exchanges import MemoryHosts, judge_exchanges
from pipeline.core.domains.step import DomainStats, DomainWork, domain_answers
from pipeline.core.engine import Engine
from pipeline.core.history.types import RunStart
from pipeline.core.mailboxes.types import CheckStats
from pipeline.core.progress import meter
from pipeline.stages.dask.checks import check_addresses, drain
from pipeline.stages.dask.cluster import ATTEMPTS, Cluster, give_up, lost_work
from pipeline.stages.dask.history import DaskMemory, decide_parts
from pipeline.stages.dask.reading import Cluster as Reaching
from pipeline.stages.dask.reading import Planned, Report, plan, read_ranges
from pipeline.stages.dask.shuffle import (
    counts_of,
    flags_of,
    key_pieces,
    mark_part,
    piece,
    settle_bucket,
)
from pipeline.stages.dask.staging import (
    Output,
    staging_folder,
    workers_write,
    write_by_workers,
)
from pipeline.stages.dask.tasks import (
    Converted,
    PartitionInfo,
    ShippedFlags,
    convert,
    partition_info,
    partition_table,
    resolve_domains,
    scan_batch,
    scan_part,
)
from pipeline.stages.history import HistoryPlan
from pipeline.stages.job import CleanJob
from pipeline.stages.provenance import Digest, InputDigest, input_digest
from pipeline.stages.read.csv_source import ReadAgain
from pipeline.stages.read.reader import ListReader
from pipeline.stages.runner import batch_rows, open_reader
from pipeline.stages.sequence import Scanned, run_stages
from pipeline.stages.state.spill import named_failures, spill_folder
from pipeline.stages.summary import (
    NormalizeStats,
    RunSummary,
    Tally,
)
from pipeline.stages.write.outputs import (
    RejectsSink,
    output_schema,
)
from pipeline.stages.write.publish import Publication
from pipeline.stages.write.sinks import Sink, open_outputs

BUCKET_ROWS = 2_000_000  # rows of the list a duplicate bucket settles (about 100 MB)
_CHUNK = 2_000  # domains per resolving task: answers reach the cache chunk by chunk

_log = logging.getLogger(__name__)
Plan = HistoryPlan | None  # the run's history plan; None: not recorded


def run_clean_dask(
    job: CleanJob, engine: Engine, spill_parent: Path, cluster: Cluster, history: Plan = None
) -> RunSummary:
    """Clean one list on *cluster*; same files and summary as :func:`run_clean`."""
    return asyncio.run(_clean(job, engine, spill_parent, cluster, history))


async def _clean(
    job: CleanJob, engine: Engine, spill_parent: Path, cluster: Cluster, history: Plan
) -> RunSummary:
    try:
        with spill_folder(spill_parent) as folder, named_failures(folder):
            return await _attempts(job, engine, folder, cluster, history)
    finally:
        await engine.dns.close()


async def _attempts(
    job: CleanJob, engine: Engine, folder: Path, cluster: Cluster, history: Plan
) -> RunSummary:
    """The run, from the read again when a worker was lost with what cannot be computed again
    (see :mod:`pipeline.stages.dask.cluster`); whatever ends it cancels its tasks."""
    lost, killed = lost_work()
    for attempt in range(1, ATTEMPTS + 1):
        run = DaskRun(cluster, engine, folder)
        try:
            return await run_stages(job, engine, folder, run, history)
        except killed as exc:
            run.cancel()
            raise give_up(0, exc) from exc
        except lost as exc:
            run.cancel()
            if attempt == ATTEMPTS:
                raise give_up(attempt, exc) from exc
            _log.warning("A Dask worker was lost (%s): the run starts again from the read.", exc)
        except BaseException:  # a signal (Interrupted), a bad input: no task goes on
            run.cancel()
            raise
    raise AssertionError("unreachable")


@dataclass
class _Scan:
    batches: list[Any]  # futures of each input part's normalized rows, in input order
    rows: int = 0
    rejected: int = 0
    reading: float = 0.0


class DaskRun:
    """One run's place on the cluster: who owns what, and what the workers sent. The run's
    stages are :func:`~pipeline.stages.sequence.run_stages`; this is their way on a cluster
    (a :class:`~pipeline.stages.sequence.Way`)."""

    def __init__(self, cluster: Cluster, engine: Engine, folder: Path) -> None:
        self.client = cluster.client
        self.workers = cluster.workers
        self.size = len(cluster.workers)
        self.lists = engine.config.lists
        self.topic = f"listclean-{uuid.uuid4().hex}"
        self.remote_queries = 0  # DNS queries the workers sent
        self._engine = engine
        self._folder = folder
        self._sent: weakref.WeakSet[Any] = weakref.WeakSet()  # the run's futures still held
        self.digest: Digest | None = self._digest  # the input hashed by a worker
        self._planned: Planned | None = None
        self._parts: list[Any] = []  # futures of the parts' rows (Batch), in input order
        self._infos: list[PartitionInfo] = []
        self._tables: list[Any] = []  # futures of each part's domain table
        self._found: Any = None  # the address checker's answers (a future), if any
        self._scope: BounceScope | None = None
        self._memory: DaskMemory | None = None  # the run's history, when it is recorded

    def submit(self, function: Callable[..., Any], *args: Any) -> Any:
        """*function* on the cluster, wherever the scheduler places it: no task is tied to a
        worker's address, so a lost or restarted worker's tasks run again on another."""
        future = self.client.submit(function, *args, pure=False)
        self._sent.add(future)
        return future

    def cancel(self) -> None:
        """Every task of the run still wanted, cancelled (the run is over without them)."""
        # Only what has not finished: a finished task has nothing to stop (and the scheduler
        # may already have let its key go), and its result goes with its future.
        pending = [future for future in self._sent if not future.done()]
        with contextlib.suppress(Exception):  # a cluster already gone has nothing to cancel
            self.client.cancel(pending)

    def wait(self, futures: Sequence[Any], hear: Callable[[list[Any]], None]) -> list[Any]:
        """The futures' results, hearing each event the tasks send while they run."""
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.client.subscribe_topic(self.topic, events.put)
        try:
            results = []
            for future in futures:
                while True:
                    drain(events, hear)
                    try:
                        results.append(future.result(timeout=0.5))
                        break
                    except TimeoutError:
                        continue
            drain(events, hear)
            return results
        finally:
            self.client.unsubscribe_topic(self.topic)

    def open(self, job: CleanJob, folder: Path) -> ListReader:
        """The list opened from its head (a delimited-text file: the workers read it in byte
        ranges) or its metadata; standard input, which only this process can read, is
        hashed here too."""
        self._planned = plan(job, folder, self.submit)
        if job.spooled:
            self.digest = None
        return self._planned.reader

    def scan(
        self, job: CleanJob, reader: ListReader, rejects: RejectsSink, stack: contextlib.ExitStack
    ) -> tuple[Scanned, ListReader]:
        """The parts read and normalized on the workers, their duplicates marked by the
        narrow shuffle, and what the driver needs of each: one record per domain."""
        assert self._planned is not None
        rows = batch_rows(job.memory_mb, reader.bytes_per_row)
        scan, reader = self._scan(job, self._planned, (rows, rejects), stack, self._folder)
        self._parts, normalized = self._mark_duplicates(scan.batches, scan.rows)
        engine = self._engine
        self._scope = engine.bounces.scope() if engine.bounces else None
        self._infos = self.collect(
            [self.submit(partition_info, part, self._scope) for part in self._parts],
            "duplicates",
            "part",
            lambda _: 1,
        )
        return Scanned(scan.rows, scan.rejected, normalized, scan.reading), reader

    async def domains(self, engine: Engine) -> DomainStats:
        """Each distinct domain of the list answered once (the cache, then the workers), and
        each part's own domains' table built where the part is."""
        infos = self._infos
        domains = list(dict.fromkeys(d for info in infos for d in info.domains))
        answers, stats = await domain_answers(engine.domains, domains, self._resolve)
        self._tables = [
            self.submit(
                partition_table, info.domains, {d: answers[d] for d in info.domains}, self.lists
            )
            for info in infos
        ]
        return stats

    async def addresses(self, engine: Engine) -> CheckStats | None:
        self._found, checks = await check_addresses(self, engine, self._parts, self._tables)
        return checks

    def write(
        self,
        job: CleanJob,
        reader: ListReader,
        facts: dict[str, Any],
        publication: Publication,
        stack: contextlib.ExitStack,
    ) -> Tally:
        """Each part decided where it is, with the answers the driver shipped, and written."""
        flags = self._bounce_flags(self._engine, self._infos, self._scope)
        parts, found = self._parts, self._found
        decided = decide_parts(self.submit, parts, self._tables, flags, found, self._memory)
        if workers_write(job):
            output = Output(job.paths, output_schema(reader.schema), dict(facts))
            tally = write_by_workers(self.submit, decided, output, stack)
            publication.stage(output.staged, job.paths.parquet)
            return tally
        sink = stack.enter_context(open_outputs(job.paths, reader.schema, job.csv_bom, job.split))
        sink.note(facts)
        tally = self._write(decided, sink)
        sink.stage(publication)
        return tally

    def queries(self, engine: Engine) -> int:
        return engine.dns.queries_sent + self.remote_queries

    def remembering(self, plan: HistoryPlan, start: RunStart) -> DaskMemory:
        """The run's history, written by the workers (:mod:`pipeline.stages.dask.history`)."""
        self._memory = DaskMemory(self.submit, plan, start)
        return self._memory

    def _hear_reads(self, futures: list[Any]) -> list[Report]:
        """The ranges' reports, in order; the rows read shown as each range is done."""
        return self.collect(futures, "read", "row", lambda report: int(report.rows))

    def collect(
        self, futures: list[Any], label: str, unit: str, amount: Callable[[Any], int]
    ) -> list[Any]:
        """The results of *futures*, in order, a stage's meter moved by each result's
        *amount* as the tasks finish, in whatever order they do."""
        from distributed import as_completed

        with contextlib.closing(meter(self._engine.progress, None, label, unit)) as bar:
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                bar.update(amount(future.result()))
        return [future.result() for future in futures]

    def _digest(self, source: Path | str, given: str, storage: StorageConfig) -> InputDigest:
        """The input's hash, read by a worker: the driver never reads the list through."""
        future = self.submit(input_digest, source, given, storage)
        try:
            digest: InputDigest = future.result()
        except (OSError, ValueError):
            raise
        except Exception as exc:  # cancelled with the run: it ends without the hash
            return InputDigest("", f"not computed: {type(exc).__name__}")
        return digest

    def _mark_duplicates(self, batches: list[Any], rows: int) -> tuple[list[Any], NormalizeStats]:
        """DUPLICATE (and the whole list's CONSENT) on each part, where it is: only narrow
        (KEY, row) pairs cross the network, shuffled by KEY into a bucket per
        :data:`BUCKET_ROWS` of the list's *rows* (at most one per part), so the tasks grow
        with parts times buckets (:mod:`pipeline.stages.dask.shuffle`)."""
        buckets = max(1, min(len(batches), -(-rows // BUCKET_ROWS)))
        pieces = [self.submit(key_pieces, b, p, buckets) for p, b in enumerate(batches)]
        settled = [
            self.submit(settle_bucket, *(self.submit(piece, ps, k) for ps in pieces))
            for k in range(buckets)
        ]
        marked = [
            self.submit(mark_part, batch, *(self.submit(flags_of, s, p) for s in settled))
            for p, batch in enumerate(batches)
        ]
        counts = self.client.gather([self.submit(counts_of, s) for s in settled])
        return marked, NormalizeStats(sum(c[0] for c in counts), sum(c[1] for c in counts))

    def _scan(
        self,
        job: CleanJob,
        opened: Planned,
        sizes: tuple[int, RejectsSink],
        stack: contextlib.ExitStack,
        folder: Path,
    ) -> tuple[_Scan, ListReader]:
        """Pass 1: the list's parts read by the workers: a delimited-text file in byte ranges,
        Parquet in the parts its footers plan; a list only read in order (packed, an
        archive, a workbook, or a text file the ranges cannot settle) by one worker into
        Parquet shards beside the output, then as those; standard input (or an object-store
        output) read here, as a local run reads it, each batch shipped to the cluster as it
        is read. Returns the reader that read it."""
        rejects = sizes[1]
        reader = opened.reader
        if opened.layout is not None:
            on = Reaching(self.submit, self.client.gather, self._hear_reads, self.client.cancel)
            ranged = read_ranges(on, opened, self.lists)
            if ranged is not None:
                for future in ranged.rejects:
                    rejects.write(future.result())
                return _Scan(ranged.batches, ranged.rows, ranged.rejected), reader
            reader = open_reader(job, folder)  # read in order, as the local engine reads it
        return self._scan_in_order(job, reader, sizes, stack), reader

    def _scan_in_order(
        self,
        job: CleanJob,
        reader: ListReader,
        sizes: tuple[int, RejectsSink],
        stack: contextlib.ExitStack,
    ) -> _Scan:
        rows, rejects = sizes
        planned = reader.parts(rows)
        rejected = 0
        if planned is None and job.upload is None and not job.spooled:
            shards = stack.enter_context(staging_folder(job.paths.parquet, "shards"))
            converted: Converted = self.submit(convert, job, str(shards), rows).result()
            for name in converted.rejects:
                rejects.write(pl.read_parquet(name))
            planned, rejected = converted.parts, converted.rejected
        if planned is not None:
            scan = _Scan([], rows=sum(p.rows for p in planned), rejected=rejected)
            for part in planned:
                scan.batches.append(self.submit(scan_part, part, self.lists))
            return scan
        while True:
            try:
                return self._scan_with(reader, rows, rejects)
            except ReadAgain:
                reader.read_exactly()
                rejects.restart()

    def _scan_with(self, reader: ListReader, rows: int, rejects: RejectsSink) -> _Scan:
        scan = _Scan([])
        batches = reader.batches(rows)
        try:
            while True:
                started = time.perf_counter()
                read = next(batches, None)
                scan.reading += time.perf_counter() - started
                if read is None:
                    return scan
                rejects.write(read.rejects)
                scan.rejected += read.rejects.height
                if not read.frame.height:  # every record of it a reject: nothing to decide
                    continue
                scan.batches.append(
                    self.submit(
                        scan_batch,
                        self.client.scatter(read.frame, hash=False),  # not in the task graph
                        reader.email_column,
                        scan.rows,
                        self.lists,
                    )
                )
                scan.rows += read.frame.height
        except BaseException:
            self.client.cancel(scan.batches)
            raise

    async def _resolve(
        self, work: DomainWork, domains: Sequence[str]
    ) -> tuple[dict[str, DnsAnswer], int]:
        """Resolve on the workers, in chunks; MX hosts judged here, chunk by chunk, and each
        chunk's answers committed to the domain cache as it arrives."""
        if not domains:
            return {}, 0
        before = work.dns.queries_sent + self.remote_queries
        resolver = await work.dns.get()  # checked against the canaries once, here
        futures = [
            self.submit(resolve_domains, chunk, work.config, work.routing.sandbox)
            for chunk in _chunks(domains)
        ]
        hosts = work.cache if work.cache is not None else MemoryHosts()
        answers: dict[str, DnsAnswer] = {}
        from distributed import as_completed

        with contextlib.closing(meter(work.progress, len(domains), "DNS", "domain")) as bar:
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                got, queries = future.result()
                self.remote_queries += queries
                mx = {d: a for d, a in got.items() if a.status is DnsStatus.MX}
                concurrency = work.config.concurrency
                got.update(await judge_exchanges(resolver, mx, hosts, work.routing, concurrency))
                if work.cache is not None:
                    work.cache.put_many(got)
                answers.update(got)
                bar.update(len(got))
        return answers, work.dns.queries_sent + self.remote_queries - before

    def gather(self, futures: list[Any]) -> list[Any]:
        return list(self.client.gather(futures))

    def _bounce_flags(
        self, engine: Engine, infos: list[PartitionInfo], scope: BounceScope | None
    ) -> list[ShippedFlags | None]:
        if engine.bounces is None or scope is None:
            return [None] * len(infos)
        ledger = engine.bounces
        return [
            ShippedFlags(ledger.flags(i.bounce_keys) if i.bounce_keys else {}, scope) for i in infos
        ]

    def _write(self, decided: list[Any], sink: Sink) -> Tally:
        """Each input part's rows, in input order, written as one row group, counted."""
        tally = Tally()
        for index, future in enumerate(decided):
            frame: pl.DataFrame = future.result()
            decided[index] = None  # let the cluster forget it
            sink.write(frame)
            tally.add(frame)
        return tally


def _chunks(domains: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(domains), _CHUNK):
        yield list(domains[start : start + _CHUNK])
