"""The one place an :class:`~pipeline.core.engine.Engine` is built, for both fronts.

The command line and the service hand over a config, where the domain cache lives, and a few
options; this opens the lists, the domain cache, the bounce ledger and the address checker the
config asks for, each registered with the caller's :class:`contextlib.ExitStack` so they close
together. The other stores live beside the domain cache (:func:`beside_domain_cache`), so the batch
and the service share everything they learn.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.config import Config
from pipeline.core.db.database import store_where
from pipeline.core.db.sqlite import beside_domain_cache
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
from pipeline.core.progress import ProgressFactory


@dataclass(frozen=True)
class EngineOptions:
    """How a front wants its engine; the defaults suit the service."""

    offline: bool = False  # no DNS: every checked domain is Risky ``offline``
    loopback_only: bool = False  # the sandbox: SMTP probes may only go to 127.0.0.0/8
    progress: ProgressFactory | None = None
    api_key: str | None = None  # for ``verify.mode = "api"``
    # The run's budget: requests already spent by an earlier attempt of the same run, None for
    # a service (its callers' quotas bound what it spends).
    spent: int | None = None
    on_plan: PlanSink | None = None
    on_spent: Callable[[int], None] | None = None
    clock: Callable[[], float] = time.time


def open_engine(
    stack: contextlib.ExitStack, config: Config, domain_cache: Path, options: EngineOptions
) -> Engine:
    """The engine *config* describes; its stores close with *stack*."""
    lists = load_lists(
        config.lists.extra_disposable, config.lists.extra_free, config.lists.extra_legitimate
    )
    cache = stack.enter_context(DomainCache(domain_cache, config.cache, options.clock))
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
    )


def _checker(
    stack: contextlib.ExitStack,
    config: Config,
    domain_cache: Path,
    options: EngineOptions,
    lists: DomainLists,
) -> AddressChecker | None:
    mode = config.verify.mode
    if mode == "none":
        return None
    if mode == "smtp":  # before anything is opened or sent: names no server would accept
        require_real(identity_of(config.verify, sandbox=options.loopback_only), lists.is_tld)
    path = beside_domain_cache(domain_cache, "mailboxes")
    cache = stack.enter_context(MailboxCache(path, config.verify, options.clock))
    if options.spent is None:
        budget = Budget(None)
    else:
        budget = Budget(config.verify.budget or None, options.spent)
    if mode == "api":
        if not config.api.url:
            raise UsageError("--verify api needs the service's address: pass --api-url URL.")
        return ApiChecker(
            config.api,
            options.api_key,
            cache,
            budget,
            options.on_plan,
            options.on_spent,
            options.progress,
        )
    settings = smtp_settings(config.verify, loopback_only=options.loopback_only)
    return SmtpChecker(
        config.verify,
        settings,
        cache,
        budget,
        options.on_plan,
        options.on_spent,
        options.progress,
    )
