"""The driver's side of the address checks on a cluster: it plans from tallies, and holds no
address.

The candidates stay on the workers, in key buckets (:mod:`.plan`); the driver gets one row
per domain, ranked by the local engine's rule, and shares the budget out over it with the
local engine's :func:`~pipeline.core.mailboxes.step.cut` (and, for SMTP, gives each reached
domain its :func:`~pipeline.core.mailboxes.step.allowances`): a Dask run reaches the
addresses a local run reaches, the never answered first, then the answers due again
(:func:`_runs`). Where a domain is reached only in part, the workers tell the
row it is reached up to. Then each owner (:mod:`.owners`) gets its targets straight from the
buckets: one per group of mail providers for SMTP, one for a remote API, one per paid
verifier. The driver hears what each owner spends (events), for the meter and the work
directory; it commits nothing, the owners do.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import polars as pl

from pipeline.core.config import ApiConfig, ListsConfig
from pipeline.core.engine import Engine
from pipeline.core.mailboxes.checkers import (
    AddressChecker,
    ApiChecker,
    SmtpChecker,
    outbound_hosts,
)
from pipeline.core.mailboxes.pacing import pace_of, provider_of
from pipeline.core.mailboxes.remote import QuotaLedger, RemoteVerifier, key_fingerprint
from pipeline.core.mailboxes.step import allowances, cut
from pipeline.core.mailboxes.types import Budget, CheckStats, Plan, Refresh, combined, refresh_of
from pipeline.core.mailboxes.vendors.checker import (
    RoutedChecker,
    VendorChecker,
    short_of_balance,
)
from pipeline.core.progress import Progress
from pipeline.stages.dask.checks.owners import (
    ApiOrder,
    SmtpOrder,
    VendorOrder,
    ask_api,
    ask_vendor,
    probe_group,
)
from pipeline.stages.dask.checks.plan import (
    RANK,
    Method,
    Reach,
    Routes,
    answer_table,
    answers_of_group,
    candidate_pieces,
    first_due,
    first_rows,
    fixed,
    key_pieces_of,
    owned_piece,
    part_answers,
    rank,
    settle,
    tally,
    targets_of,
)
from pipeline.stages.dask.domains import buckets_for
from pipeline.stages.dask.shuffle import Exchange, Grid, share
from pipeline.stages.dask.stores import Stores, mailbox_store


class Spreader(Protocol):
    """What the address checks need of the run's place on the cluster (the Dask engine's)."""

    size: int  # workers
    topic: str  # where owners send what they spend
    lists: ListsConfig  # for the workers' own domain lists
    exchange: Exchange  # narrow tables to buckets and back

    @property
    def stores(self) -> Stores: ...

    def submit(self, function: Callable[..., Any], *args: Any) -> Any: ...
    def gather(self, futures: list[Any]) -> list[Any]: ...
    def wait(self, futures: Sequence[Any], hear: Callable[[list[Any]], None]) -> list[Any]: ...


@dataclass(frozen=True)
class Found:
    """The run's answers, in key buckets on the workers, and each part's keys in the same
    buckets: a part gets the answers of its own keys (its duplicates' too, whose first row may
    be in another part), never the whole table."""

    buckets: list[Any]  # futures: a bucket's answers by KEY (or None)
    keys: Grid  # futures: per bucket, per group of parts, their distinct keys of it

    def of_parts(self, run: Spreader, parts: int) -> list[Any]:
        """A future of each part's answers (None: none), in input order."""
        columns = [
            [run.submit(answers_of_group, answers, keys) for keys in column]
            for answers, column in zip(self.buckets, self.keys, strict=True)
        ]
        grid = Grid(columns, self.keys.most)  # the parts grouped as their keys were
        return [run.submit(part_answers, a) for a in run.exchange.to_parts(grid, parts)]


async def check_on_cluster(
    run: Spreader, engine: Engine, parts: list[Any], tables: list[Any]
) -> tuple[Found | None, CheckStats | None]:
    """The address checker's answers (see :class:`Found`), or None where there are none."""
    checker = engine.checker
    if checker is None or engine.offline:
        return None, None
    buckets = buckets_for(len(parts), run.size)
    routes = Routes(checker.routes, checker.default) if isinstance(checker, RoutedChecker) else None
    pieces = [
        run.submit(candidate_pieces, part, tables[p], run.stores, buckets, routes, run.lists)
        for p, part in enumerate(parts)
    ]
    grid = run.exchange.to_buckets(pieces, buckets)
    del pieces  # each part's candidates let go once the buckets took theirs
    found: list[list[Any]] = [[] for _ in range(buckets)]
    stats: list[CheckStats] = []
    for method, inner in _methods(checker):
        checked = await _Method(run, engine, method, grid).check(inner)
        if checked is not None:
            for bucket, tables_of in zip(found, checked[0], strict=True):
                bucket.extend(tables_of)
            stats.append(checked[1])
    if not stats:
        return None, None
    keys = [run.submit(key_pieces_of, part, buckets) for part in parts]
    answers = Found(
        [run.submit(answer_table, *tables_of) for tables_of in found],
        run.exchange.to_buckets(keys, buckets),
    )
    return answers, stats[0] if routes is None else combined(stats)


def _methods(checker: AddressChecker) -> list[tuple[Method, AddressChecker]]:
    """Each method the checker asks with, as the workers know it."""
    match checker:
        case SmtpChecker():
            return [(Method("smtp", "smtp"), checker)]
        case ApiChecker():
            return [(Method("api", "api", api=checker.config.url.rstrip("/")), checker)]
        case VendorChecker():
            fp = key_fingerprint(checker.key)
            return [(Method(checker.vendor, "vendor", key_fp=fp), checker)]
        case RoutedChecker():
            return [
                (dataclasses.replace(m, name=name), c)
                for name, inner in checker.checkers.items()
                for m, c in _methods(inner)
            ]
    raise TypeError(f"No way to spread {type(checker).__name__} over a cluster.")


class _Method:
    """One method's share-out and owners."""

    def __init__(self, run: Spreader, engine: Engine, method: Method, grid: Iterable[list[Any]]):
        self.run = run
        self.engine = engine
        self.method = method
        since = time.time()  # what the caches learn from here on is this run's (see settle)
        self.settled = [run.submit(settle, method, run.stores, since, *column) for column in grid]

    async def check(self, inner: AddressChecker) -> tuple[list[list[Any]], CheckStats] | None:
        run = self.run
        tallies = [run.submit(tally, s) for s in self.settled]
        ranked: pl.DataFrame = run.submit(rank, self.method, run.stores, *tallies).result()
        if not ranked.height:
            return None  # no candidate: this method was not asked
        if isinstance(inner, SmtpChecker):
            return await self._smtp(inner, ranked)
        if isinstance(inner, ApiChecker):
            return self._api(inner, ranked)
        assert isinstance(inner, VendorChecker)
        return await self._vendor(inner, ranked)

    async def _smtp(
        self, inner: SmtpChecker, ranked: pl.DataFrame
    ) -> tuple[list[list[Any]], CheckStats]:
        runs = _runs(ranked)
        known = set(ranked.filter("_known").get_column("DOMAIN").to_list())
        left = inner.budget.left
        taken = cut(runs, left, known)
        reached = [(d, n) for (d, _), n in zip(runs, taken, strict=True) if n]
        shares = allowances(reached, left, known)
        names = [d for d, _ in reached]
        mx = dict(ranked.filter(pl.col("DOMAIN").is_in(names)).select("DOMAIN", "MX").iter_rows())
        lists = self.engine.lists
        refresh = _refresh(ranked, taken, inner.budget)
        if inner.on_plan is not None:
            pace = pace_of(reached, known, mx, inner.config, lists)
            inner.on_plan(_plan("smtp", ranked, inner.budget, sum(taken), pace, refresh))
        owners = max(1, self.run.size)
        owner_of = {d: _owner(provider_of(mx[d] or d, lists), owners) for d in names}
        reach = self._reach(ranked, [taken], owner_of)
        hosts: list[tuple[str, str]] = []
        if reached:
            hosts = await outbound_hosts(self.engine.dns, inner.settings)  # the canaries, once
        run, dns = self.run, self.engine.dns.config
        common = (run.stores, run.topic, inner.config, inner.settings, dns, run.lists)
        orders = [
            SmtpOrder(owner, _owned(shares, owner_of, owner), *common, tuple(hosts))
            for owner in range(owners)
        ]
        asked = (inner.budget, inner.on_spent, inner.meter(sum(taken)))
        tables, stats = self._ask(probe_group, orders, reach, *asked)
        return tables, dataclasses.replace(_smtp_total(stats), refresh=refresh)

    def _api(self, inner: ApiChecker, ranked: pl.DataFrame) -> tuple[list[list[Any]], CheckStats]:
        quota = self.run.submit(api_quota_left, self.run.stores, inner.config, inner.key).result()
        limits = [n for n in (quota, inner.budget.left) if n is not None]
        limit = min(limits) if limits else None
        taken = self._prefix(ranked, limit)
        refresh = _refresh(ranked, taken, inner.budget)
        if inner.on_plan is not None:
            inner.on_plan(_plan("api", ranked, inner.budget, sum(taken), refresh=refresh))
        reach = self._reach(ranked, [taken], {})
        order = ApiOrder(
            None if inner.budget.limit is None else sum(taken),
            self.run.stores, self.run.topic, inner.config, inner.key,
        )  # fmt: skip
        asked = (inner.budget, inner.on_spent, inner.meter(sum(taken)))
        tables, stats = self._ask(ask_api, [order], reach, *asked)
        return tables, CheckStats("api", sum(s.requests for s in stats), refresh=refresh)

    async def _vendor(
        self, inner: VendorChecker, ranked: pl.DataFrame
    ) -> tuple[list[list[Any]], CheckStats]:
        wanted = sum(int(ranked.get_column(c).sum()) for c in ("_open", "_held", "_due"))
        balance = await inner.balance() if wanted else None
        by_budget = self._prefix(ranked, inner.budget.left)
        limits = [n for n in (inner.budget.left, balance) if n is not None]
        taken = self._prefix(ranked, min(limits) if limits else None)
        covered, short = sum(taken), sum(by_budget) - sum(taken)
        warnings = short_of_balance(inner.vendor, balance, covered, short)
        refresh = _refresh(ranked, taken, inner.budget)
        if inner.on_plan is not None:
            held = int(ranked.get_column("_held").sum())
            shown = _plan("vendor", ranked, inner.budget, covered + held, refresh=refresh)
            bounced = int(ranked.get_column("_bounced").sum())
            inner.on_plan(dataclasses.replace(
                shown, need_checks=wanted, vendor=inner.vendor, balance=balance, settled=bounced
            ))  # fmt: skip
        reach = dataclasses.replace(self._reach(ranked, [taken, by_budget], {}), balance=balance)
        order = VendorOrder(
            inner.vendor, None if inner.budget.limit is None else covered, self.run.stores,
            self.run.topic, inner.config, inner.key, inner.base,
        )  # fmt: skip
        held = int(ranked.get_column("_held").sum())
        asked = (inner.budget, lambda _: inner.spent(), inner.meter(covered + held))
        tables, stats = self._ask(ask_vendor, [order], reach, *asked)
        told = stats[0]
        return tables, dataclasses.replace(told, warnings=warnings + told.warnings, refresh=refresh)

    # --- the share-out's places, and the owners -----------------------------------------

    def _prefix(self, ranked: pl.DataFrame, limit: int | None) -> list[int]:
        """One request per address: the first *limit* open addresses in priority order."""
        runs = _runs(ranked)
        return cut(runs, limit, {d for d, _ in runs})

    def _reach(
        self, ranked: pl.DataFrame, cuts: list[list[int]], owner_of: dict[str, int]
    ) -> Reach:
        """Per domain reached by any cut (*cuts*: each over :func:`_runs`): its rank, its
        owner, the row each cut reaches its never answered up to (None: all of them; -1:
        none), its place among the due, and the (learned, row) each cut reaches those up to."""
        domains = ranked.get_column("DOMAIN").to_list()
        ranks = ranked.get_column(RANK).to_list()
        opened = ranked.get_column("_open").to_list()
        due = dict(zip(domains, ranked.get_column("_due").to_list(), strict=True))
        places = {d: place for place, d in enumerate(_due_order(ranked))}
        width = len(domains)
        entries: dict[str, Any] = {}
        for i, domain in enumerate(domains):
            counts = [taken[i] for taken in cuts]
            place = places.get(domain)
            later = [0 if place is None else taken[width + place] for taken in cuts]
            if not any(counts) and not any(later):
                continue
            limits = tuple(
                None if n == opened[i] else -1 if n == 0 else self._boundary(domain, n)
                for n in counts
            )
            due_limits = tuple(
                None if n == due[domain] else _NONE if n == 0 else self._due_boundary(domain, n)
                for n in later
            )
            rank = -1 if place is None else place
            entries[domain] = (ranks[i], owner_of.get(domain, 0), limits, rank, due_limits)
        return Reach(entries)

    def _boundary(self, domain: str, count: int) -> int:
        """The row of the *count*-th never answered open address of *domain*, in input order."""
        run = self.run
        found = run.gather([run.submit(first_rows, s, domain, count) for s in self.settled])
        return int(sorted(r for rows in found for r in rows)[count - 1])

    def _due_boundary(self, domain: str, count: int) -> tuple[float, int]:
        """(learned, row) of the *count*-th due address of *domain*, oldest first."""
        run = self.run
        found = run.gather([run.submit(first_due, s, domain, count) for s in self.settled])
        at, row = sorted(r for rows in found for r in rows)[count - 1]
        return float(at), int(row)

    def _ask(
        self,
        ask: Callable[..., Any],
        orders: list[Any],
        reach: Reach,
        budget: Budget,
        on_spent: Callable[[int], None] | None,
        bar: Progress,
    ) -> tuple[list[list[Any]], list[CheckStats]]:
        """The answers' tables of each key bucket (futures: what nobody asks for, and each
        owner's share) and what the owners sent, hearing what they spend."""
        run = self.run
        owners = len(orders)
        targets = [run.submit(targets_of, s, reach, owners) for s in self.settled]
        owned = [
            run.submit(ask, order, *(run.submit(share, t, o) for t in targets))
            for o, order in enumerate(orders)
        ]
        count = len(self.settled)
        tables = [
            [run.submit(fixed, s, reach, self.method)]
            + [run.submit(owned_piece, o, b, count) for o in owned]
            for b, s in enumerate(self.settled)
        ]
        with contextlib.closing(bar):
            sink = _Spending(budget, owners, bar, on_spent)
            done = run.wait([run.submit(_spent_of, o) for o in owned], sink.hear)
        sink.settle([spent for spent, _ in done])
        return tables, [stats for _, stats in done]


def api_quota_left(stores: Stores, config: ApiConfig, key: str | None) -> int | None:
    """What the remote API's quota has left this window, as the shared ledger knows it."""
    store = mailbox_store(stores)
    ledger = QuotaLedger(
        store.quota_spent, store.add_quota_spent, store.quota_limit, store.set_quota_limit
    )
    return RemoteVerifier(config, key, ledger, Budget(None), lambda *_: None).quota_left()


def _spent_of(owned: Any) -> tuple[int, CheckStats]:
    return owned.spent, owned.stats


def _owned(
    shares: dict[str, int] | None, owner_of: dict[str, int], owner: int
) -> dict[str, int] | None:
    """The allowances of *owner*'s domains (None: no limit)."""
    if shares is None:
        return None
    return {d: n for d, n in shares.items() if owner_of[d] == owner}


def _owner(provider: str, owners: int) -> int:
    """The owner of a mail provider: one of *owners*, the same in every run."""
    return zlib.crc32(provider.encode()) % owners


_NONE = (float("-inf"), -1)  # a due limit that reaches none of a domain


def _due_order(ranked: pl.DataFrame) -> list[str]:
    """The domains with due answers, in the order the budget reaches those: the domain with
    the oldest due answer first, then in rank order (as the local engine's
    :func:`~pipeline.core.mailboxes.step.refresh_order`)."""
    due = ranked.filter(pl.col("_due") > 0).sort("_oldest", RANK)
    return due.get_column("DOMAIN").to_list()


def _runs(ranked: pl.DataFrame) -> list[tuple[str, int]]:
    """The share-out's runs of one domain, in the budget's order: each domain's never
    answered addresses in rank order, then each domain's due ones (:func:`_due_order`)."""
    never = list(zip(ranked.get_column("DOMAIN"), ranked.get_column("_open"), strict=True))
    due = dict(zip(ranked.get_column("DOMAIN"), ranked.get_column("_due"), strict=True))
    return never + [(d, due[d]) for d in _due_order(ranked)]


def _refresh(ranked: pl.DataFrame, taken: list[int], budget: Budget) -> Refresh:
    """The due answers and those the cut *taken* (over :func:`_runs`) reaches."""
    due = int(ranked.get_column("_due").sum())
    need = int(ranked.get_column("_open").sum()) + due
    return refresh_of(due, sum(taken[ranked.height :]), need, budget)


def _plan(
    kind: Any,
    ranked: pl.DataFrame,
    budget: Budget,
    covered: int,
    pace: Any = None,
    refresh: Refresh | None = None,
) -> Plan:
    size = int(ranked.get_column("_size").sum())
    need = int(ranked.get_column("_open").sum()) + int(ranked.get_column("_due").sum())
    cached = int(ranked.get_column("_cached").sum())
    return Plan(kind, size, need, cached, budget.left, covered, pace, refresh=refresh)


def _smtp_total(parts: list[CheckStats]) -> CheckStats:
    return CheckStats(
        "smtp",
        sum(p.requests for p in parts),
        sum(p.sessions for p in parts),
        max((p.busiest_host_sessions for p in parts), default=0),
    )


class _Spending:
    """The run's spending as the owners tell it (each owner's latest), recorded as it grows."""

    def __init__(
        self,
        budget: Budget,
        owners: int,
        bar: Progress,
        on_spent: Callable[[int], None] | None,
    ) -> None:
        self._budget = budget
        self._base = budget.spent
        self._spent = [0] * owners
        self._bar = bar
        self._on_spent = on_spent

    def hear(self, message: list[Any]) -> None:
        owner, spent, answered = message
        self._bar.update(int(answered))
        self._spent[owner] = max(self._spent[owner], int(spent))
        self._record()

    def settle(self, spent: list[int]) -> None:
        """Each owner's own count, once it is done (what a lost owner's events over-counted
        is not charged)."""
        self._spent = list(spent)
        self._record()

    def _record(self) -> None:
        self._budget.spent = self._base + sum(self._spent)
        if self._on_spent is not None:
            self._on_spent(self._budget.spent)
