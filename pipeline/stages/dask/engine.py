"""The Dask engine (``--engine dask``): one list cleaned by the workers of a Dask cluster, with
exactly the local engine's answers. The work is the stage functions of
:mod:`pipeline.stages.steps` and the engine's steps, run per input part by
:mod:`pipeline.stages.dask.tasks`; this module plans the run and merges what comes back.

How a run goes:

1. **read and scan**: the driver plans the list's parts from metadata (Parquet footers: whole
   row groups) and the workers read them; a list only read in order (CSV, packed, zip, xlsx)
   is first read by one worker with the local reader into Parquet shards beside the output
   (:func:`~pipeline.stages.dask.tasks.convert`: the local rejects and line numbers), then
   read like Parquet. Only standard input, or a list read in order whose output goes to an
   object store, is read by the driver and shipped batch by batch (with its rejects, which
   workers write like any other's). Each part is normalized on the worker that read it,
   held there narrow until the write reads it again (:func:`~.tasks.held_thin`); each row
   keeps its row number in the list (its part's first row plus its place in it).
2. **duplicates**: only narrow (KEY, row number) pairs cross the network, shuffled by a hash
   of the KEY into buckets; in each bucket the first row in input order of each KEY wins,
   and each part gets back the row numbers of its duplicates (and of its rows whose address
   another row holds back), as the local engine decides (:mod:`.shuffle`).
3. **domains**: each part sends its distinct domains, in domain buckets, to tasks that read
   the shared domain cache (:mod:`.stores`) and resolve what it lacks, committing answers as
   they arrive (:mod:`.domains`); the driver only checks the resolver, once, when some domain
   is not cached. One table of every domain then goes to each worker once.
4. **addresses**: see :mod:`pipeline.stages.dask.checks` (the budget shared out from
   per-domain tallies in the local engine's order; one owner per group of mail providers,
   per remote API, per paid verifier; answers committed by the owners as they arrive).
5. **decide and write**: each part is decided where it is, with the answers' table and the
   bounce ledger's flags (read by the workers), and its output rows (in input order), its
   ``--split`` rows and its rejects are written by that worker as part files beside the
   output, on a shared path or in the object store; an output of one file (Parquet, CSV,
   xlsx) is then made from its parts by one worker (:mod:`pipeline.stages.dask.staging`),
   and everything is staged for the run's commit point. No output row passes through the
   driver.

No task is tied to a worker: the scheduler places each, and a lost worker's tasks run again
elsewhere (:mod:`pipeline.stages.dask.cluster`).

The driver holds no cache or store: the workers open them where the cluster shares them
(:mod:`pipeline.stages.dask.stores`), so what one run learns serves the next, wherever it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import queue
import time
import uuid
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.config import StorageConfig
from pipeline.core.domains.step import DomainStats
from pipeline.core.engine import Engine
from pipeline.core.history.types import RunStart
from pipeline.core.mailboxes.types import CheckStats
from pipeline.core.progress import meter
from pipeline.stages.dask.checks.spread import Found, check_on_cluster
from pipeline.stages.dask.cluster import ATTEMPTS, Cluster, give_up, lost_work
from pipeline.stages.dask.domains import (
    buckets_for,
    counts_of,
    domain_pieces,
    look_up,
    missing_of,
    resolve_bucket,
    whole_table,
)
from pipeline.stages.dask.history.memory import DaskMemory, decide_parts
from pipeline.stages.dask.reading import Cluster as Reaching
from pipeline.stages.dask.reading import Planned, Report, plan, read_ranges
from pipeline.stages.dask.shuffle import (
    Exchange,
    flags_of,
    key_pieces,
    mark_part,
    settle_bucket,
)
from pipeline.stages.dask.shuffle import (
    counts_of as shuffle_counts,
)
from pipeline.stages.dask.staging import (
    Output,
    Staging,
    staging_folder,
    write_rejects,
    write_rows,
)
from pipeline.stages.dask.stores import Stores, run_stores
from pipeline.stages.dask.tasks import (
    Converted,
    convert,
    one,
    part_domains,
    read_rejects,
    same,
    scan_batch,
    scan_part,
    slimmed,
)
from pipeline.stages.history import HistoryPlan, with_calibration
from pipeline.stages.job import CleanJob
from pipeline.stages.provenance import Digest, InputDigest, input_digest
from pipeline.stages.read.csv_source import ReadAgain
from pipeline.stages.read.email_column import Further
from pipeline.stages.read.reader import ListReader
from pipeline.stages.runner import batch_rows, open_reader
from pipeline.stages.sequence import Scanned, run_stages
from pipeline.stages.state.spill import named_failures, spill_folder
from pipeline.stages.summary import (
    NormalizeStats,
    RunSummary,
    Tally,
)
from pipeline.stages.write.outputs import OutputPaths, output_schema
from pipeline.stages.write.publish import Publication

BUCKET_ROWS = 2_000_000  # rows of the list a duplicate bucket settles (about 100 MB)

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
            return await _attempts(job, with_calibration(engine, history), folder, cluster, history)
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
    rejects: list[Any]  # futures of each part's rejected records (a frame each), in input order
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
        self.part_mb = cluster.part_mb  # what a part is sized for, from --memory and the workers
        self.size = len(cluster.workers)
        self.exchange = Exchange(self.submit, self.size)  # narrow tables to buckets and back
        self.lists = engine.config.lists
        self.topic = f"listclean-{uuid.uuid4().hex}"
        self.remote_queries = 0  # DNS queries the workers sent
        self._engine = engine
        self._folder = folder
        self._sent: weakref.WeakSet[Any] = weakref.WeakSet()  # the run's futures still held
        self.digest: Digest | None = self._digest  # the input hashed by a worker
        self._planned: Planned | None = None
        self._parts: list[Any] = []  # futures of the parts' rows (Batch), in input order
        self._tables: list[Any] = []  # each part's domain table: one future, the list's
        self._further = Further()
        self._domains: list[Any] = []  # futures of each part's distinct domains, until asked
        self._found: Found | None = None  # the address checker's answers, if any
        self._rejects: list[Any] = []  # futures of the parts' rejects (frames), in input order
        self._stores: Stores | None = None  # where the workers find the caches and stores
        self._memory: DaskMemory | None = None  # the run's history, when it is recorded

    def submit(self, function: Callable[..., Any], *args: Any, priority: int = 0) -> Any:
        """*function* wherever the scheduler places it (a lost worker's tasks run again on
        another); of the tasks ready on a worker, those of higher *priority* run first."""
        future = self.client.submit(function, *args, pure=False, priority=priority)
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
        self._planned = plan(job, folder, self.submit, self.part_mb(job.memory_mb))
        if job.spooled:
            self.digest = None
        return self._planned.reader

    def files(self, job: CleanJob) -> OutputPaths:
        """The job's files, a dataset's rejects as a folder of parts beside it."""
        return job.paths.in_parts()

    def scan(
        self, job: CleanJob, reader: ListReader, stack: contextlib.ExitStack
    ) -> tuple[Scanned, ListReader]:
        """The parts read and normalized on the workers and their duplicates marked by the
        narrow shuffle; the stores the workers share opened for the run."""
        assert self._planned is not None
        engine = self._engine
        sandbox = engine.routing.sandbox
        opened = run_stores(job, engine.config, sandbox, self.topic, engine.bounces)
        self._stores = stack.enter_context(opened)
        rows = batch_rows(self.part_mb(job.memory_mb), reader.bytes_per_row)
        scan, reader = self._scan(job, self._planned, rows, stack, self._folder)
        self._further = reader.further  # its further address columns, for the domains
        self._rejects = scan.rejects
        self._parts, normalized = self._mark_duplicates(scan.batches, scan.rows)
        marked = [self.submit(one, part) for part in self._parts]
        self.collect(marked, "duplicates", "part", lambda n: int(n))
        return Scanned(scan.rows, scan.rejected, normalized, scan.reading), reader

    @property
    def stores(self) -> Stores:
        assert self._stores is not None
        return self._stores

    async def domains(self, engine: Engine) -> DomainStats:
        """Each distinct domain of the list answered once, by domain buckets on the workers
        (:mod:`pipeline.stages.dask.domains`), into one table of every domain that each
        worker gets once. The driver checks the resolver, once, if a domain is missing."""
        buckets = buckets_for(len(self._parts), self.size)
        pieces = [self.submit(domain_pieces, found, buckets) for found in self._domains]
        self._domains = []
        grid = self.exchange.to_buckets(pieces, buckets)
        offline = engine.offline
        looked = [self.submit(look_up, self.stores, offline, *column) for column in grid]
        del pieces, grid  # each let go by the cluster once the tasks that read it are done
        missing = sum(self.gather([self.submit(missing_of, found) for found in looked]))
        before = engine.dns.queries_sent
        if missing and not offline:
            await engine.dns.get()  # checked against the canaries, once for the run
        # dns.concurrency is the run's: the buckets resolving at once share it, as a local run.
        dns = engine.config.dns
        dns = dataclasses.replace(dns, concurrency=max(1, dns.concurrency // max(1, self.size)))
        known = dict(zip(dns.canaries, engine.dns.canaries, strict=False))  # asked once, here
        config = (self.stores, dns, self.lists, engine.routing.sandbox, offline, known)
        resolved = [self.submit(resolve_bucket, found, *config) for found in looked]
        counts = self.collect(
            [self.submit(counts_of, r) for r in resolved], "DNS", "domain", lambda c: int(c[0])
        )
        whole = self.submit(whole_table, *resolved)
        self._tables = [whole] * len(self._parts)  # one table, sent once to each worker
        remote = sum(c[2] for c in counts)
        self.remote_queries += remote
        distinct, hits = sum(c[0] for c in counts), sum(c[1] for c in counts)
        looked_up = 0 if offline else distinct - hits
        queries = engine.dns.queries_sent - before + remote
        return DomainStats(distinct, hits, looked_up, queries)

    async def addresses(self, engine: Engine) -> CheckStats | None:
        self._found, checks = await check_on_cluster(self, engine, self._parts, self._tables)
        return checks

    def write(
        self,
        job: CleanJob,
        reader: ListReader,
        facts: dict[str, Any],
        publication: Publication,
        stack: contextlib.ExitStack,
    ) -> tuple[Tally, Counter[str]]:
        """Each part decided where it is, with the answers' table and the bounce ledger's
        flags, and written by the workers with its rejects
        (:mod:`pipeline.stages.dask.staging`): no row of the output passes through here; when
        the run is recorded, each part's narrow table is kept for the history."""
        found, further = self._found, reader.further
        parts = len(self._parts)
        answers = found.of_parts(self, parts) if found else [None] * parts
        common = (self.stores, further, self.lists, self._engine.calibration)
        decided = decide_parts(
            self.submit, self._parts, self._tables, answers, common, self._memory
        )
        staging = Staging(self.exchange, self.files(job), stack, publication, self.cancel)
        schema = output_schema(reader.schema, further.fields)
        output = Output(schema, facts, job.split, job.csv_bom)
        tally = write_rows(staging, decided, output)
        return tally, write_rejects(staging, self._rejects, reader.reject_schema)

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
        self,
        futures: list[Any],
        label: str,
        unit: str,
        amount: Callable[[Any], int],
        keep: bool = True,
    ) -> list[Any]:
        """The results of *futures*, in order, a stage's meter moved by each result's
        *amount* as the tasks finish, in whatever order they do; with *keep* False, the
        tasks only waited for (their results stay on the workers)."""
        from distributed import as_completed

        with contextlib.closing(meter(self._engine.progress, None, label, unit)) as bar:
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                if future.status == "error":
                    future.result()  # its error, raised here
                bar.update(amount(future.result()) if keep else 1)
        return [future.result() for future in futures] if keep else []

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
        :data:`BUCKET_ROWS` of the list's *rows*, at most one per part (:mod:`.shuffle`)."""
        buckets = max(1, min(len(batches), -(-rows // BUCKET_ROWS)))
        pieces = [self.submit(key_pieces, b, p, buckets) for p, b in enumerate(batches)]
        further, lists = self._further, self.lists
        self._domains = [self.submit(part_domains, b, further, lists) for b in batches]
        held = [self.submit(slimmed, b) for b in batches]
        batches.clear()  # a part held narrow is let go once its pieces and domains are taken
        exchange = self.exchange
        settled = [self.submit(settle_bucket, *c) for c in exchange.to_buckets(pieces, buckets)]
        del pieces  # each part's pieces let go once the buckets took theirs: held once, not twice
        flags = exchange.to_parts(exchange.picked(settled, len(held), flags_of), len(held))
        marked = [self.submit(mark_part, batch, f) for batch, f in zip(held, flags, strict=True)]
        counts = self.client.gather([self.submit(shuffle_counts, s) for s in settled])
        return marked, NormalizeStats(sum(c[0] for c in counts), sum(c[1] for c in counts))

    def _scan(
        self,
        job: CleanJob,
        opened: Planned,
        rows: int,
        stack: contextlib.ExitStack,
        folder: Path,
    ) -> tuple[_Scan, ListReader]:
        """Pass 1: the list's parts read by the workers: a delimited-text file in byte ranges,
        Parquet in the parts its footers plan; a list only read in order (packed, an
        archive, a workbook, or a text file the ranges cannot settle) by one worker into
        Parquet shards beside the output, then as those; standard input (or an object-store
        output) read here, as a local run reads it, each batch shipped to the cluster as it
        is read (with its rejects). Returns the reader that read it."""
        reader = opened.reader
        if opened.layout is not None:
            on = Reaching(self.submit, self.client.gather, self._hear_reads, self.client.cancel)
            ranged = read_ranges(on, opened, self.lists)
            if ranged is not None:
                titles = [self.submit(same, ranged.titles)] if ranged.titles.height else []
                rejects = titles + ranged.rejects  # the title rows first, as a local run
                scan = _Scan(ranged.batches, rejects, ranged.rows, ranged.rejected)
                return scan, reader
            reader = open_reader(job, folder)  # read in order, as the local engine reads it
        return self._scan_in_order(job, reader, rows, stack), reader

    def _scan_in_order(
        self, job: CleanJob, reader: ListReader, rows: int, stack: contextlib.ExitStack
    ) -> _Scan:
        planned = reader.parts(rows)
        rejects: list[Any] = []
        rejected = 0
        if planned is None and job.upload is None and not job.spooled:
            shards = stack.enter_context(staging_folder(job.paths.parquet, "shards"))
            converted: Converted = self.submit(convert, job, str(shards), rows).result()
            rejects = [self.submit(read_rejects, name) for name in converted.rejects]
            planned, rejected = converted.parts, converted.rejected
        if planned is not None:
            scan = _Scan([], rejects, rows=sum(p.rows for p in planned), rejected=rejected)
            for part in planned:
                scan.batches.append(self.submit(scan_part, part, self.lists, not reader.further))
            return scan
        while True:
            try:
                return self._scan_with(reader, rows)
            except ReadAgain:
                reader.read_exactly()

    def _scan_with(self, reader: ListReader, rows: int) -> _Scan:
        scan = _Scan([], [])
        batches = reader.batches(rows)
        try:
            while True:
                started = time.perf_counter()
                read = next(batches, None)
                scan.reading += time.perf_counter() - started
                if read is None:
                    return scan
                if read.rejects.height:  # data sent, not in the task graph
                    scan.rejects.append(self.client.scatter(read.rejects, hash=False))
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
            self.client.cancel([*scan.batches, *scan.rejects])
            raise

    def gather(self, futures: list[Any]) -> list[Any]:
        return list(self.client.gather(futures))


def drain(events: queue.SimpleQueue[Any], hear: Callable[[list[Any]], None]) -> None:
    """Hand every event that arrived to *hear* (each is ``(time, message)``)."""
    while True:
        try:
            _, message = events.get_nowait()
        except queue.Empty:
            return
        hear(list(message))
