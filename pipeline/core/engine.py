"""The verification engine: the steps both fronts (batch and service) run, written once.

Every step is a function over a polars frame plus injected resources (:class:`Engine`), so the
batch stages, the ``verify`` command and the HTTP service share one implementation of each
rule, and a distributed runner can call the same functions per partition.

    annotate_addresses  raw addresses -> EMAIL, LOCAL, DOMAIN, KEY, SYNTAX, ROLE, DUPLICATE
    check_domains       distinct domains -> DNS answer (cache, then DNS), disposable, typo
    attach_domains      join the domain table back onto the rows
    check_addresses     the mailbox answers (SMTP or a remote API) and the bounce ledger's flags
    decide              VERDICT, SCORE, REASON and the other spec fields (:mod:`.decide`)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import polars as pl

from pipeline.core.address import Syntax, normalize_column, normalize_domain
from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.bounces.types import BounceFlags
from pipeline.core.config import Config
from pipeline.core.decide import decide, with_address_columns
from pipeline.core.dns import (
    TEMPORARY,
    DnsAnswer,
    DnsStatus,
    Resolver,
    SharedResolver,
    lookup_domains,
    mostly_missing,
)
from pipeline.core.domain_cache import DomainCache
from pipeline.core.exchanges import MemoryHosts, Routing, judge_exchanges
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.checkers import AddressChecker
from pipeline.core.mailboxes.types import CheckStats
from pipeline.core.progress import Progress, ProgressFactory, meter
from pipeline.core.repairs import repair_column
from pipeline.core.schema import SPEC_COLUMNS, keyed_schema
from pipeline.core.suggest import suggest_domain

# Rows whose domain is a DNS name worth resolving. An address can be invalid for its local
# part alone (john..doe@gmail.com): its domain still gets its own DOMAIN_VERDICT.
_RESOLVABLE = (pl.col("DOMAIN") != "") & (pl.col("SYNTAX") != Syntax.DOMAIN_LITERAL.value)
_CHECKED_DOMAIN = pl.when(_RESOLVABLE).then(pl.col("DOMAIN"))


@dataclass(frozen=True)
class Engine:
    """The resources the engine's steps run with; built by :mod:`pipeline.core.assembly`."""

    config: Config
    lists: DomainLists
    dns: SharedResolver  # the run's (or the service's) one resolver, made on first use
    cache: DomainCache | None = None
    offline: bool = False
    progress: ProgressFactory | None = None  # (total, label, unit) -> a progress meter
    # Address-level checks (SMTP or a remote API); None: decide at the domain level.
    checker: AddressChecker | None = None
    # The bounce ledger; None: no bounce history (both bounce flags false).
    bounces: BounceLedger | None = None
    # Which addresses mail can reach: implicit MX records must lead somewhere routable.
    routing: Routing = field(default_factory=Routing)


@dataclass(frozen=True)
class DomainStats:
    distinct_domains: int
    cache_hits: int
    looked_up: int
    dns_queries: int  # sent for this step, the resolver's health check included


def classify_addresses(emails: pl.Series, lists: DomainLists) -> pl.DataFrame:
    """Normalize and classify each address (EMAIL, LOCAL, DOMAIN, KEY, SYNTAX, ROLE), and what
    an invalid cell holds (REPAIR, REPAIRED: :mod:`pipeline.core.repairs`)."""
    return _with_repairs(emails, normalize_column(emails, then=_classified(lists)))


def annotate_addresses(emails: pl.Series, lists: DomainLists) -> pl.DataFrame:
    """:func:`classify_addresses`, and DUPLICATE: repeats of an earlier row's address among
    *emails* (a whole list in one frame; a list read in batches marks them out of core)."""
    then = {
        **_classified(lists),
        "DUPLICATE": (pl.col("KEY") != "") & ~pl.col("KEY").is_first_distinct(),
    }
    return _with_repairs(emails, normalize_column(emails, then=then))


def _classified(lists: DomainLists) -> dict[str, pl.Expr]:
    return {
        "ROLE": (pl.col("LOCAL") != "") & lists.role_expr(pl.col("LOCAL")),
        "_CHECK": _CHECKED_DOMAIN,
    }


def _with_repairs(emails: pl.Series, parsed: pl.DataFrame) -> pl.DataFrame:
    if not (parsed.get_column("SYNTAX") == Syntax.INVALID.value).any():
        return parsed.hstack(_NO_REPAIRS(parsed.height))  # the usual batch: nothing to mend
    return parsed.hstack(repair_column(emails, parsed.get_column("SYNTAX")).get_columns())


def _NO_REPAIRS(rows: int) -> list[pl.Series]:
    return [pl.Series(c, [""] * rows, dtype=pl.String) for c in ("REPAIR", "REPAIRED")]


def _with_check(rows: pl.DataFrame) -> pl.DataFrame:
    """*rows* with ``_CHECK``: the domain whose DNS answer the row takes, null when none."""
    return rows if "_CHECK" in rows.columns else rows.with_columns(_CHECK=_CHECKED_DOMAIN)


def annotate_domains(values: Sequence[str]) -> pl.DataFrame:
    """Rows of domain mode (``verify --domain``, ``?domain=``): a domain and no local part."""
    checked = [normalize_domain(v) for v in values]
    n = len(values)
    return pl.DataFrame(
        {
            "EMAIL": [""] * n,
            "LOCAL": [""] * n,
            "DOMAIN": [domain for domain, _ in checked],
            "KEY": [""] * n,
            "SYNTAX": [(Syntax.OK if domain else Syntax.INVALID).value for domain, _ in checked],
            "SYNTAX_DETAIL": [detail for _, detail in checked],
            "ROLE": [False] * n,
            "DUPLICATE": [False] * n,
            "REPAIR": [""] * n,
            "REPAIRED": [""] * n,
            "_CHECK": [domain or None for domain, _ in checked],
        },
        schema={
            "EMAIL": pl.String,
            "LOCAL": pl.String,
            "DOMAIN": pl.String,
            "KEY": pl.String,
            "SYNTAX": pl.String,
            "SYNTAX_DETAIL": pl.String,
            "ROLE": pl.Boolean,
            "DUPLICATE": pl.Boolean,
            "REPAIR": pl.String,
            "REPAIRED": pl.String,
            "_CHECK": pl.String,
        },
    )


def resolvable_domains(annotated: pl.DataFrame) -> list[str]:
    """Distinct domains of the rows whose syntax allows a DNS check, in first-seen order."""
    checked = _with_check(annotated).get_column("_CHECK")
    return checked.drop_nulls().unique(maintain_order=True).to_list()


async def check_domains(engine: Engine, domains: Sequence[str]) -> tuple[pl.DataFrame, DomainStats]:
    """One answer per distinct domain: cache first, then DNS for the rest."""
    answers, stats = await domain_answers(engine, domains)
    return domain_table(engine.lists, domains, answers), stats


# (engine, domains not in the cache) -> (their answers, cached as they arrive; queries sent)
Resolve = Callable[["Engine", Sequence[str]], Awaitable[tuple[dict[str, DnsAnswer], int]]]


async def domain_answers(
    engine: Engine, domains: Sequence[str], resolve: Resolve | None = None
) -> tuple[dict[str, DnsAnswer], DomainStats]:
    """The DNS answer of each domain: the cache's, else *resolve*'s (this process's resolver
    by default; a partitioned run resolves on its workers)."""
    if engine.offline:
        answers = {d: DnsAnswer(DnsStatus.OFFLINE) for d in domains}
        hits, queries = 0, 0
    else:
        answers = engine.cache.get_many(domains) if engine.cache else {}
        hits = len(answers)
        missing = [d for d in domains if d not in answers]
        fresh, queries = await (resolve or _resolve)(engine, missing)
        answers.update(fresh)
    stats = DomainStats(
        distinct_domains=len(domains),
        cache_hits=hits,
        looked_up=len(domains) - hits if not engine.offline else 0,
        dns_queries=queries,
    )
    return answers, stats


async def _resolve(engine: Engine, domains: Sequence[str]) -> tuple[dict[str, DnsAnswer], int]:
    if not domains:
        return {}, 0  # nothing to ask: do not even check the resolver
    sent_before = engine.dns.queries_sent
    resolver = await engine.dns.get()
    if engine.dns.watched and not engine.dns.trusted:
        return _untrusted(domains), 0
    bar = meter(engine.progress, len(domains), "DNS", "domain")
    # A watched resolver (the service's) is not trusted to fill the cache as it answers: what
    # it says is believed (and kept) only after the whole round, when it can be judged.
    keeper = _AnswerKeeper(engine, resolver, bar, keep=not engine.dns.watched)
    try:
        await lookup_domains(resolver, domains, engine.config.dns.concurrency, keeper.put)
        answers = await keeper.finish()
    finally:
        keeper.stop()
        bar.close()
    # A watched resolver that says most new domains are missing may have turned bad: it must
    # pass its canaries again before anything it said is believed.
    if engine.dns.watched and mostly_missing(answers) and not await engine.dns.recheck():
        answers = _untrusted(domains)
    elif engine.dns.watched and engine.cache is not None:
        engine.cache.put_many(answers)
    return answers, engine.dns.queries_sent - sent_before


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
        self, engine: Engine, resolver: Resolver, bar: Progress, *, keep: bool = True
    ) -> None:
        self._engine = engine
        self._keep_in_cache = keep
        self._resolver = resolver
        self._bar = bar
        self._hosts = engine.cache if engine.cache is not None else MemoryHosts()
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
        engine = self._engine
        concurrency = engine.config.dns.concurrency
        judged = await judge_exchanges(
            self._resolver, group, self._hosts, engine.routing, concurrency
        )
        if engine.cache is not None and self._keep_in_cache:
            engine.cache.put_many(judged)
        self._answers.update(judged)
        self._bar.update(len(judged))


def domain_table(
    lists: DomainLists, domains: Sequence[str], answers: Mapping[str, DnsAnswer]
) -> pl.DataFrame:
    """One row per domain: its answer, whether it is disposable or free, a suggested fix."""
    statuses = [answers[d].status for d in domains]
    return pl.DataFrame(
        {
            "DOMAIN": list(domains),
            "DNS_STATUS": [s.value for s in statuses],
            "MX": [answers[d].mx for d in domains],
            "DISPOSABLE": [lists.is_disposable(d) for d in domains],
            "FREE_PROVIDER": [lists.is_free_provider(d) for d in domains],
            "SUGGESTED_DOMAIN": [_suggestion(lists, d, answers[d]) for d in domains],
        },
        schema={
            "DOMAIN": pl.String,
            "DNS_STATUS": pl.String,
            "MX": pl.String,
            "DISPOSABLE": pl.Boolean,
            "FREE_PROVIDER": pl.Boolean,
            "SUGGESTED_DOMAIN": pl.String,
        },
    )


def _suggestion(lists: DomainLists, domain: str, answer: DnsAnswer) -> str:
    return suggest_domain(
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
    return _with_check(annotated).join(
        domain_table.rename({"DOMAIN": "_CHECK"}),
        on="_CHECK",
        how="left",
        maintain_order="left",
        nulls_equal=False,
    )


async def check_addresses(
    engine: Engine, rows: pl.DataFrame
) -> tuple[pl.DataFrame, CheckStats | None]:
    """Add the address-level answers (bounce ledger, SMTP or a remote API), null without them,
    and what the checker sent (None: no checker ran)."""
    ledger = engine.bounces
    if ledger is not None and ledger.remote:  # round trips to a database leave the loop
        rows = await asyncio.to_thread(attach_bounces, ledger, rows)
    else:  # a local file answers in microseconds, and its one connection stays on the loop
        rows = attach_bounces(ledger, rows)
    if engine.checker is None or engine.offline:
        return with_address_columns(rows), None
    checked, stats = await engine.checker.check(rows, engine.dns, engine.lists)
    return with_address_columns(checked), stats


_LEDGER_SCOPE_FROM = 10_000  # rows; see attach_bounces


BounceScope = tuple[set[str], set[str]]  # keys with events, domains whose mail bounces


class BounceSource(Protocol):
    """Where bounce flags come from: the ledger, or the flags a partitioned run's driver read
    from it for one partition."""

    def flags(self, keys: Iterable[str]) -> dict[str, BounceFlags]: ...
    def scope(self) -> BounceScope: ...


def attach_bounces(
    ledger: BounceSource | None, rows: pl.DataFrame, scope: BounceScope | None = None
) -> pl.DataFrame:
    """LEDGER_KNOWN / LEDGER_SUSPECTED per row from the ledger (one query for all keys).
    *scope* is the ledger's (:meth:`BounceLedger.scope`), when the caller has read it once for
    many batches."""
    if ledger is None:
        return rows
    if scope is None and rows.height > _LEDGER_SCOPE_FROM:
        # A big list: ask only about the keys the ledger could flag. Reading the ledger's scope
        # costs a scan of it, so small batches (the service) ask about their keys directly.
        scope = ledger.scope()
    wanted = bounce_keys(rows, scope)
    return join_bounce_flags(rows, ledger.flags(wanted) if wanted else {})


def bounce_keys(rows: pl.DataFrame, scope: BounceScope | None) -> list[str]:
    """The distinct keys of *rows* the ledger could flag (all of them without a scope)."""
    wanted = rows.filter(pl.col("KEY") != "")
    if scope is not None:
        with_events, dead_domains = scope
        wanted = wanted.filter(
            pl.col("KEY").is_in(list(with_events)) | pl.col("DOMAIN").is_in(list(dead_domains))
        )
    return wanted.get_column("KEY").unique().to_list() if wanted.height else []


def join_bounce_flags(rows: pl.DataFrame, flags: Mapping[str, BounceFlags]) -> pl.DataFrame:
    if not flags:
        return rows
    table = pl.DataFrame(
        {
            "KEY": list(flags),
            "LEDGER_KNOWN": [f.known for f in flags.values()],
            "LEDGER_SUSPECTED": [f.suspected for f in flags.values()],
            "LEDGER_LAST_HARD_AT": [f.last_hard_at for f in flags.values()],
            "LEDGER_DELIVERED": [f.delivered for f in flags.values()],
        },
        schema=keyed_schema(
            "LEDGER_KNOWN", "LEDGER_SUSPECTED", "LEDGER_LAST_HARD_AT", "LEDGER_DELIVERED"
        ),
    )
    return rows.join(table, on="KEY", how="left", maintain_order="left")


async def verify_many(
    engine: Engine, values: Sequence[str], *, domain_mode: bool = False
) -> list[dict[str, object]]:
    """The spec's result objects (plus REASON), one per address (or domain in domain mode)."""
    decided = await _verified(engine, values, domain_mode)
    return decided.select(*SPEC_COLUMNS, "REASON").to_dicts()


async def verify_many_json(
    engine: Engine, values: Sequence[str], *, domain_mode: bool = False
) -> list[str]:
    """:func:`verify_many`'s objects as JSON texts, encoded by polars (for the service: a
    third of the cost of Python objects encoded one by one)."""
    decided = await _verified(engine, values, domain_mode)
    encoded = pl.struct(*SPEC_COLUMNS, "REASON").struct.json_encode()
    return decided.select(encoded).to_series().to_list()


async def _verified(engine: Engine, values: Sequence[str], domain_mode: bool) -> pl.DataFrame:
    if domain_mode:
        annotated = annotate_domains(values)
    else:
        annotated = annotate_addresses(pl.Series(values, dtype=pl.String), engine.lists)
    table, _stats = await check_domains(engine, resolvable_domains(annotated))
    rows = attach_domains(annotated, table)
    if not domain_mode:
        rows, _sent = await check_addresses(engine, rows)
    return decide(rows, domain_mode=domain_mode)


async def verify_once(
    engine: Engine, value: str, *, domain_mode: bool = False
) -> dict[str, object]:
    """:func:`verify_many` for a single value, as a whole event loop's work: the engine's
    resolver is closed before the loop ends."""
    try:
        return (await verify_many(engine, [value], domain_mode=domain_mode))[0]
    finally:
        await engine.dns.close()
