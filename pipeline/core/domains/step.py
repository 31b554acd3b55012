"""The domain step: each distinct domain checked once (the cache, then DNS), as a table to join.

    resolvable_domains  the distinct domains of rows whose syntax allows a DNS check
    check_domains       distinct domains -> DNS answer (cache, then DNS), disposable, free, typo
    domain_answers      the answers alone (a partitioned run resolves on its workers)
    attach_domains      join the domain table back onto the rows

It runs with what :class:`DomainWork` holds, not with the whole engine: the resolver, the
cache, the lists, the DNS settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from pipeline.core.addresses.step import with_check
from pipeline.core.config import DnsConfig
from pipeline.core.domains.cache import DomainStore
from pipeline.core.domains.dns import (
    TEMPORARY,
    DnsAnswer,
    DnsStatus,
    Resolver,
    SharedResolver,
    lookup_domains,
    mostly_missing,
)
from pipeline.core.domains.exchanges import MemoryHosts, Routing, judge_exchanges
from pipeline.core.domains.suggest import Suggestion, suggest
from pipeline.core.lists import DomainLists
from pipeline.core.progress import Progress, ProgressFactory, meter
from pipeline.core.schema import FEW_ROWS


@dataclass(frozen=True)
class DomainWork:
    """What the domain step runs with (:attr:`pipeline.core.engine.Engine.domains`)."""

    lists: DomainLists
    dns: SharedResolver  # the run's (or the service's) one resolver, made on first use
    config: DnsConfig
    cache: DomainStore | None = None
    offline: bool = False
    progress: ProgressFactory | None = None
    routing: Routing = field(default_factory=Routing)
    # Answers another process of the run already got from the resolver (the canaries of its
    # health check): taken as fresh answers, so that no question is asked twice.
    known: Mapping[str, DnsAnswer] = field(default_factory=dict)


@dataclass(frozen=True)
class DomainStats:
    distinct_domains: int
    cache_hits: int
    looked_up: int
    dns_queries: int  # sent for this step, the resolver's health check included


def resolvable_domains(annotated: pl.DataFrame) -> list[str]:
    """Distinct domains of the rows whose syntax allows a DNS check, in first-seen order."""
    checked = with_check(annotated).get_column("_CHECK")
    if checked.len() <= FEW_ROWS:
        return list(dict.fromkeys(d for d in checked.to_list() if d is not None))
    return checked.drop_nulls().unique(maintain_order=True).to_list()


async def check_domains(
    work: DomainWork, domains: Sequence[str]
) -> tuple[pl.DataFrame, DomainStats]:
    """One answer per distinct domain: cache first, then DNS for the rest."""
    answers, stats = await domain_answers(work, domains)
    return domain_table(work.lists, domains, answers), stats


# (work, domains not in the cache) -> (their answers, cached as they arrive; queries sent)
Resolve = Callable[[DomainWork, Sequence[str]], Awaitable[tuple[dict[str, DnsAnswer], int]]]


async def domain_answers(
    work: DomainWork, domains: Sequence[str], resolve: Resolve | None = None
) -> tuple[dict[str, DnsAnswer], DomainStats]:
    """The DNS answer of each domain: the cache's, else *resolve*'s (this process's resolver
    by default; a partitioned run resolves on its workers)."""
    if work.offline:
        answers = {d: DnsAnswer(DnsStatus.OFFLINE) for d in domains}
        hits, queries = 0, 0
    else:
        answers = work.cache.get_many(domains) if work.cache else {}
        hits = len(answers)
        missing = [d for d in domains if d not in answers]
        fresh, queries = await (resolve or _resolve)(work, missing)
        answers.update(fresh)
    stats = DomainStats(
        distinct_domains=len(domains),
        cache_hits=hits,
        looked_up=len(domains) - hits if not work.offline else 0,
        dns_queries=queries,
    )
    return answers, stats


async def _resolve(work: DomainWork, domains: Sequence[str]) -> tuple[dict[str, DnsAnswer], int]:
    if not domains:
        return {}, 0  # nothing to ask: do not even check the resolver
    sent_before = work.dns.queries_sent
    resolver = await work.dns.get()
    if work.dns.watched and not work.dns.trusted:
        return _untrusted(domains), 0
    bar = meter(work.progress, len(domains), "DNS", "domain")
    # A watched resolver (the service's) is not trusted to fill the cache as it answers: what
    # it says is believed (and kept) only after the whole round, when it can be judged.
    keeper = _AnswerKeeper(work, resolver, bar, keep=not work.dns.watched)
    try:
        for domain in domains:
            if domain in work.known:
                keeper.put(domain, work.known[domain])
        asked = [d for d in domains if d not in work.known]
        await lookup_domains(resolver, asked, work.config.concurrency, keeper.put)
        answers = await keeper.finish()
    finally:
        keeper.stop()
        bar.close()
    # A watched resolver that says most new domains are missing may have turned bad: it must
    # pass its canaries again before anything it said is believed.
    if work.dns.watched and mostly_missing(answers) and not await work.dns.recheck():
        answers = _untrusted(domains)
    elif work.dns.watched and work.cache is not None:
        work.cache.put_many(answers)
    return answers, work.dns.queries_sent - sent_before


def _untrusted(domains: Sequence[str]) -> dict[str, DnsAnswer]:
    return dict.fromkeys(domains, DnsAnswer(DnsStatus.UNTRUSTED))


class _AnswerKeeper:
    """Judges each domain's exchanges and commits the answers to the domain cache in small
    groups as they arrive (at most :data:`_GROUP` answers or :data:`_SECONDS` apart), while the
    lookups go on: a run killed in the middle of a long lookup round keeps all but the last
    group."""

    _GROUP = 500
    _SECONDS = 1.0

    def __init__(
        self, work: DomainWork, resolver: Resolver, bar: Progress, *, keep: bool = True
    ) -> None:
        self._work = work
        self._keep_in_cache = keep
        self._resolver = resolver
        self._bar = bar
        self._hosts = work.cache if work.cache is not None else MemoryHosts()
        self._queue: asyncio.Queue[tuple[str, DnsAnswer] | None] = asyncio.Queue()
        self._answers: dict[str, DnsAnswer] = {}
        self._task = asyncio.ensure_future(self._consume())

    def put(self, domain: str, answer: DnsAnswer) -> None:
        self._queue.put_nowait((domain, answer))

    async def finish(self) -> dict[str, DnsAnswer]:
        self._queue.put_nowait(None)
        await self._task
        return self._answers

    def stop(self) -> None:
        self._task.cancel()

    async def _consume(self) -> None:
        done = False
        while not done:
            group, done = await self._group()
            if group:
                await self._keep(group)

    async def _group(self) -> tuple[dict[str, DnsAnswer], bool]:
        """The next group of answers, and whether the lookups are over."""
        group: dict[str, DnsAnswer] = {}
        deadline = asyncio.get_running_loop().time() + self._SECONDS
        while len(group) < self._GROUP:
            wait = deadline - asyncio.get_running_loop().time()
            try:
                item = await asyncio.wait_for(self._queue.get(), max(wait, 0.0) if group else None)
            except TimeoutError:
                return group, False
            if item is None:
                return group, True
            group[item[0]] = item[1]
        return group, False

    async def _keep(self, group: dict[str, DnsAnswer]) -> None:
        work = self._work
        concurrency = work.config.concurrency
        judged = await judge_exchanges(
            self._resolver, group, self._hosts, work.routing, concurrency
        )
        if work.cache is not None and self._keep_in_cache:
            work.cache.put_many(judged)
        self._answers.update(judged)
        self._bar.update(len(judged))


def domain_table(
    lists: DomainLists, domains: Sequence[str], answers: Mapping[str, DnsAnswer]
) -> pl.DataFrame:
    """One row per domain: its answer, whether it is disposable or free, a suggested fix and
    why it was suggested."""
    statuses = [answers[d].status for d in domains]
    suggested = [_suggestion(lists, d, answers[d]) for d in domains]
    return pl.DataFrame(
        {
            "DOMAIN": list(domains),
            "DNS_STATUS": [s.value for s in statuses],
            "MX": [answers[d].mx for d in domains],
            "DISPOSABLE": [lists.is_disposable(d) for d in domains],
            "FREE_PROVIDER": [lists.is_free_provider(d) for d in domains],
            "SUGGESTED_DOMAIN": [s.domain for s in suggested],
            "SUGGESTED_WHY": [s.why for s in suggested],
        },
        schema={
            "DOMAIN": pl.String,
            "DNS_STATUS": pl.String,
            "MX": pl.String,
            "DISPOSABLE": pl.Boolean,
            "FREE_PROVIDER": pl.Boolean,
            "SUGGESTED_DOMAIN": pl.String,
            "SUGGESTED_WHY": pl.String,
        },
    )


def _suggestion(lists: DomainLists, domain: str, answer: DnsAnswer) -> Suggestion:
    return suggest(
        domain,
        has_working_mx=answer.status is DnsStatus.MX,
        lists=lists,
        mx=answer.mx,
        dns_answered=answer.status not in _UNANSWERED,
    )


_UNANSWERED = frozenset({DnsStatus.OFFLINE, *TEMPORARY})


def attach_domains(annotated: pl.DataFrame, domain_table: pl.DataFrame) -> pl.DataFrame:
    """Join each row's domain answer; rows whose domain was not checked get nulls."""
    # Joined on _CHECK, which is null for rows whose domain was not checked: no answer for them.
    # The table's DOMAIN is its key, coalesced into _CHECK (no rename: that is a pass of its own).
    return with_check(annotated).join(
        domain_table,
        left_on="_CHECK",
        right_on="DOMAIN",
        how="left",
        maintain_order="left",
        nulls_equal=False,
    )
