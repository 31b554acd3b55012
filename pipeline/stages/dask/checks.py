"""Address-level checks spread over a Dask cluster, with the local engine's choices.

The driver decides everything a local run decides before the first request: the mailbox
cache's answers, the global priority order and the budget's share-out (the checker's own
``assign``), so a Dask run and a local run probe the same addresses and the total is never
exceeded. Only the sending is spread:

* SMTP: the reached targets are grouped by mail provider (the registrable domain of each
  domain's MX host, as the prober paces them) and each group goes to one worker, so one Prober
  owns each provider: per-host and per-provider pacing, session limits, breakers and catch-all
  probes are exact. A group may spend what its targets cost in the share-out, no more.
* API: the remote service is one provider: one worker asks it, with the quota the driver's
  ledger knows.
* A paid verifier: one owner too. The driver asks the balance and shares out the budget (the
  checker's own ``assign``), one worker sends the requests (or the bulk jobs), and each answer
  and each job id comes back as an event the driver commits to the paid-answer store at once.
* Routing: each method's share of the rows is spread its own way.

Each answer (and catch-all finding, and quota spending) travels back as a Dask event the moment
it is known, and the driver commits it to the mailbox cache and the run's work directory, so a
killed Dask run keeps what it learned, as a local one does.
"""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

import polars as pl

from pipeline.core.bounces.step import attach_bounces
from pipeline.core.config import ListsConfig
from pipeline.core.domains.dns import SharedResolver
from pipeline.core.engine import Engine
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.checkers import (
    AddressChecker,
    ApiChecker,
    SmtpChecker,
    unreached,
)
from pipeline.core.mailboxes.pacing import provider_of
from pipeline.core.mailboxes.remote import QuotaLedger
from pipeline.core.mailboxes.step import attach_mailbox_answers, mail_hosts
from pipeline.core.mailboxes.types import (
    Budget,
    CheckStats,
    Mailbox,
    MailboxResult,
    RemoteAnswer,
    Target,
)
from pipeline.core.mailboxes.vendors.checker import RoutedChecker, StoreLedger, VendorChecker
from pipeline.core.mailboxes.vendors.types import VendorAnswer
from pipeline.core.progress import Progress
from pipeline.core.verdict import Reason, Verdict
from pipeline.stages.dask.shuffle import ROW
from pipeline.stages.dask.tasks import (
    ApiOrder,
    ProbeOrder,
    VendorOrder,
    ask_api,
    ask_vendor,
    job_of,
    partition_candidates,
    probe_group,
    same,
)
from pipeline.stages.state.dedupe import partition_of
from pipeline.stages.steps import answer_table

_POLL = 0.5  # seconds between looks at the answers that arrived


class Spreader(Protocol):
    """What a spread checker needs of the run's place on the cluster (the Dask engine's)."""

    size: int  # workers
    topic: str  # where workers send answers as they come
    lists: ListsConfig  # for the workers' own domain lists
    remote_queries: int  # DNS queries the workers sent

    def submit(self, function: Callable[..., Any], *args: Any) -> Any: ...
    def gather(self, futures: list[Any]) -> list[Any]: ...
    def wait(self, futures: Sequence[Any], hear: Callable[[list[Any]], None]) -> list[Any]: ...


async def check_addresses(
    run: Spreader, engine: Engine, parts: list[Any], tables: list[Any]
) -> tuple[Any, CheckStats | None]:
    """The address checker's answers by KEY, as a future every part's decision reads (a
    duplicate's part may not be its first row's), or None where there are none. The
    candidates come from every part, in input order, so the budget reaches the addresses a
    local run reaches."""
    if engine.checker is None or engine.offline:
        return None, None
    candidates = run.gather(
        [run.submit(partition_candidates, part, tables[p]) for p, part in enumerate(parts)]
    )
    rows = pl.concat(candidates, how="vertical_relaxed").sort(ROW)
    if rows.is_empty():
        return None, None
    # The ledger's flags first: a paid verifier is never asked about a known bounce.
    rows = attach_bounces(engine.bounces, rows)
    checker = spread(engine.checker, run)
    checked, stats = await checker.check(rows, engine.dns, engine.lists)
    return run.submit(same, answer_table(checked, rows)), stats


def spread(checker: AddressChecker, run: Spreader) -> AddressChecker:
    """*checker*, with its requests sent by the cluster's workers: SMTP probes by provider,
    a remote API's requests from one worker. Each kind of checker spreads its own way, so the
    choice is made here, once."""
    match checker:
        case SmtpChecker():
            return SpreadSmtp(checker, run)
        case ApiChecker():
            return SpreadApi(checker, run)
        case VendorChecker():
            return SpreadVendor(checker, run)
        case RoutedChecker():
            return checker.with_checkers({m: spread(c, run) for m, c in checker.checkers.items()})
    raise TypeError(f"No way to spread {type(checker).__name__} over a cluster.")


class SpreadSmtp:
    """SMTP probing spread over the workers, one provider to each."""

    def __init__(self, inner: SmtpChecker, run: Spreader) -> None:
        self._inner = inner
        self._run = run

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]:
        inner = self._inner
        work = inner.assign(rows, lists)
        answers = dict(work.answers)
        stats = CheckStats("smtp")
        if work.reached:
            await dns.get()  # the resolver checked once, as a local run checks it
            orders = self._groups(work.reached, work.known_catch_all, inner.budget, rows, lists)
            futures = [
                self._run.submit(
                    probe_group,
                    order,
                    inner.config,
                    inner.settings,
                    dns.config,
                    self._run.lists,
                )
                for order in orders
            ]
            with contextlib.closing(inner.meter(len(work.reached))) as bar:
                sink = _SmtpSink(inner, len(orders), bar)
                for found, sent, queries in self._run.wait(futures, sink.hear):
                    sink.keep(found)
                    answers.update(found)
                    stats = _plus(stats, sent)
                    self._run.remote_queries += queries
        answers.update(unreached(work, inner.cache.now()))
        return attach_mailbox_answers(rows, answers), replace(stats, refresh=work.refresh)

    def _groups(
        self,
        reached: list[Target],
        known: dict[str, bool],
        budget: Budget,
        rows: pl.DataFrame,
        lists: DomainLists,
    ) -> list[ProbeOrder]:
        """The reached targets (in priority order) by the worker owning their provider."""
        mx = mail_hosts(rows)
        providers = [provider_of(mx[t.domain], lists) for t in reached]
        owners = partition_of(pl.Series(providers, dtype=pl.String), self._run.size).to_list()
        orders = []
        for owner in range(self._run.size):
            targets = [t for t, o in zip(reached, owners, strict=True) if o == owner]
            domains = {t.domain for t in targets}
            # Its share of the budget: one RCPT per address, one per catch-all probe to send.
            cost = len(targets) + len(domains - known.keys())
            limit = cost if budget.limit is not None else None
            kept = {d: known[d] for d in domains if d in known}
            orders.append(ProbeOrder(targets, kept, limit, self._run.topic, owner))
        return orders


class SpreadApi:
    """A remote API's requests sent from one worker: the service is one provider."""

    def __init__(self, inner: ApiChecker, run: Spreader) -> None:
        self._inner = inner
        self._run = run

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]:
        inner = self._inner
        reads = _LedgerReads(inner.ledger())
        work = inner.assign(rows, inner.verifier(reads.ledger).quota_left())
        answers: dict[str, RemoteAnswer] = {}
        requests = 0
        if work.reached:
            limit = len(work.reached) if inner.budget.limit is not None else None
            order = ApiOrder(work.reached, limit, reads.spent, reads.quota, self._run.topic, 0)
            future = self._run.submit(ask_api, order, inner.config, inner.key)
            with contextlib.closing(inner.meter(len(work.reached))) as bar:
                sink = _ApiSink(inner, work.api, bar)
                ((answers, requests),) = self._run.wait([future], sink.hear)
        stats = CheckStats("api", requests, refresh=work.refresh)
        return inner.finish(rows, work, answers), stats


class SpreadVendor:
    """A paid verifier's requests sent from one worker: the vendor is one provider."""

    def __init__(self, inner: VendorChecker, run: Spreader) -> None:
        self._inner = inner
        self._run = run

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]:
        inner = self._inner
        verifier = inner.verifier(StoreLedger(inner, inner.fingerprint))
        work = await inner.assign(rows, verifier)
        found: dict[str, VendorAnswer] = {}
        if work.reached:
            limit = len(work.reached) if inner.budget.limit is not None else None
            jobs = verifier.open_jobs()
            order = VendorOrder(inner.vendor, work.reached, jobs, limit, self._run.topic, 0)
            future = self._run.submit(ask_vendor, order, inner.config, inner.key, inner.base)
            with contextlib.closing(inner.meter(len(work.reached))) as bar:
                sink = _VendorSink(inner, bar)
                (sent,) = self._run.wait([future], sink.hear)
            found = sent.answers
            verifier.requests += sent.requests
            verifier.credits, verifier.stopped = sent.credits, sent.stopped
        return inner.finish(rows, work, found), inner.stats(work, found, verifier)


def _plus(a: CheckStats, b: CheckStats) -> CheckStats:
    busiest = max(a.busiest_host_sessions, b.busiest_host_sessions)
    return CheckStats("smtp", a.requests + b.requests, a.sessions + b.sessions, busiest)


class _SmtpSink:
    """Commits each group's answers as they arrive; keeps the run's spending up to date."""

    def __init__(self, inner: SmtpChecker, groups: int, bar: Progress) -> None:
        self._inner = inner
        self._bar = bar
        self._base = inner.budget.spent
        self._spent = [0] * groups
        self._kept: set[str] = set()

    def hear(self, message: list[Any]) -> None:
        group, kind, *values, spent = message
        if kind == "mailbox":
            key, outcome, reply, at = values
            self._inner.cache.put(key, MailboxResult(Mailbox(outcome), reply, at))
            self._kept.add(key)
            self._bar.update(1)
        elif kind == "catch_all":
            self._inner.cache.put_catch_all({values[0]: bool(values[1])})
        self._spend(group, spent)

    def keep(self, found: dict[str, MailboxResult]) -> None:
        """A group is done: whatever of its answers no event brought is committed now."""
        for key, result in found.items():
            if key not in self._kept and result.outcome is not Mailbox.NOT_VERIFIED:
                self._inner.cache.put(key, result)

    def _spend(self, group: int, spent: int) -> None:
        self._spent[group] = max(self._spent[group], spent)
        self._inner.budget.spent = self._base + sum(self._spent)
        if self._inner.on_spent is not None:
            self._inner.on_spent(self._inner.budget.spent)


class _ApiSink:
    def __init__(self, inner: ApiChecker, api: str, bar: Progress) -> None:
        self._inner = inner
        self._bar = bar
        self._api = api
        self._base = inner.budget.spent

    def hear(self, message: list[Any]) -> None:
        _, kind, *values, spent = message
        cache = self._inner.cache
        if kind == "remote":
            key, verdict, score, known, suspected = values
            answer = RemoteAnswer(Verdict(verdict) if verdict else None, score, known, suspected)
            cache.put_remote_answer(key, self._api, answer)
            self._bar.update(1)
        elif kind == "quota":
            cache.add_quota_spent(*values)
        elif kind == "limit":
            cache.set_quota_limit(*values)
        self._inner.budget.spent = self._base + spent
        if self._inner.on_spent is not None:
            self._inner.on_spent(self._inner.budget.spent)


class _VendorSink:
    """Commits a worker's jobs and answers to the paid-answer store as they arrive."""

    def __init__(self, inner: VendorChecker, bar: Progress) -> None:
        self._inner = inner
        self._bar = bar
        self._base = inner.budget.spent

    def hear(self, message: list[Any]) -> None:
        _, kind, *values, spent = message
        store = self._inner.store
        if kind == "job":
            store.add_job(job_of(values))
        elif kind == "job_closed":
            store.close_job(job_of(values[1:]), values[0])
        elif kind == "vendor":
            key, reason, status, vendor, billed, at = values
            store.put(key, VendorAnswer(Reason(reason), status, vendor, billed, at))
            self._bar.update(1)
        self._inner.budget.spent = self._base + spent
        self._inner.spent()


class _LedgerReads:
    """The driver's quota ledger, noting what the verifier reads from it for this window."""

    def __init__(self, ledger: QuotaLedger) -> None:
        self.spent = 0
        self.quota: int | None = None
        self.ledger = QuotaLedger(
            self._read_spent(ledger.spent),
            ledger.add,
            self._read_limit(ledger.limit),
            ledger.set_limit,
        )

    def _read_spent(self, read: Callable[[str, str, int], int]) -> Callable[[str, str, int], int]:
        def spent(api: str, fp: str, window: int) -> int:
            self.spent = read(api, fp, window)
            return self.spent

        return spent

    def _read_limit(
        self, read: Callable[[str, str, int], int | None]
    ) -> Callable[[str, str, int], int | None]:
        def limit(api: str, fp: str, window: int) -> int | None:
            self.quota = read(api, fp, window)
            return self.quota

        return limit


def drain(events: queue.SimpleQueue[Any], hear: Callable[[list[Any]], None]) -> None:
    """Hand every event that arrived to *hear* (each is ``(time, message)``)."""
    while True:
        try:
            _, message = events.get_nowait()
        except queue.Empty:
            return
        hear(list(message))
