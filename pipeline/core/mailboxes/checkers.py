"""The two address checkers behind one protocol: SMTP probing and a remote ``/api/email``.

A checker is built once per run (or once per service) with its cache and budget; each call of
:meth:`AddressChecker.check` answers a frame of rows and hands back what it sent. Answers
already in the mailbox cache cost nothing, so a checker asks the resolver for nothing (and the
network for nothing) when every address is answered there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import polars as pl

from pipeline.core.config import ApiConfig, VerifyConfig
from pipeline.core.dns import Resolver, SharedResolver
from pipeline.core.errors import SmtpUnavailableError
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.cache import MailboxCache
from pipeline.core.mailboxes.prober import Prober
from pipeline.core.mailboxes.remote import QuotaLedger, RemoteVerifier
from pipeline.core.mailboxes.smtp import SmtpSettings, smtp_reachable
from pipeline.core.mailboxes.step import (
    allocate,
    attach_mailbox_answers,
    attach_remote_answers,
    plan,
    probe_order,
    share_out,
    unanswered,
)
from pipeline.core.mailboxes.types import (
    Budget,
    CheckStats,
    Mailbox,
    MailboxResult,
    Plan,
    RemoteAnswer,
)

PlanSink = Callable[[Plan], None]
SpentSink = Callable[[int], None]  # after each answer: requests spent by the run so far

_NOT_VERIFIED = MailboxResult(Mailbox.NOT_VERIFIED, "the run's RCPT budget is spent")


class AddressChecker(Protocol):
    """Address-level answers for a frame of rows (MAILBOX, MAILBOX_REPLY and the like)."""

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]: ...


@dataclass
class SmtpChecker:
    """RCPT probing of each address's mail servers (``--verify smtp``)."""

    config: VerifyConfig
    settings: SmtpSettings
    cache: MailboxCache
    budget: Budget
    on_plan: PlanSink | None = None
    on_spent: SpentSink | None = None
    _outbound_seen: bool = field(default=False, init=False)  # port 25 was seen to work

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]:
        ordered = probe_order(rows)
        answers = self.cache.get_many(ordered.get_column("KEY").to_list())
        targets = unanswered(ordered, answers)
        known = self.cache.catch_all({t.domain for t in targets})
        reached, skipped = allocate(targets, self.budget, set(known))
        if self.on_plan is not None:
            self.on_plan(plan("smtp", rows, len(targets), len(answers), self.budget, len(reached)))
        stats = CheckStats("smtp")
        if reached:
            resolver = await dns.get()
            await self._outbound_works(resolver, dns.config.canaries)
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
            answers.update(await prober.run(reached, known))
            sent = prober.stats
            busiest = max(sent.sessions_per_host.values(), default=0)
            stats = CheckStats("smtp", sent.rcpts, sent.sessions, busiest)
        answers.update({t.key: _NOT_VERIFIED for t in skipped})
        return attach_mailbox_answers(rows, answers), stats

    def _remember(self, key: str, result: MailboxResult) -> None:
        self.cache.put(key, result)
        if self.on_spent is not None:
            self.on_spent(self.budget.spent)

    async def _outbound_works(self, resolver: Resolver, canaries: tuple[str, ...]) -> None:
        """Once: a blocked port 25 should be one clear message, not 10,000 timeouts."""
        if self._outbound_seen:
            return
        settings = self.settings
        timeout = min(settings.timeout, 10.0)
        reachable = await smtp_reachable(
            resolver, canaries, settings.port, timeout, settings.loopback_only
        )
        if not reachable.ok:
            raise SmtpUnavailableError(f"SMTP checks cannot run from here: {reachable.detail}")
        self._outbound_seen = True


@dataclass
class ApiChecker:
    """The answers of a remote service that speaks the spec's ``/api/email`` (``--verify api``)."""

    config: ApiConfig
    key: str | None
    cache: MailboxCache
    budget: Budget
    on_plan: PlanSink | None = None
    on_spent: SpentSink | None = None

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]:
        api = self.config.url.rstrip("/")
        ordered = probe_order(rows)
        known = self.cache.remote_answers(ordered.get_column("KEY").to_list(), api)
        targets = unanswered(ordered, known)
        cache = self.cache
        ledger = QuotaLedger(
            cache.quota_spent, cache.add_quota_spent, cache.quota_limit, cache.set_quota_limit
        )

        def remember(key: str, answer: RemoteAnswer) -> None:
            cache.put_remote_answer(key, api, answer)
            if self.on_spent is not None:
                self.on_spent(self.budget.spent)

        verifier = RemoteVerifier(self.config, self.key, ledger, self.budget, remember)
        reached, skipped = share_out(targets, self.budget, verifier.quota_left())
        if self.on_plan is not None:
            self.on_plan(plan("api", rows, len(targets), len(known), self.budget, len(reached)))
        answers = {**known, **await verifier.run(reached)} if reached else dict(known)
        for target in skipped:
            answers[target.key] = RemoteAnswer(None, error="not_verified_budget: budget or quota")
        return attach_remote_answers(rows, answers), CheckStats("api", verifier.requests)
