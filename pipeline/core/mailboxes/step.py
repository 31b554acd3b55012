"""The address-level step on frames: which rows to probe, in what order, and joining answers back.

Only distinct addresses that still need an answer are probed: not duplicates, not malformed,
not on dead domains, not already answered in the mailbox cache. Within the budget, addresses on
domains that look good (a working MX, not disposable, not a suspected typo) come first, largest
domains first, so a limited budget goes where it tells the most. The budget is shared out before
any probe is sent, in that order, so which addresses a run reaches does not depend on timing:
a run killed and started again reaches the same ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from pipeline.core.address import Syntax
from pipeline.core.config import ApiConfig, DnsConfig, VerifyConfig
from pipeline.core.dns import DnsStatus, Resolver
from pipeline.core.doctor import smtp_reachable
from pipeline.core.errors import SmtpUnavailableError
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.cache import MailboxCache
from pipeline.core.mailboxes.prober import Budget, MailboxResult, Prober, ProbeStats, Target
from pipeline.core.mailboxes.remote import QuotaLedger, RemoteAnswer, RemoteVerifier
from pipeline.core.mailboxes.smtp import Mailbox, SmtpSettings
from pipeline.core.schema import keyed_schema

_PROBEABLE = (
    ~pl.col("DUPLICATE")
    & (pl.col("KEY") != "")
    # RCPT with a non-ASCII local part needs SMTPUTF8 on the far side: not probed.
    & (pl.col("SYNTAX") == Syntax.OK.value)
    & pl.col("DNS_STATUS").is_in([DnsStatus.MX.value, DnsStatus.IMPLICIT_MX.value])
)
_NOT_VERIFIED = MailboxResult(Mailbox.NOT_VERIFIED, "the run's RCPT budget is spent")


@dataclass(frozen=True)
class Plan:
    """The pre-flight estimate, shown before anything is spent."""

    distinct_addresses: int
    need_checks: int  # probeable and not answered in the cache
    cached: int
    budget: int | None  # RCPTs this run may still send
    covered: int  # addresses the budget reaches


@dataclass
class MailboxChecker:
    """What the address-level step needs; one per run (or per service)."""

    config: VerifyConfig
    settings: SmtpSettings
    cache: MailboxCache
    budget: Budget
    on_plan: Callable[[Plan], None] | None = None
    on_spent: Callable[[int], None] | None = None  # after each answer: RCPTs spent so far
    stats: ProbeStats = field(default_factory=ProbeStats)
    smtp_checked: bool = False  # outbound SMTP was seen to work


def probe_order(rows: pl.DataFrame) -> pl.DataFrame:
    """The probeable rows, one per address, best-informing first."""
    candidates = rows.lazy().with_row_index("_row").filter(_PROBEABLE)
    good_domain = (
        (pl.col("DNS_STATUS") == DnsStatus.MX.value)
        & ~pl.col("DISPOSABLE")
        & (pl.col("SUGGESTED_DOMAIN") == "")
    )
    return (
        candidates.with_columns(
            _good=good_domain,
            _size=pl.len().over("DOMAIN"),
            _first=pl.col("_row").min().over("DOMAIN"),
        )
        .sort(["_good", "_size", "_first", "_row"], descending=[True, True, False, False])
        .select("KEY", "EMAIL", "DOMAIN", "DNS_STATUS")
        .collect()
    )


def _unanswered(ordered: pl.DataFrame, answered: Mapping[str, object]) -> list[Target]:
    """The rows of :func:`probe_order` still without an answer, as targets, in that order."""
    return [
        Target(key, email, domain, DnsStatus(status))
        for key, email, domain, status in ordered.iter_rows()
        if key not in answered
    ]


def allocate(
    targets: Sequence[Target], budget: Budget, known_catch_all: set[str]
) -> tuple[list[Target], list[Target]]:
    """Split *targets* (in priority order) into those the budget reaches and the rest.

    Each address costs one RCPT, and the first address of a domain whose catch-all behaviour is
    not known costs one more (the random local part).
    """
    left = budget.left
    if left is None:
        return list(targets), []
    reached: list[Target] = []
    counted = set(known_catch_all)
    for i, target in enumerate(targets):
        cost = 1 + (target.domain not in counted)
        if cost > left:
            return reached, list(targets[i:])
        left -= cost
        counted.add(target.domain)
        reached.append(target)
    return reached, []


async def check_mailboxes(
    checker: MailboxChecker,
    rows: pl.DataFrame,
    resolver: Resolver,
    lists: DomainLists,
    dns: DnsConfig,
) -> pl.DataFrame:
    """MAILBOX (a Mailbox value or null) and MAILBOX_REPLY for every row."""
    ordered = probe_order(rows)
    answers = checker.cache.get_many(ordered.get_column("KEY").to_list())
    targets = _unanswered(ordered, answers)
    known = checker.cache.catch_all({t.domain for t in targets})
    reached, skipped = allocate(targets, checker.budget, set(known))
    if checker.on_plan is not None:
        checker.on_plan(_plan(rows, len(targets), len(answers), checker.budget, len(reached)))

    def remember(key: str, result: MailboxResult) -> None:
        checker.cache.put(key, result)
        if checker.on_spent is not None:
            checker.on_spent(checker.budget.spent)

    if reached and not checker.smtp_checked:
        # Once per run: a blocked port 25 should be one clear message, not 10,000 timeouts.
        settings = checker.settings
        reachable = await smtp_reachable(
            resolver,
            dns.canaries,
            settings.port,
            min(settings.timeout, 10.0),
            settings.loopback_only,
        )
        if not reachable.ok:
            raise SmtpUnavailableError(f"SMTP checks cannot run from here: {reachable.detail}")
        checker.smtp_checked = True
    if reached:
        prober = Prober(
            resolver,
            checker.config,
            checker.settings,
            lists,
            checker.budget,
            remember,
            dns_concurrency=dns.concurrency,
        )
        answers.update(await prober.run(reached, known))
        checker.cache.put_catch_all(prober.catch_all)
        checker.stats = prober.stats
    answers.update({t.key: _NOT_VERIFIED for t in skipped})
    return _attach(rows, answers)


@dataclass
class RemoteChecker:
    """The address-level step through a remote ``/api/email`` (``--verify api``)."""

    config: ApiConfig
    key: str | None
    cache: MailboxCache
    budget: Budget
    on_plan: Callable[[Plan], None] | None = None
    on_spent: Callable[[int], None] | None = None
    requests: int = 0  # sent in this run


async def check_remote(checker: RemoteChecker, rows: pl.DataFrame) -> pl.DataFrame:
    """MAILBOX (errors, budget) and the remote answer's API_* columns for every row."""
    api = checker.config.url.rstrip("/")
    ordered = probe_order(rows)
    known = checker.cache.remote_answers(ordered.get_column("KEY").to_list(), api)
    targets = _unanswered(ordered, known)
    cache = checker.cache
    ledger = QuotaLedger(
        cache.quota_spent, cache.add_quota_spent, cache.quota_limit, cache.set_quota_limit
    )

    def remember(key: str, answer: RemoteAnswer) -> None:
        checker.cache.put_remote_answer(key, api, answer)
        if checker.on_spent is not None:
            checker.on_spent(checker.budget.spent)

    verifier = RemoteVerifier(checker.config, checker.key, ledger, checker.budget, remember)
    reached, skipped = _share_out(targets, checker.budget, verifier.quota_left())
    if checker.on_plan is not None:
        checker.on_plan(_plan(rows, len(targets), len(known), checker.budget, len(reached)))
    answers = {**known, **await verifier.run(reached)} if reached else dict(known)
    checker.requests = verifier.requests
    for target in skipped:
        answers[target.key] = RemoteAnswer(None, error="not_verified_budget: budget or quota")
    return _attach_remote(rows, answers)


def _share_out(
    targets: Sequence[Target], budget: Budget, quota_left: int | None
) -> tuple[list[Target], list[Target]]:
    """One request per address, in priority order, within the run's budget and the quota."""
    limits = [n for n in (quota_left, budget.left) if n is not None]
    if not limits:
        return list(targets), []
    n = max(0, min(limits))
    return list(targets[:n]), list(targets[n:])


def _plan(rows: pl.DataFrame, need: int, cached: int, budget: Budget, covered: int) -> Plan:
    return Plan(
        distinct_addresses=rows.filter(pl.col("KEY") != "").get_column("KEY").n_unique(),
        need_checks=need,
        cached=cached,
        budget=budget.left,
        covered=covered,
    )


def _attach_remote(rows: pl.DataFrame, answers: dict[str, RemoteAnswer]) -> pl.DataFrame:
    table = pl.DataFrame(
        {
            "KEY": list(answers),
            "MAILBOX": [_failure(a) for a in answers.values()],
            "MAILBOX_REPLY": [a.error for a in answers.values()],
            "API_VERDICT": [a.verdict.value if a.verdict else None for a in answers.values()],
            "API_SCORE": [a.score if a.verdict else None for a in answers.values()],
            "API_KNOWN_BOUNCES": [a.known_bounces for a in answers.values()],
            "API_SUSPECTED_BOUNCES": [a.suspected_bounces for a in answers.values()],
        },
        schema=keyed_schema(
            "MAILBOX",
            "MAILBOX_REPLY",
            "API_VERDICT",
            "API_SCORE",
            "API_KNOWN_BOUNCES",
            "API_SUSPECTED_BOUNCES",
        ),
    )
    return _join_answers(rows, table)


def _failure(answer: RemoteAnswer) -> str | None:
    if answer.verdict is not None:
        return None
    code = answer.error.split(":", 1)[0]
    return code if code in (Mailbox.API_ERROR.value, Mailbox.NOT_VERIFIED.value) else None


def _attach(rows: pl.DataFrame, answers: dict[str, MailboxResult]) -> pl.DataFrame:
    table = pl.DataFrame(
        {
            "KEY": list(answers),
            "MAILBOX": [a.outcome.value for a in answers.values()],
            "MAILBOX_REPLY": [a.reply for a in answers.values()],
            "MAILBOX_AT": [a.at for a in answers.values()],
        },
        schema=keyed_schema("MAILBOX", "MAILBOX_REPLY", "MAILBOX_AT"),
    )
    return _join_answers(rows, table)


def _join_answers(rows: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    """Each row gets its address's answer by KEY, so duplicates get their first's answer;
    rows that were never probeable get nulls even when another row shares their key."""
    probeable = (pl.col("KEY") != "") & (pl.col("SYNTAX") == Syntax.OK.value)
    joined = rows.join(table, on="KEY", how="left", maintain_order="left")
    return joined.with_columns(
        pl.when(probeable).then(pl.col(c)).otherwise(None).alias(c)
        for c in table.columns
        if c != "KEY"
    )
