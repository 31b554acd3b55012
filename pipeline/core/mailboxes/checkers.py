"""The two address checkers behind one protocol: SMTP probing and a remote ``/api/email``.

A checker is built once per run (or once per service) with its cache and budget; each call of
:meth:`AddressChecker.check` answers a frame of rows and hands back what it sent. Answers
already in the mailbox cache cost nothing, so a checker asks the resolver for nothing (and the
network for nothing) when every address is answered there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

import polars as pl

from pipeline.core.config import ApiConfig, VerifyConfig
from pipeline.core.domains.dns import SharedResolver, lookup_domain
from pipeline.core.errors import SmtpUnavailableError
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.cache import MailboxCache
from pipeline.core.mailboxes.pacing import pace_of
from pipeline.core.mailboxes.prober import Prober
from pipeline.core.mailboxes.remote import QuotaLedger, RemoteVerifier
from pipeline.core.mailboxes.smtp import SmtpSettings, banners, canary_hosts
from pipeline.core.mailboxes.step import (
    allocate,
    allowances,
    attach_mailbox_answers,
    attach_remote_answers,
    mail_hosts,
    plan,
    probe_order,
    refresh_order,
    runs_of,
    share_out,
    stale_note,
)
from pipeline.core.mailboxes.types import (
    Budget,
    CheckStats,
    Mailbox,
    MailboxResult,
    Plan,
    Refresh,
    RemoteAnswer,
    Target,
    refresh_of,
)
from pipeline.core.progress import Progress, ProgressFactory, meter

PlanSink = Callable[[Plan], None]
SpentSink = Callable[[int], None]  # after each answer: requests spent by the run so far

_NOT_VERIFIED = MailboxResult(Mailbox.NOT_VERIFIED, "the run's RCPT budget is spent")
# A remote API's answer to an address the budget or the quota did not reach.
NOT_VERIFIED_REMOTE = RemoteAnswer(None, error="not_verified_budget: budget or quota")


class AddressChecker(Protocol):
    """Address-level answers for a frame of rows (MAILBOX, MAILBOX_REPLY and the like)."""

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]: ...


@dataclass(frozen=True)
class Assignment:
    """Who gets a request, decided before any is sent: the cached answers, the targets the
    budget reaches (in priority order) and those it does not, the known catch-alls, and what
    each reached domain may spend (None: no limit); the kept answers that are due again
    (shown when the budget does not reach them), and their figures."""

    answers: dict[str, MailboxResult]
    reached: list[Target]
    skipped: list[Target]
    known_catch_all: dict[str, bool]
    allowances: dict[str, int] | None = None
    due: dict[str, MailboxResult] = field(default_factory=dict)
    refresh: Refresh = field(default_factory=Refresh)


@dataclass
class SmtpChecker:
    """RCPT probing of each address's mail servers (``--verify smtp``)."""

    config: VerifyConfig
    settings: SmtpSettings
    cache: MailboxCache
    budget: Budget
    on_plan: PlanSink | None = None
    on_spent: SpentSink | None = None
    progress: ProgressFactory | None = None
    _outbound_seen: bool = field(default=False, init=False)  # port 25 was seen to work
    _bar: Progress = field(default_factory=lambda: meter(None, 0, "", ""), init=False)

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]:
        work = self.assign(rows, lists)
        answers = dict(work.answers)
        stats = CheckStats("smtp")
        if work.reached:
            with contextlib.closing(self.meter(len(work.reached))) as self._bar:
                found, stats = await self._probe(work, dns, lists)
            answers.update(found)
        answers.update(unreached(work, self.cache.now()))
        return attach_mailbox_answers(rows, answers), replace(stats, refresh=work.refresh)

    async def _probe(
        self, work: Assignment, dns: SharedResolver, lists: DomainLists
    ) -> tuple[dict[str, MailboxResult], CheckStats]:
        resolver = await dns.get()
        if not self._outbound_seen:
            await outbound_works(await outbound_hosts(dns, self.settings), self.settings)
            self._outbound_seen = True
        prober = Prober(
            resolver,
            self.config,
            self.settings,
            lists,
            self.budget,
            self._remember,
            dns_concurrency=dns.config.concurrency,
            on_catch_all=lambda domain, flag: self.cache.put_catch_all({domain: flag}),
        )
        return await probe_targets(work, prober)

    def meter(self, total: int) -> Progress:
        """A progress meter of *total* addresses being probed."""
        return meter(self.progress, total, "SMTP", "address")

    def assign(self, rows: pl.DataFrame, lists: DomainLists) -> Assignment:
        """The cached answers and the budget's share-out, in the global priority order: the
        addresses never answered first, then the due answers, oldest first."""
        ordered = probe_order(rows)
        answers, due = self.cache.with_due(ordered.get_column("KEY").to_list())
        targets, stale = refresh_order(ordered, answers, {k: a.at for k, a in due.items()})
        known = self.cache.catch_all({t.domain for t in targets})
        reached, skipped = allocate(targets, self.budget, set(known))
        refreshed = sum(1 for t in reached if t.key in due)
        refresh = refresh_of(stale, refreshed, len(targets), self.budget)
        if self.on_plan is not None:
            pace = pace_of(runs_of(reached), known, mail_hosts(rows), self.config, lists)
            need, cached = len(targets), len(answers)
            shown = plan("smtp", rows, need, cached, self.budget, len(reached), pace, refresh)
            self.on_plan(shown)
        shares = allowances(runs_of(reached), self.budget.left, set(known))
        return Assignment(answers, reached, skipped, known, shares, due, refresh)

    def _remember(self, key: str, result: MailboxResult) -> None:
        self.cache.put(key, result)
        self._bar.update(1)
        if self.on_spent is not None:
            self.on_spent(self.budget.spent)


async def probe_targets(
    work: Assignment, prober: Prober
) -> tuple[dict[str, MailboxResult], CheckStats]:
    """The prober's answers for the reached targets, and what it sent."""
    answers = await prober.run(work.reached, work.known_catch_all, work.allowances)
    sent = prober.stats
    busiest = max(sent.sessions_per_host.values(), default=0)
    return answers, CheckStats("smtp", sent.rcpts, sent.sessions, busiest)


def not_verified(skipped: list[Target]) -> dict[str, MailboxResult]:
    """The answer of each target the budget did not reach."""
    return {t.key: _NOT_VERIFIED for t in skipped}


def unreached(work: Assignment, now: float) -> dict[str, MailboxResult]:
    """The answer of each target the budget did not reach: its kept answer when it has one
    (due again: its age in DETAIL), else not verified."""
    answers = not_verified([t for t in work.skipped if t.key not in work.due])
    for target in work.skipped:
        kept = work.due.get(target.key)
        if kept is not None:
            answers[target.key] = stale_mailbox(kept, now)
    return answers


def stale_mailbox(kept: MailboxResult, now: float) -> MailboxResult:
    """A due answer the budget did not reach again, as it is shown: its age in DETAIL."""
    note = stale_note(kept.at, now)
    return MailboxResult(kept.outcome, f"{kept.reply} ({note})" if kept.reply else note, kept.at)


def stale_remote(kept: RemoteAnswer, now: float) -> RemoteAnswer:
    """:func:`stale_mailbox` for a remote API's answer."""
    return replace(kept, note=stale_note(kept.at, now))


async def outbound_hosts(dns: SharedResolver, settings: SmtpSettings) -> list[tuple[str, str]]:
    """(host, address) of the canaries' mail hosts, from the answers the resolver's health
    check got (the canaries are asked once per run)."""
    resolver = await dns.get()
    canaries = dns.canaries or [await lookup_domain(resolver, c) for c in dns.config.canaries]
    return await canary_hosts(resolver, canaries, settings.loopback_only)


async def outbound_works(hosts: list[tuple[str, str]], settings: SmtpSettings) -> None:
    """A blocked port 25 should be one clear message, not 10,000 timeouts: one of the
    canaries' mail *hosts* must answer from this process."""
    timeout = min(settings.timeout, 10.0)
    reachable = await banners(hosts, settings.port, timeout)
    if not reachable.ok:
        raise SmtpUnavailableError(f"SMTP checks cannot run from here: {reachable.detail}")


@dataclass(frozen=True)
class RemoteAssignment:
    """:class:`Assignment` for a remote API: its cached answers and the requests shared out."""

    api: str
    answers: dict[str, RemoteAnswer]
    reached: list[Target]
    skipped: list[Target]
    due: dict[str, RemoteAnswer] = field(default_factory=dict)
    refresh: Refresh = field(default_factory=Refresh)


@dataclass
class ApiChecker:
    """The answers of a remote service that speaks the spec's ``/api/email`` (``--verify api``)."""

    config: ApiConfig
    key: str | None
    cache: MailboxCache
    budget: Budget
    on_plan: PlanSink | None = None
    on_spent: SpentSink | None = None
    progress: ProgressFactory | None = None
    _bar: Progress = field(default_factory=lambda: meter(None, 0, "", ""), init=False)

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]:
        verifier = self.verifier(self.ledger())
        work = self.assign(rows, verifier.quota_left())
        answers: dict[str, RemoteAnswer] = {}
        if work.reached:
            with contextlib.closing(self.meter(len(work.reached))) as self._bar:
                answers = {**work.answers, **await verifier.run(work.reached)}
        stats = CheckStats("api", verifier.requests, refresh=work.refresh)
        return self.finish(rows, work, answers), stats

    def meter(self, total: int) -> Progress:
        """A progress meter of *total* addresses being asked about."""
        return meter(self.progress, total, "API", "address")

    def ledger(self) -> QuotaLedger:
        cache = self.cache
        return QuotaLedger(
            cache.quota_spent, cache.add_quota_spent, cache.quota_limit, cache.set_quota_limit
        )

    def verifier(self, ledger: QuotaLedger, budget: Budget | None = None) -> RemoteVerifier:
        """A client for the run's requests; each answer is cached the moment it arrives."""
        api = self.config.url.rstrip("/")

        def remember(key: str, answer: RemoteAnswer) -> None:
            self.cache.put_remote_answer(key, api, answer)
            self._bar.update(1)
            if self.on_spent is not None:
                self.on_spent(self.budget.spent)

        return RemoteVerifier(self.config, self.key, ledger, budget or self.budget, remember)

    def assign(self, rows: pl.DataFrame, quota_left: int | None) -> RemoteAssignment:
        """The cached answers and the requests shared out in the global priority order."""
        api = self.config.url.rstrip("/")
        ordered = probe_order(rows)
        known, due = self.cache.remote_with_due(ordered.get_column("KEY").to_list(), api)
        targets, stale = refresh_order(ordered, known, {k: a.at for k, a in due.items()})
        reached, skipped = share_out(targets, self.budget, quota_left)
        refreshed = sum(1 for t in reached if t.key in due)
        refresh = refresh_of(stale, refreshed, len(targets), self.budget)
        if self.on_plan is not None:
            need, covered = len(targets), len(reached)
            shown = plan("api", rows, need, len(known), self.budget, covered, refresh=refresh)
            self.on_plan(shown)
        return RemoteAssignment(api, known, reached, skipped, due, refresh)

    def finish(
        self, rows: pl.DataFrame, work: RemoteAssignment, answers: dict[str, RemoteAnswer]
    ) -> pl.DataFrame:
        answers = {**work.answers, **answers}
        now = self.cache.now()
        for target in work.skipped:
            kept = work.due.get(target.key)
            # due again, not refreshed: shown with its age
            answers[target.key] = NOT_VERIFIED_REMOTE if kept is None else stale_remote(kept, now)
        return attach_remote_answers(rows, answers)
