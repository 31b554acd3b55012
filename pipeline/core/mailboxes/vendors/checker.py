"""A vendor method as an address checker (``--verify zerobounce`` ...), and routing by mail
provider, which sends some providers' addresses to one method and the rest to another.

The vendor's checker settles what it can for free before it spends: only the addresses the
address step would probe (distinct, well-formed, on a domain with a mail host) are
candidates; those the bounce ledger knows bounced, and those the paid-answer cache answers,
are not sent. The balance is asked next (a refused key stops the run here, before anything is
spent), then the run's budget and the balance are shared out in the address step's priority
order, before any request, so a run killed and started again reaches the same addresses.
Addresses held by a bulk job a killed run left are collected, free, whatever the budget.

The paid verifiers' modules are one each, beside this one (:data:`ADAPTERS`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

import polars as pl

from pipeline.core.config import VendorConfig
from pipeline.core.domains.dns import SharedResolver
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.checkers import AddressChecker, PlanSink, SpentSink
from pipeline.core.mailboxes.pacing import provider_of
from pipeline.core.mailboxes.remote import key_fingerprint
from pipeline.core.mailboxes.step import (
    join_answers,
    mail_hosts,
    plan,
    probe_order,
    refresh_order,
    share_out,
    stale_note,
)
from pipeline.core.mailboxes.types import (
    Budget,
    CheckStats,
    Refresh,
    Target,
    combined,
    refresh_of,
)
from pipeline.core.mailboxes.vendors.bouncer import Bouncer
from pipeline.core.mailboxes.vendors.emailable import Emailable
from pipeline.core.mailboxes.vendors.http import Adapter
from pipeline.core.mailboxes.vendors.kickbox import Kickbox
from pipeline.core.mailboxes.vendors.neverbounce import NeverBounce
from pipeline.core.mailboxes.vendors.store import PaidStore
from pipeline.core.mailboxes.vendors.types import Job, VendorAnswer, not_answered
from pipeline.core.mailboxes.vendors.verifier import STILL_RUNNING, Ledger, VendorVerifier
from pipeline.core.mailboxes.vendors.zerobounce import ZeroBounce
from pipeline.core.progress import Progress, ProgressFactory, meter
from pipeline.core.schema import keyed_schema
from pipeline.core.verdict import Reason

ADAPTERS: Final[Mapping[str, Callable[[], Adapter]]] = {
    "zerobounce": ZeroBounce,
    "neverbounce": NeverBounce,
    "kickbox": Kickbox,
    "emailable": Emailable,
    "bouncer": Bouncer,
}
_BALANCE_FRESH: Final = 60.0  # seconds a balance is believed (a service asks once a minute)


def adapter_for(vendor: str) -> Adapter:
    return ADAPTERS[vendor]()


@dataclass(frozen=True)
class VendorAssignment:
    """Who gets a credit, decided before any is spent."""

    answers: dict[str, VendorAnswer]  # from the paid-answer cache
    reached: list[Target]  # to ask, in priority order (a killed run's jobs' first)
    skipped: dict[str, VendorAnswer]  # beyond the budget or the balance (a due answer: kept)
    warnings: tuple[str, ...] = ()
    refresh: Refresh = field(default_factory=Refresh)


def stale_vendor(kept: VendorAnswer, now: float) -> VendorAnswer:
    """A due answer the budget (or the balance) did not reach again, as it is shown: its age
    in DETAIL."""
    return dataclasses.replace(kept, status=f"{kept.status} ({stale_note(kept.at, now)})")


def attach_vendor_answers(rows: pl.DataFrame, answers: Mapping[str, VendorAnswer]) -> pl.DataFrame:
    """VENDOR_REASON, MAILBOX_REPLY (the vendor's words, DETAIL) and MAILBOX_AT by KEY."""
    return join_answers(rows, vendor_table(answers))


def vendor_table(answers: Mapping[str, VendorAnswer]) -> pl.DataFrame:
    """A paid verifier's answers by KEY, as the rows get them."""
    return pl.DataFrame(
        {
            "KEY": list(answers),
            "VENDOR_REASON": [a.reason.value for a in answers.values()],
            "MAILBOX_REPLY": [a.detail for a in answers.values()],
            "MAILBOX_AT": [a.at for a in answers.values()],
        },
        schema=keyed_schema("VENDOR_REASON", "MAILBOX_REPLY", "MAILBOX_AT"),
    )


def short_of_balance(vendor: str, balance: int | None, covered: int, short: int) -> tuple[str, ...]:
    """What the run's user is told when the balance covers fewer addresses than the budget."""
    if not short:
        return ()
    return (
        f"{vendor}'s balance of {balance:,} credits covers {covered:,} of the "
        f"{covered + short:,} addresses the run would ask about; the other {short:,} keep "
        "their domain-level verdict (not_verified_credits). Buy credits and run again: what "
        "was answered is not paid for twice.",
    )


def beyond_budget(vendor: str) -> VendorAnswer:
    """The stand-in answer of an address the run's budget does not reach."""
    return not_answered(vendor, Reason.NOT_VERIFIED_BUDGET, "the run's budget")


def beyond_balance(vendor: str, balance: int | None) -> VendorAnswer:
    """The stand-in answer of an address the vendor's balance does not cover."""
    why = f"the balance of {balance} credits was spent"
    return not_answered(vendor, Reason.NOT_VERIFIED_CREDITS, why)


def vendor_stats(
    vendor: str,
    warnings: tuple[str, ...],
    found: Mapping[str, VendorAnswer],
    verifier: VendorVerifier,
) -> CheckStats:
    """What a vendor's verifier sent and spent, and what the run's user must be told: the
    share-out's *warnings*, then the addresses an empty balance or a job still running left."""
    told = list(warnings)
    left = [a for a in found.values() if a.reason is Reason.NOT_VERIFIED_CREDITS]
    if left:
        told.append(
            f"{len(left):,} addresses were not verified: {verifier.stopped or 'out of credits'}"
            ". They keep their domain-level verdict (not_verified_credits); every file was "
            "written. Buy credits and run again: what was answered is not paid for twice."
        )
    pending = [a for a in found.values() if STILL_RUNNING in a.status]
    if pending:
        told.append(
            f"{len(pending):,} addresses wait on a {vendor} bulk job that did not finish within "
            "vendor.job_timeout; they keep their domain-level verdict. Run again later: the job "
            "is collected, not submitted again."
        )
    return CheckStats(
        "vendor",
        vendor_requests=verifier.requests,
        credits=verifier.credits,
        warnings=tuple(told),
    )


def known_bounces(rows: pl.DataFrame) -> set[str]:
    """Keys the bounce ledger settles (a hard bounce, no delivery since): never paid for."""
    if "LEDGER_KNOWN" not in rows.columns:
        return set()
    return set(rows.filter(pl.col("LEDGER_KNOWN").fill_null(False)).get_column("KEY").to_list())


class StoreLedger:
    """A verifier's ledger on the paid-answer store, for one vendor and key."""

    def __init__(self, checker: VendorChecker, key_fp: str) -> None:
        self._checker = checker
        self._fp = key_fp

    def open_jobs(self) -> list[Job]:
        return self._checker.store.open_jobs(self._checker.vendor, self._fp)

    def add_job(self, job: Job) -> None:
        self._checker.store.add_job(job)
        self._checker.spent()

    def close_job(self, job: Job, state: str) -> None:
        self._checker.store.close_job(job, state)

    def answered(self, key: str, answer: VendorAnswer) -> None:
        self._checker.store.put(key, answer)
        self._checker.spent()


@dataclass
class VendorChecker:
    """The answers of a paid verifier (``--verify zerobounce|neverbounce|kickbox|...``)."""

    vendor: str
    config: VendorConfig
    key: str
    store: PaidStore
    budget: Budget
    base: str = ""  # --api-url: stands in for the vendor's hosts
    on_plan: PlanSink | None = None
    on_spent: SpentSink | None = None
    progress: ProgressFactory | None = None
    _bar: Progress = field(default_factory=lambda: meter(None, 0, "", ""), init=False)
    _balance: tuple[float, int | None, int] | None = field(default=None, init=False)

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]:
        verifier = self.verifier(StoreLedger(self, self.fingerprint))
        work = await self.assign(rows, verifier)
        found: dict[str, VendorAnswer] = {}
        if work.reached:
            with contextlib.closing(self.meter(len(work.reached))) as self._bar:
                verifier.on_progress(self._bar.update)
                found = await verifier.run(work.reached)
        self._remember_spent(verifier.credits)
        return self.finish(rows, work, found), self.stats(work, found, verifier)

    @property
    def fingerprint(self) -> str:
        return key_fingerprint(self.key)

    def verifier(self, ledger: Ledger, budget: Budget | None = None) -> VendorVerifier:
        return VendorVerifier(
            adapter_for(self.vendor), self.key, self.config, ledger, budget or self.budget,
            base=self.base,
        )  # fmt: skip

    def meter(self, total: int) -> Progress:
        return meter(self.progress, total, self.vendor, "address")

    def spent(self) -> None:
        if self.on_spent is not None:
            self.on_spent(self.budget.spent)

    async def assign(self, rows: pl.DataFrame, verifier: VendorVerifier) -> VendorAssignment:
        """The cached answers, then the share-out of the budget and the balance: the addresses
        never answered first, then the answers due again, oldest first."""
        ordered = probe_order(rows)
        bounced = known_bounces(rows)
        ordered = ordered.filter(~pl.col("KEY").is_in(list(bounced))) if bounced else ordered
        keys = ordered.get_column("KEY").to_list()
        if self.store.remote:  # a round trip to a database leaves the loop (the service)
            cached, due = await asyncio.to_thread(self.store.with_due, keys)
        else:
            cached, due = self.store.with_due(keys)
        targets, stale = refresh_order(ordered, cached, {k: a.at for k, a in due.items()})
        balance = await self._balance_of(verifier) if targets else None
        held = {k for job in verifier.open_jobs() for k, _ in job.targets}
        resumed = [t for t in targets if t.key in held]
        fresh = [t for t in targets if t.key not in held]
        reached, over_budget = share_out(fresh, self.budget, None)
        short: list[Target] = []
        if balance is not None and len(reached) > balance:
            reached, short = reached[: max(0, balance)], reached[max(0, balance) :]
        now = self.store.now()
        skipped = {
            **{t.key: beyond_budget(self.vendor) for t in over_budget},
            **{t.key: beyond_balance(self.vendor, balance) for t in short},
        }
        # A due answer the run does not buy again is shown as it was, with its age.
        skipped |= {k: stale_vendor(due[k], now) for k in skipped if k in due}
        warnings = short_of_balance(self.vendor, balance, len(reached), len(short))
        covered = resumed + reached
        refreshed = sum(1 for t in covered if t.key in due)
        refresh = refresh_of(stale, refreshed, len(targets), self.budget)
        self._show_plan(rows, targets, cached, covered, balance, len(bounced), refresh)
        return VendorAssignment(cached, covered, skipped, warnings, refresh)

    def finish(
        self, rows: pl.DataFrame, work: VendorAssignment, found: Mapping[str, VendorAnswer]
    ) -> pl.DataFrame:
        return attach_vendor_answers(rows, {**work.answers, **work.skipped, **found})

    def stats(
        self, work: VendorAssignment, found: Mapping[str, VendorAnswer], verifier: VendorVerifier
    ) -> CheckStats:
        stats = vendor_stats(self.vendor, work.warnings, found, verifier)
        return dataclasses.replace(stats, refresh=work.refresh)

    async def balance(self) -> int | None:
        """The vendor's balance, as :meth:`assign` reads it (asked at most once a minute)."""
        return await self._balance_of(self.verifier(_NO_LEDGER))

    async def _balance_of(self, verifier: VendorVerifier) -> int | None:
        """The balance, asked at most once a minute (a service checks a batch at a time)."""
        now = time.monotonic()
        if self._balance is not None and now - self._balance[0] < _BALANCE_FRESH:
            _, balance, spent = self._balance
            return None if balance is None else max(0, balance - spent)
        balance = await verifier.balance()
        self._balance = (now, balance, 0)
        return balance

    def _remember_spent(self, credits: int) -> None:
        if self._balance is not None:
            at, balance, spent = self._balance
            self._balance = (at, balance, spent + credits)

    def _show_plan(
        self,
        rows: pl.DataFrame,
        targets: list[Target],
        cached: Mapping[str, VendorAnswer],
        covered: list[Target],
        balance: int | None,
        settled: int,
        refresh: Refresh,
    ) -> None:
        if self.on_plan is None:
            return
        need, budget = len(targets), self.budget
        shown = plan("vendor", rows, need, len(cached), budget, len(covered), refresh=refresh)
        self.on_plan(
            dataclasses.replace(shown, vendor=self.vendor, balance=balance, settled=settled)
        )


# --- routing by provider ------------------------------------------------------------------------


@dataclass
class RoutedChecker:
    """Each address to the method its mail provider is routed to (``[routing] routes``), the
    rest to the run's own method; each method with its own checker and budget."""

    routes: Mapping[str, str]  # provider (registrable domain of the mail host) -> method
    default: str  # the method of every other provider ("none": domain level only)
    checkers: Mapping[str, AddressChecker]  # method -> its checker

    async def check(
        self, rows: pl.DataFrame, dns: SharedResolver, lists: DomainLists
    ) -> tuple[pl.DataFrame, CheckStats]:
        methods = self.methods(rows, lists)
        indexed = rows.with_columns(_ROUTED_ROW=pl.int_range(pl.len()), _METHOD=methods)
        parts, stats = [], []
        for method, checker in self.checkers.items():
            part = indexed.filter(pl.col("_METHOD") == method)
            if not part.is_empty():
                checked, sent = await checker.check(part, dns, lists)
                parts.append(checked)
                stats.append(sent)
        parts.append(indexed.filter(~pl.col("_METHOD").is_in(list(self.checkers))))
        joined = pl.concat(parts, how="diagonal_relaxed").sort("_ROUTED_ROW")
        return joined.drop("_ROUTED_ROW", "_METHOD"), combined(stats or [CheckStats("vendor")])

    def methods(self, rows: pl.DataFrame, lists: DomainLists) -> pl.Series:
        """Each row's method, by the provider of its domain's mail host."""
        hosts = mail_hosts(rows)
        method = {d: self.routes.get(provider_of(mx, lists) if mx else "", self.default)
                  for d, mx in hosts.items()}  # fmt: skip
        domains = (
            rows.get_column("DOMAIN")
            if "DOMAIN" in rows.columns
            else pl.Series([], dtype=pl.String)
        )
        return domains.replace_strict(method, default=self.default, return_dtype=pl.String)

    def with_checkers(self, checkers: Mapping[str, AddressChecker]) -> RoutedChecker:
        return dataclasses.replace(self, checkers=dict(checkers))


class _NoLedger:
    """The ledger of a verifier that only asks the balance."""

    def open_jobs(self) -> list[Job]:
        return []

    def add_job(self, job: Job) -> None:
        raise AssertionError("asking the balance submits no job")

    def close_job(self, job: Job, state: str) -> None:
        raise AssertionError("asking the balance closes no job")

    def answered(self, key: str, answer: VendorAnswer) -> None:
        raise AssertionError("asking the balance gets no answer")


_NO_LEDGER: Final = _NoLedger()


def unpaid(checker: AddressChecker | None) -> AddressChecker | None:
    """*checker* without its paid verifiers: what the service uses for callers whose plan does
    not allow them (anonymous ones included)."""
    match checker:
        case VendorChecker():
            return None
        case RoutedChecker():
            kept = {m: c for m, c in checker.checkers.items() if not isinstance(c, VendorChecker)}
            if not kept:
                return None
            default = checker.default if checker.default in kept else "none"
            # A provider routed to a vendor stays at the domain level, not sent elsewhere.
            routes = {p: m if m in kept else "none" for p, m in checker.routes.items()}
            return RoutedChecker(routes, default, kept)
    return checker
