"""The domain stage on a cluster: each distinct domain answered once, by domain buckets on the
workers, from and into the domain cache the cluster shares (:mod:`.stores`). The driver never
reads the cache and never sees a domain.

1. :func:`domain_pieces`, on each part's worker: the part's distinct resolvable domains (found
   at its read, :func:`~pipeline.stages.dask.tasks.part_domains`), split
   into buckets by the CRC-32 the shared cache buckets its domains by
   (:func:`~pipeline.core.db.buckets.bucket_of`), so a domain bucket reads only its own
   buckets of the cache.
2. :func:`look_up`, one task per bucket: the bucket's domains, and those the cache answers;
   the driver learns how many it does not (a number per bucket). When any is missing, the
   driver checks the resolver against the canaries, once for the run.
3. :func:`resolve_bucket`: the missing domains asked by the domain step the local engine runs
   (:func:`~pipeline.core.domains.step.domain_answers`), on the worker, with the shared cache:
   answers are judged (MX hosts looked up once per bucket, their answers shared through the
   cache too) and committed in small groups as they arrive, so a killed run keeps what it
   learned. The bucket's table of domains (:func:`~pipeline.core.domains.step.domain_table`)
   stays on the worker.
4. :func:`whole_table`: the buckets' tables made into one table of every
   domain of the list, which each worker gets once and every part's decide joins. (A table of
   each part's own domains would repeat the domains the parts share: parts times domains,
   held until the write.)
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import polars as pl

from pipeline.core.config import DnsConfig, ListsConfig
from pipeline.core.db.buckets import BUCKETS, with_buckets
from pipeline.core.domains.dns import DnsAnswer, SharedResolver
from pipeline.core.domains.exchanges import Routing
from pipeline.core.domains.step import DomainWork, domain_answers, domain_table
from pipeline.stages.dask.shuffle import pieces_of
from pipeline.stages.dask.sizes import size_of
from pipeline.stages.dask.stores import Stores, domain_store
from pipeline.stages.dask.tasks import worker_lists


def buckets_for(parts: int, workers: int) -> int:
    """Buckets of a shuffle by a stable hash (domains, keys) for a list of *parts* parts on
    *workers* workers: a power of two (so that each covers whole buckets of the shared
    tables), about four a worker (enough to keep every worker busy and to even out the
    buckets' sizes) but no more than the parts, at most the tables' buckets."""
    buckets = 1
    while buckets < min(parts, 4 * max(1, workers), BUCKETS):
        buckets *= 2
    return buckets


def domain_pieces(found: pl.Series, buckets: int) -> list[pl.DataFrame]:
    """A part's distinct resolvable domains (:func:`~.tasks.part_domains`), one frame per
    domain bucket."""
    bucketed = with_buckets(found.rename("DOMAIN").to_frame(), "DOMAIN")
    bucket = bucketed.get_column("_bucket") % buckets
    return [bucketed.filter(bucket == b).select("DOMAIN") for b in range(buckets)]


@dataclass(frozen=True)
class Looked:
    """A domain bucket's domains, what the cache answered, and what it did not."""

    domains: list[str]
    cached: dict[str, DnsAnswer]
    missing: list[str]

    def __sizeof__(self) -> int:
        return size_of(self.domains) + 200 * len(self.cached) + size_of(self.missing)


def look_up(stores: Stores, offline: bool, *groups: list[pl.DataFrame]) -> Looked:
    """The bucket's domains (sorted, each once) and the cache's answers for them (*groups*:
    the bucket's pieces, :func:`~.shuffle.Exchange.to_buckets`)."""
    pieces = pieces_of(groups)
    domains = sorted(set().union(*(p.get_column("DOMAIN").to_list() for p in pieces)))
    if offline:
        return Looked(domains, {}, domains)
    cached = domain_store(stores).get_many(domains)
    return Looked(domains, cached, [d for d in domains if d not in cached])


def missing_of(looked: Looked) -> int:
    return len(looked.missing)


@dataclass(frozen=True)
class Resolved:
    """A domain bucket's table of domains, and how it was answered."""

    table: pl.DataFrame
    domains: int
    hits: int
    queries: int

    def __sizeof__(self) -> int:
        return size_of(self.table) + 64


def resolve_bucket(
    looked: Looked,
    stores: Stores,
    dns: DnsConfig,
    lists: ListsConfig,
    sandbox: bool,
    offline: bool,
    known: dict[str, DnsAnswer],
) -> Resolved:
    """The missing domains asked (the driver checked the resolver once for the run: its
    canaries' answers, *known*, are not asked again), and the bucket's table of domains."""
    domain_lists = worker_lists(lists)
    answers = dict(looked.cached)
    hits, queries = len(looked.cached), 0
    if looked.missing:
        resolver = SharedResolver(dns, check=False)
        cache = None if offline else domain_store(stores)
        work = DomainWork(
            domain_lists, resolver, dns, cache, offline, None, Routing(sandbox), known
        )
        fresh, stats = asyncio.run(_answers(work, looked.missing))
        answers.update(fresh)
        hits, queries = hits + stats[0], stats[1]
    table = domain_table(domain_lists, looked.domains, answers)
    return Resolved(table, len(looked.domains), hits, queries)


async def _answers(
    work: DomainWork, domains: list[str]
) -> tuple[dict[str, DnsAnswer], tuple[int, int]]:
    try:
        answers, stats = await domain_answers(work, domains)
        return answers, (stats.cache_hits, work.dns.queries_sent)
    finally:
        await work.dns.close()


def counts_of(resolved: Resolved) -> tuple[int, int, int]:
    """(domains, cache hits, DNS queries) of a bucket: what the driver needs of it."""
    return resolved.domains, resolved.hits, resolved.queries


def whole_table(*resolved: Resolved) -> pl.DataFrame:
    """The list's table of domains, from every bucket's."""
    return pl.concat([r.table for r in resolved], how="vertical")
