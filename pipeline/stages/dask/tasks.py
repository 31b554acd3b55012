"""What a Dask worker runs for a clean (:mod:`pipeline.stages.dask.engine`).

Each task is a plain function of picklable values: the same stage functions the local runner
calls (:mod:`pipeline.stages.steps`, the engine's DNS and mailbox steps), applied to one input
part (its rows stay on the worker that read them), one chunk of domains or one group of mail
providers; the duplicate shuffle between parts is :mod:`pipeline.stages.dask.shuffle`. A
task opens no cache or store: what the caches know comes with its arguments, and what it
learns goes back in its result, or, for address-level answers, to the driver the moment
each is known (:class:`Forward`), so the driver commits it as a local run would.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from pipeline.core.bounces.step import BounceScope, bounce_keys
from pipeline.core.bounces.types import BounceFlags
from pipeline.core.config import ApiConfig, DnsConfig, ListsConfig, VendorConfig, VerifyConfig
from pipeline.core.domains.dns import DnsAnswer, DnsStatus, SharedResolver, lookup_domains
from pipeline.core.domains.exchanges import MemoryHosts, Routing, judge_exchanges
from pipeline.core.domains.step import domain_table
from pipeline.core.lists import DomainLists, load_lists
from pipeline.core.mailboxes.checkers import Assignment, outbound_works, probe_targets
from pipeline.core.mailboxes.prober import Prober
from pipeline.core.mailboxes.remote import QuotaLedger, RemoteVerifier
from pipeline.core.mailboxes.smtp import SmtpSettings
from pipeline.core.mailboxes.types import Budget, CheckStats, MailboxResult, RemoteAnswer, Target
from pipeline.core.mailboxes.vendors.checker import adapter_for
from pipeline.core.mailboxes.vendors.types import Job, VendorAnswer
from pipeline.core.mailboxes.vendors.verifier import VendorVerifier
from pipeline.stages.base import Batch
from pipeline.stages.dask.shuffle import ROW
from pipeline.stages.dask.sizes import size_of
from pipeline.stages.further import further_bounce_keys
from pipeline.stages.job import CleanJob
from pipeline.stages.read.csv_source import ReadAgain
from pipeline.stages.read.email_column import Further
from pipeline.stages.read.parquet_source import ParquetPart
from pipeline.stages.read.reader import ListReader, PartRead
from pipeline.stages.runner import open_reader
from pipeline.stages.steps import decide_rows, list_domains, normalize, probe_candidates

_NOTHING_HELD = pl.DataFrame()  # decide_rows: CONSENT is already the whole list's


@functools.cache
def _lists(config: ListsConfig) -> DomainLists:
    """The shipped lists, loaded once per worker process."""
    return load_lists(config.extra_disposable, config.extra_free, config.extra_legitimate)


def scan_batch(frame: pl.DataFrame, email_column: str, first_row: int, lists: ListsConfig) -> Batch:
    """A read batch normalized where it is; each row keeps its row number in the list."""
    work = normalize(frame, email_column, _lists(lists))
    rows = pl.int_range(first_row, first_row + frame.height, dtype=pl.UInt64, eager=True)
    return Batch(frame, work.with_columns(rows.alias(ROW)))


def scan_part(read: PartRead, lists: ListsConfig) -> Batch:
    """A part of the list read on this worker (the driver planned it from metadata), then
    as :func:`scan_batch`: no row of it passes through the driver."""
    got = read.read()
    return scan_batch(got.frame, read.email_column, read.first_row, lists)


@dataclass(frozen=True)
class Converted:
    """A list read in order by one worker, as Parquet shards the run's tasks read in parallel."""

    parts: list[PartRead]
    rejects: list[str]  # Parquet files of its rejects, in input order
    rejected: int


def convert(job: CleanJob, staging: str, rows: int) -> Converted:
    """A list only one process can read in order (CSV, packed, an archive, a workbook), read
    on this worker by the local engine's reader (the same rows, rejects and line numbers)
    batch by batch into shards in *staging*: bounded memory, and nothing through the driver."""
    with tempfile.TemporaryDirectory(prefix="listclean-") as spill:
        reader = open_reader(job, Path(spill))
        while True:
            try:
                return _convert(reader, Path(staging), rows)
            except ReadAgain:
                reader.read_exactly()


def _convert(reader: ListReader, staging: Path, rows: int) -> Converted:
    shutil.rmtree(staging, ignore_errors=True)  # what an attempt before this one wrote
    staging.mkdir(parents=True)
    done = Converted([], [], 0)
    first = rejected = 0
    for index, read in enumerate(reader.batches(rows)):
        if read.rejects.height:
            done.rejects.append(str(staging / f"rejects-{index:05d}.parquet"))
            read.rejects.write_parquet(done.rejects[-1])
            rejected += read.rejects.height
        if read.frame.height:
            shard = staging / f"part-{index:05d}.parquet"
            table = read.frame.to_arrow()
            pq.write_table(table, shard)
            part = ParquetPart(shard, (), read.frame.height, table.schema)
            done.parts.append(PartRead(part, first, {}, reader.email_column))
            first += read.frame.height
    return Converted(done.parts, done.rejects, rejected)


def read_rejects(name: str) -> pl.DataFrame:
    """One batch's rejects, as :func:`convert` left them beside its shards."""
    return pl.read_parquet(name)


@dataclass(frozen=True)
class PartitionInfo:
    """What the driver learns of one input part: one record per domain, and bounce keys."""

    domains: list[str]  # resolvable, first seen first
    bounce_keys: list[str]  # the keys the bounce ledger could flag

    def __sizeof__(self) -> int:
        return size_of(self.domains) + size_of(self.bounce_keys) + 64


def partition_info(
    part: Batch, scope: BounceScope | None, further: Further, lists: ListsConfig
) -> PartitionInfo:
    """The part's distinct domains (its further address columns' too) and bounce keys."""
    work, loaded = part.work, _lists(lists)
    domains = list_domains(part.originals, work, further, loaded)
    if scope is None:
        return PartitionInfo(domains, [])
    more = further_bounce_keys(part.originals, further, loaded, scope) if further else []
    return PartitionInfo(domains, list(dict.fromkeys([*bounce_keys(work, scope), *more])))


# Domains per resolving task: at least _CHUNK (answers reach the cache chunk by chunk), and
# about _CHUNKS_A_WORKER tasks a worker, so that a chunk's slowest answers (its tail) are not
# waited for dozens of times over.
_CHUNK = 2_000
_CHUNKS_A_WORKER = 4


def domain_chunks(domains: Sequence[str], workers: int) -> Iterator[list[str]]:
    """*domains* in the chunks the workers resolve, one task each."""
    size = max(_CHUNK, -(-len(domains) // (_CHUNKS_A_WORKER * max(1, workers))))
    for start in range(0, len(domains), size):
        yield list(domains[start : start + size])


def resolve_domains(
    domains: Sequence[str], dns: DnsConfig, sandbox: bool
) -> tuple[dict[str, DnsAnswer], int]:
    """DNS answers for a chunk of one partition's domains (its implicit MX judged here), and
    the queries sent. MX hosts are judged by the driver, so each is asked once per run."""
    return asyncio.run(_resolve(domains, dns, Routing(sandbox=sandbox)))


async def _resolve(
    domains: Sequence[str], dns: DnsConfig, routing: Routing
) -> tuple[dict[str, DnsAnswer], int]:
    shared = SharedResolver(dns, check=False)  # the driver checked the resolver once
    try:
        resolver = await shared.get()
        answers = await lookup_domains(resolver, domains, dns.concurrency)
        implicit = {d: a for d, a in answers.items() if a.status is DnsStatus.IMPLICIT_MX}
        answers.update(
            await judge_exchanges(resolver, implicit, MemoryHosts(), routing, dns.concurrency)
        )
        return answers, shared.queries_sent
    finally:
        await shared.close()


def domains_of(info: PartitionInfo) -> list[str]:
    return info.domains


def bounce_keys_of(info: PartitionInfo) -> list[str]:
    return info.bounce_keys


def union(*domains: list[str]) -> list[str]:
    """Several parts' domains as one list, first seen first, in the parts' order."""
    return list(dict.fromkeys(d for part in domains for d in part))


def partition_table(
    info: PartitionInfo, answers: dict[str, DnsAnswer], lists: ListsConfig
) -> pl.DataFrame:
    """The part's own domains' table, from the answers of the whole list's domains."""
    return domain_table(_lists(lists), info.domains, {d: answers[d] for d in info.domains})


def partition_candidates(part: Batch, table: pl.DataFrame) -> pl.DataFrame:
    return probe_candidates(part.work, table)


@dataclass(frozen=True)
class ShippedFlags:
    """The bounce ledger's flags for one partition's keys, read by the driver."""

    known: dict[str, BounceFlags]
    kept_scope: BounceScope

    def flags(self, keys: Iterable[str]) -> dict[str, BounceFlags]:
        return {k: self.known[k] for k in keys if k in self.known}

    def scope(self) -> BounceScope:
        return self.kept_scope


def decide_partition(
    part: Batch,
    table: pl.DataFrame,
    bounces: ShippedFlags | None,
    answers: pl.DataFrame | None,
    further: Further,
    lists: ListsConfig,
) -> pl.DataFrame:
    """The part's output rows, in input order (with its further address columns' fields).
    Its CONSENT already holds what the whole list holds back
    (:func:`~pipeline.stages.dask.shuffle.mark_part`)."""
    scope = bounces.scope() if bounces is not None else None
    more = (further, _lists(lists))
    return decide_rows(part, table, bounces, scope, answers, _NOTHING_HELD, more)


def same(value: Any) -> Any:
    """*value* as a task's result: held by a worker, computed again if that worker is lost."""
    return value


class Forward:
    """Sends what a task learns to the driver as it is learned (a Dask event topic)."""

    def __init__(self, topic: str, group: int, budget: Budget) -> None:
        from distributed import get_worker

        self._worker = get_worker()
        self._topic = topic
        self._group = group
        self._budget = budget

    def send(self, *message: Any) -> None:
        self._worker.log_event(self._topic, [self._group, *message, self._budget.spent])

    def mailbox(self, key: str, result: MailboxResult) -> None:
        self.send("mailbox", key, result.outcome.value, result.reply, result.at)

    def catch_all(self, domain: str, flag: bool) -> None:
        self.send("catch_all", domain, flag)


@dataclass(frozen=True)
class ProbeOrder:
    """One group of mail providers' targets, owned by one worker, with its share of the budget."""

    targets: list[Target]
    known_catch_all: dict[str, bool]
    limit: int | None  # RCPTs this group may send; None: no limit
    topic: str
    group: int


def probe_group(
    order: ProbeOrder,
    config: VerifyConfig,
    settings: SmtpSettings,
    dns: DnsConfig,
    lists: ListsConfig,
) -> tuple[dict[str, MailboxResult], CheckStats, int]:
    """SMTP answers for one group of providers: one Prober, so per-host pacing, breakers and
    catch-all probes are exact; its answers, what it sent, and its DNS queries."""
    return asyncio.run(_probe(order, config, settings, dns, _lists(lists)))


async def _probe(
    order: ProbeOrder,
    config: VerifyConfig,
    settings: SmtpSettings,
    dns: DnsConfig,
    lists: DomainLists,
) -> tuple[dict[str, MailboxResult], CheckStats, int]:
    budget = Budget(order.limit)
    forward = Forward(order.topic, order.group, budget)
    shared = SharedResolver(dns, check=False)
    try:
        resolver = await shared.get()
        await outbound_works(resolver, dns.canaries, settings)  # port 25 from this worker
        prober = Prober(
            resolver,
            config,
            settings,
            lists,
            budget,
            forward.mailbox,
            dns_concurrency=dns.concurrency,
            on_catch_all=forward.catch_all,
        )
        work = Assignment({}, order.targets, [], order.known_catch_all)
        answers, stats = await probe_targets(work, prober)
        return answers, stats, shared.queries_sent
    finally:
        await shared.close()


@dataclass(frozen=True)
class ApiOrder:
    targets: list[Target]
    limit: int | None
    spent: int  # this window's requests before the run, as the driver's ledger says
    quota: int | None  # the quota the ledger learned, if any
    topic: str
    group: int


def ask_api(
    order: ApiOrder, config: ApiConfig, key: str | None
) -> tuple[dict[str, RemoteAnswer], int]:
    """The remote service's answers for its targets (one client: the quota stays exact)."""
    budget = Budget(order.limit)
    forward = Forward(order.topic, order.group, budget)
    ledger = QuotaLedger(
        spent=lambda *_: order.spent,
        add=lambda api, fp, window, n: forward.send("quota", api, fp, window, n),
        limit=lambda *_: order.quota,
        set_limit=lambda api, fp, window, q: forward.send("limit", api, fp, window, q),
    )

    def remember(address_key: str, answer: RemoteAnswer) -> None:
        verdict = answer.verdict.value if answer.verdict else None
        forward.send(
            "remote",
            address_key,
            verdict,
            answer.score,
            answer.known_bounces,
            answer.suspected_bounces,
        )

    verifier = RemoteVerifier(config, key, ledger, budget, remember)
    answers = asyncio.run(verifier.run(order.targets))
    return answers, verifier.requests


@dataclass(frozen=True)
class VendorOrder:
    """A paid verifier's targets, asked by one worker (one client: credits stay exact), with
    the open jobs the driver's store holds for its key."""

    vendor: str
    targets: list[Target]
    jobs: list[Job]
    limit: int | None  # credits this order may spend; None: no limit
    topic: str
    group: int


@dataclass(frozen=True)
class VendorSent:
    """What a worker's verifier did: its answers and what it spent."""

    answers: dict[str, VendorAnswer]
    requests: int
    credits: int
    stopped: str


class _ForwardedLedger:
    """A worker's ledger: the open jobs the driver read, and every job and answer sent to the
    driver the moment it is known, which commits them to the paid-answer store."""

    def __init__(self, jobs: list[Job], forward: Forward) -> None:
        self._jobs = jobs
        self._forward = forward

    def open_jobs(self) -> list[Job]:
        return list(self._jobs)

    def add_job(self, job: Job) -> None:
        self._forward.send("job", *job_fields(job))

    def close_job(self, job: Job, state: str) -> None:
        self._forward.send("job_closed", state, *job_fields(job))

    def answered(self, key: str, answer: VendorAnswer) -> None:
        a = answer
        self._forward.send("vendor", key, a.reason.value, a.status, a.vendor, a.billed, a.at)


def job_fields(job: Job) -> list[Any]:
    """A job as an event carries it (events are msgpack: plain values only)."""
    targets = [list(t) for t in job.targets]
    return [job.vendor, job.key_fp, job.job_id, targets, job.created_at]


def job_of(fields: list[Any]) -> Job:
    vendor, key_fp, job_id, targets, created_at = fields
    return Job(vendor, key_fp, job_id, tuple((k, a) for k, a in targets), created_at)


def ask_vendor(order: VendorOrder, config: VendorConfig, key: str, base: str) -> VendorSent:
    """The vendor's answers for the order's targets (bulk jobs resumed, never sent twice)."""
    budget = Budget(order.limit)
    forward = Forward(order.topic, order.group, budget)
    ledger = _ForwardedLedger(order.jobs, forward)
    verifier = VendorVerifier(adapter_for(order.vendor), key, config, ledger, budget, base=base)
    answers = asyncio.run(verifier.run(order.targets))
    return VendorSent(answers, verifier.requests, verifier.credits, verifier.stopped)
