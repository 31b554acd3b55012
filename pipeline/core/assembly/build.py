"""The one place an :class:`~pipeline.core.engine.Engine` is built, for both fronts.

The command line and the service hand over a config, where the domain cache lives, and a few
options; this opens the lists, the domain cache, the bounce ledger and the address checker the
config asks for, each registered with the caller's :class:`contextlib.ExitStack` so they close
together. The other stores live beside the domain cache, or in the database their setting
names (:mod:`pipeline.core.db.database`), so the batch and the service share everything they
learn.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.calibration.store import calibration_of
from pipeline.core.calibration.types import Calibration
from pipeline.core.config import VENDORS, Config, budgets_of, routes_of, vendor_url
from pipeline.core.db.database import cache_where, store_where
from pipeline.core.domains.cache import DomainCache
from pipeline.core.domains.dns import SharedResolver
from pipeline.core.domains.exchanges import Routing
from pipeline.core.engine import Engine
from pipeline.core.errors import UsageError
from pipeline.core.lists import DomainLists, load_lists
from pipeline.core.mailboxes.cache import MailboxCache
from pipeline.core.mailboxes.checkers import AddressChecker, ApiChecker, PlanSink, SmtpChecker
from pipeline.core.mailboxes.identity import identity_of, require_real
from pipeline.core.mailboxes.smtp import smtp_settings
from pipeline.core.mailboxes.types import Budget
from pipeline.core.mailboxes.vendors.checker import RoutedChecker, VendorChecker
from pipeline.core.mailboxes.vendors.store import PaidAnswers
from pipeline.core.progress import ProgressFactory


@dataclass(frozen=True)
class EngineOptions:
    """How a front wants its engine; the defaults suit the service."""

    offline: bool = False  # no DNS: every checked domain is Risky ``offline``
    loopback_only: bool = False  # the sandbox: SMTP probes may only go to 127.0.0.0/8
    progress: ProgressFactory | None = None
    api_key: str | None = None  # for ``verify.mode = "api"`` or a vendor's
    # Each method's key (``config.method_keys``): a route to a second vendor needs its own.
    api_keys: Mapping[str, str] = field(default_factory=dict)
    # The run's budget: requests already spent by an earlier attempt of the same run, None for
    # a service (its callers' quotas bound what it spends).
    spent: int | None = None
    on_plan: PlanSink | None = None
    on_spent: Callable[[int], None] | None = None
    # The same, per method a route names beside the run's own (verify.mode).
    spent_of: Callable[[str], int] = lambda method: 0
    on_spent_of: Callable[[str, int], None] | None = None
    clock: Callable[[], float] = time.time


def open_engine(
    stack: contextlib.ExitStack, config: Config, domain_cache: Path, options: EngineOptions
) -> Engine:
    """The engine *config* describes; its stores close with *stack*."""
    lists = load_lists(
        config.lists.extra_disposable, config.lists.extra_free, config.lists.extra_legitimate
    )
    where, family = cache_where(domain_cache, "domains", config.cache.db)
    cache = stack.enter_context(DomainCache(where, config.cache, options.clock, family))
    ledger_at = store_where(domain_cache, "bounces", config.bounces.db)
    ledger = stack.enter_context(BounceLedger(ledger_at, config.bounces))
    checker = None if options.offline else _checker(stack, config, domain_cache, options, lists)
    return Engine(
        config,
        lists,
        SharedResolver(config.dns),
        cache,
        options.offline,
        options.progress,
        checker,
        ledger,
        Routing(sandbox=options.loopback_only),
        _calibration(config, domain_cache, options.loopback_only),
    )


def _calibration(config: Config, domain_cache: Path, sandbox: bool) -> Calibration | None:
    """The calibration of the list ``[history] list_name`` names, from the run history beside
    *domain_cache* (or ``[history] db``): what the service (and ``verify``) apply, the same
    the list's runs apply. A run of another list takes its own (its history plan's)."""
    where = store_where(domain_cache, "history", config.history.db)
    return calibration_of(where, config.history.list_name, sandbox)


def _checker(
    stack: contextlib.ExitStack,
    config: Config,
    domain_cache: Path,
    options: EngineOptions,
    lists: DomainLists,
) -> AddressChecker | None:
    """The run's address checker: its method's, or with ``[routing] routes`` one per method
    the routes name, each with its own budget."""
    mode = config.verify.mode
    routes = routes_of(config.routing)
    methods = dict.fromkeys(m for m in (mode, *routes.values()) if m != "none")
    if not methods:
        return None
    made = _Made(stack, config, domain_cache, options, lists)
    checkers = {method: made.checker(method) for method in methods}
    if not routes:
        return checkers[mode]
    return RoutedChecker(routes, mode, checkers)


@dataclass
class _Made:
    """What the checkers of one engine share: its stores, opened once, on first need."""

    stack: contextlib.ExitStack
    config: Config
    domain_cache: Path
    options: EngineOptions
    lists: DomainLists
    _mailboxes: MailboxCache | None = None
    _paid: PaidAnswers | None = None

    def checker(self, method: str) -> AddressChecker:
        config, options = self.config, self.options
        budget, on_spent = self._budget(method)
        if method in VENDORS:
            return VendorChecker(
                method,
                config.vendor,
                self._key(method),
                self.paid(),
                budget,
                vendor_url(config.vendor, method, main=method == config.verify.mode),
                options.on_plan,
                on_spent,
                options.progress,
            )
        if method == "api":
            if not config.api.url:
                raise UsageError("--verify api needs the service's address: pass --api-url URL.")
            return ApiChecker(
                config.api,
                options.api_key,
                self.mailboxes(),
                budget,
                options.on_plan,
                on_spent,
                options.progress,
            )
        # Before anything is opened or sent: names no server would accept.
        require_real(identity_of(config.verify, sandbox=options.loopback_only), self.lists.is_tld)
        settings = smtp_settings(config.verify, loopback_only=options.loopback_only)
        return SmtpChecker(
            config.verify,
            settings,
            self.mailboxes(),
            budget,
            options.on_plan,
            on_spent,
            options.progress,
        )

    def mailboxes(self) -> MailboxCache:
        if self._mailboxes is None:
            where, family = cache_where(self.domain_cache, "mailboxes", self.config.cache.db)
            cache = MailboxCache(where, self.config.verify, self.options.clock, family)
            self._mailboxes = self.stack.enter_context(cache)
        return self._mailboxes

    def paid(self) -> PaidAnswers:
        if self._paid is None:
            where = store_where(self.domain_cache, "vendor-answers", self.config.vendor.db)
            floor = self.config.verify.ttl_floor
            store = PaidAnswers(where, self.config.vendor, self.options.clock, floor)
            self._paid = self.stack.enter_context(store)
        return self._paid

    def _key(self, vendor: str) -> str:
        options = self.options
        main = vendor == self.config.verify.mode
        key = options.api_keys.get(vendor) or (options.api_key if main else None)
        if not key:
            where = "--api-key KEY or LISTCLEAN_API_KEY" if main else ""
            where = where or f"LISTCLEAN_{vendor.upper()}_API_KEY"
            raise UsageError(f"{vendor} needs its API key: pass {where}.")
        return key

    def _budget(self, method: str) -> tuple[Budget, Callable[[int], None] | None]:
        """The method's budget (``--budget N`` for the run's own method, ``--budget METHOD=N``
        for any) and where its spending is recorded, so a resumed run goes on from it."""
        options = self.options
        if options.spent is None:  # a service: its callers' quotas bound what it spends
            return Budget(None), None
        main = method == self.config.verify.mode
        given = budgets_of(self.config.routing).get(method)
        limit = given if given is not None else (self.config.verify.budget if main else 0)
        if main:
            return Budget(limit or None, options.spent), options.on_spent
        record = options.on_spent_of
        on_spent = None if record is None else (lambda n: record(method, n))
        return Budget(limit or None, options.spent_of(method)), on_spent
