"""The address-level step on frames: which rows to check, in what order, and joining answers back.

Only distinct addresses that still need an answer are probed: not duplicates, not malformed,
not on dead domains, not answered in the mailbox cache within the answer's lifetime. The budget
goes first to the addresses never answered, and among them to those on domains that look good
(a working MX, not disposable, not a suspected typo), largest domains first, so a limited budget
goes where it tells the most; then to the answers that are due again, the oldest first (by when
they were learned: :func:`refresh_order`). A due answer the budget does not reach is still
shown, its age in DETAIL (:func:`stale_note`). The budget is shared out before any probe is
sent, in that order, so which addresses a run reaches does not depend on timing: a run killed
and started again reaches the same ones.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence

import polars as pl

from pipeline.core.addresses.syntax import Syntax
from pipeline.core.domains.dns import DnsStatus
from pipeline.core.mailboxes.types import (
    Budget,
    CheckKind,
    Mailbox,
    MailboxResult,
    Pace,
    Plan,
    Refresh,
    RemoteAnswer,
    Target,
)
from pipeline.core.schema import keyed_schema

# Rows whose address is worth an address-level check (one per distinct address).
PROBEABLE = (
    ~pl.col("DUPLICATE")
    & (pl.col("KEY") != "")
    # RCPT with a non-ASCII local part needs SMTPUTF8 on the far side: not probed.
    & (pl.col("SYNTAX") == Syntax.OK.value)
    & pl.col("DNS_STATUS").is_in([DnsStatus.MX.value, DnsStatus.IMPLICIT_MX.value])
)


def probe_order(rows: pl.DataFrame) -> pl.DataFrame:
    """The probeable rows, one per address, best-informing first."""
    candidates = rows.lazy().with_row_index("_row").filter(PROBEABLE)
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
        .select("KEY", "EMAIL", "DOMAIN", "DNS_STATUS", _delivered(rows))
        .collect()
    )


def _delivered(rows: pl.DataFrame) -> pl.Expr:
    """Whether the bounce ledger has a delivery to the address since its last hard bounce."""
    if "LEDGER_DELIVERED" not in rows.columns:  # the ledger flagged nothing in this frame
        return pl.lit(False).alias("LEDGER_DELIVERED")
    return pl.col("LEDGER_DELIVERED").fill_null(False)


def mail_hosts(rows: pl.DataFrame) -> dict[str, str]:
    """Each domain's best mail host (the MX column; the domain itself for an implicit MX)."""
    if "MX" not in rows.columns:
        return {}
    return dict(rows.select("DOMAIN", "MX").unique("DOMAIN").iter_rows())


def refresh_order(
    ordered: pl.DataFrame, fresh: Collection[str], due: Mapping[str, float | None]
) -> tuple[list[Target], int]:
    """The rows of :func:`probe_order` that a run may ask about, in the order its budget goes
    to them, and how many of them have a due answer: every address without an answer (in
    probe order), then those whose kept answer is past its lifetime (*due*: key -> when it
    was learned), the oldest first. An answer within its lifetime (*fresh*) is never asked
    again."""
    never: list[Target] = []
    stale: list[tuple[float, int, Target]] = []
    for key, email, domain, status, delivered in ordered.iter_rows():
        if key in fresh:
            continue
        target = Target(key, email, domain, DnsStatus(status), known_to_exist=delivered)
        if key in due:
            stale.append((due[key] or 0.0, len(stale), target))
        else:
            never.append(target)
    stale.sort(key=lambda item: item[:2])
    return never + [target for _, _, target in stale], len(stale)


def stale_note(learned: float | None, now: float) -> str:
    """What DETAIL says of a due answer shown because the budget did not reach it again."""
    if learned is None:
        return "a kept answer past its lifetime; this run's budget did not refresh it"
    days = max(0, int((now - learned) // 86400))
    when = dt.datetime.fromtimestamp(learned, dt.UTC).strftime("%Y-%m-%d")
    return (
        f"answered {when}, {days} day{'s' if days != 1 else ''} ago: due again, and this "
        "run's budget did not refresh it"
    )


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


def share_out(
    targets: Sequence[Target], budget: Budget, quota_left: int | None
) -> tuple[list[Target], list[Target]]:
    """One request per address, in priority order, within the run's budget and the quota."""
    limits = [n for n in (quota_left, budget.left) if n is not None]
    if not limits:
        return list(targets), []
    n = max(0, min(limits))
    return list(targets[:n]), list(targets[n:])


def plan(
    kind: CheckKind,
    rows: pl.DataFrame,
    need: int,
    cached: int,
    budget: Budget,
    covered: int,
    pace: Pace | None = None,
    refresh: Refresh | None = None,
) -> Plan:
    return Plan(
        kind=kind,
        distinct_addresses=rows.filter(pl.col("KEY") != "").get_column("KEY").n_unique(),
        need_checks=need,
        cached=cached,
        budget=budget.left,
        covered=covered,
        pace=pace,
        refresh=refresh,
    )


def attach_remote_answers(rows: pl.DataFrame, answers: dict[str, RemoteAnswer]) -> pl.DataFrame:
    table = pl.DataFrame(
        {
            "KEY": list(answers),
            "MAILBOX": [_failure(a) for a in answers.values()],
            "MAILBOX_REPLY": [a.error or a.note for a in answers.values()],
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
    return join_answers(rows, table)


def _failure(answer: RemoteAnswer) -> str | None:
    if answer.verdict is not None:
        return None
    code = answer.error.split(":", 1)[0]
    return code if code in (Mailbox.API_ERROR.value, Mailbox.NOT_VERIFIED.value) else None


def attach_mailbox_answers(rows: pl.DataFrame, answers: dict[str, MailboxResult]) -> pl.DataFrame:
    table = pl.DataFrame(
        {
            "KEY": list(answers),
            "MAILBOX": [a.outcome.value for a in answers.values()],
            "MAILBOX_REPLY": [a.reply for a in answers.values()],
            "MAILBOX_AT": [a.at for a in answers.values()],
        },
        schema=keyed_schema("MAILBOX", "MAILBOX_REPLY", "MAILBOX_AT"),
    )
    return join_answers(rows, table)


def join_answers(rows: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    """Each row gets its address's answer by KEY, so duplicates get their first's answer;
    rows that were never probeable get nulls even when another row shares their key."""
    probeable = (pl.col("KEY") != "") & (pl.col("SYNTAX") == Syntax.OK.value)
    joined = rows.join(table, on="KEY", how="left", maintain_order="left")
    return joined.with_columns(
        pl.when(probeable).then(pl.col(c)).otherwise(None).alias(c)
        for c in table.columns
        if c != "KEY"
    )
