"""The address-level step on frames: which rows to check, in what order, and joining answers back.

Only distinct addresses that still need an answer are probed: not duplicates, not malformed,
not on dead domains, not answered in the mailbox cache within the answer's lifetime. The budget
goes first to the addresses never answered, and among them to those on domains that look good
(a working MX, not disposable, not a suspected typo), largest domains first, so a limited budget
goes where it tells the most; then to the answers that are due again, the oldest first
(:func:`refresh_order`). A due answer the budget does not reach is still shown, its age in
DETAIL (:func:`stale_note`). The budget is shared out before any probe is sent, in that order,
so which addresses a run reaches does not depend on timing: a run killed and started again
reaches the same ones.

The order and the share-out are rules on domains: addresses never answered are ranked by their
domain (:data:`RANK`) and then by row; the due answers by their domain's oldest due answer
(then :data:`RANK`), and within a domain by when each was learned, then by row. So the
addresses of one domain are next to each other in either part, and the budget reaches a
prefix of that order (:func:`cut`). Both can be computed from one tally per domain (how many
addresses, its first row, how many the cache does not answer, how many are due and the oldest
of them), which is how a Dask run shares out its budget without gathering its addresses
anywhere. During probing each reached domain may spend what the share-out gave it, and its
share of what the share-out left over (:func:`allowances`): what a domain spends beyond its
addresses (a 452 that sends the rest to a new session, a greylisting retry) never takes what
another domain was given, so which addresses get an answer does not depend on which domain is
faster, nor on which process probes which domain.
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


# A domain that looks good (a working MX, not disposable, no suspected typo) tells the most.
GOOD_DOMAIN = (
    (pl.col("DNS_STATUS") == DnsStatus.MX.value)
    & ~pl.col("DISPOSABLE")
    & (pl.col("SUGGESTED_DOMAIN") == "")
)
# Domains in probing order: good ones first, then the largest (_size: its candidates), then
# the first seen (_first: its first candidate's row).
RANK = (("_good", True), ("_size", True), ("_first", False))


def probe_order(rows: pl.DataFrame) -> pl.DataFrame:
    """The probeable rows, one per address, best-informing first."""
    candidates = rows.lazy().with_row_index("_row").filter(PROBEABLE)
    keys = [*(k for k, _ in RANK), "_row"]
    return (
        candidates.with_columns(
            _good=GOOD_DOMAIN,
            _size=pl.len().over("DOMAIN"),
            _first=pl.col("_row").min().over("DOMAIN"),
        )
        .sort(keys, descending=[*(d for _, d in RANK), False])
        .select("KEY", "EMAIL", "DOMAIN", "DNS_STATUS", _delivered(rows))
        .collect()
    )


def rank_domains(tallies: pl.DataFrame) -> pl.DataFrame:
    """Per-domain tallies (DOMAIN, _good, _size, _first, ...) in :func:`probe_order`'s order."""
    return tallies.sort([k for k, _ in RANK], descending=[d for _, d in RANK])


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
    was learned), domain by domain, the domain with the oldest due answer first (ties in
    probe order), and within a domain the oldest first (ties by row). An answer within its
    lifetime (*fresh*) is never asked again."""
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
    oldest: dict[str, tuple[float, int]] = {}
    for at, place, target in stale:  # in probe order: a domain's place is its first's
        held = oldest.get(target.domain)
        oldest[target.domain] = (min(at, held[0]), held[1]) if held else (at, place)
    stale.sort(key=lambda item: (*oldest[item[2].domain], item[0], item[1]))
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


def runs_of(targets: Sequence[Target]) -> list[tuple[str, int]]:
    """*targets* (in priority order) as runs of one domain: (domain, how many)."""
    runs: list[tuple[str, int]] = []
    for target in targets:
        if runs and runs[-1][0] == target.domain:
            runs[-1] = (target.domain, runs[-1][1] + 1)
        else:
            runs.append((target.domain, 1))
    return runs


def cut(runs: Sequence[tuple[str, int]], left: int | None, known_catch_all: set[str]) -> list[int]:
    """How many addresses of each run (domain, addresses, in priority order) the budget's
    *left* reaches: a prefix of the order.

    Each address costs one RCPT, and the first address of a domain whose catch-all behaviour is
    not known costs one more (the random local part). The first address that does not fit
    ends the share-out.
    """
    if left is None:
        return [n for _, n in runs]
    reached: list[int] = []
    counted = set(known_catch_all)
    for domain, n in runs:
        first = 1 + (domain not in counted)
        if n == 0 or first > left:
            taken = 0 if first > left else n
        else:
            taken = min(n, left - first + 1)
            counted.add(domain)
        left -= taken + (first - 1 if taken else 0)
        reached.append(taken)
        if taken < n:
            return reached + [0] * (len(runs) - len(reached))
    return reached


def allocate(
    targets: Sequence[Target], budget: Budget, known_catch_all: set[str]
) -> tuple[list[Target], list[Target]]:
    """Split *targets* (in priority order) into those the budget reaches and the rest
    (:func:`cut`)."""
    taken = sum(cut(runs_of(targets), budget.left, known_catch_all))
    return list(targets[:taken]), list(targets[taken:])


def allowances(
    reached: Sequence[tuple[str, int]], left: int | None, known_catch_all: set[str]
) -> dict[str, int] | None:
    """What each reached domain may spend while it is probed (None: no limit): what the
    share-out gave it (its addresses, and its catch-all probe unless that is known), and a
    share of what the share-out left over, in proportion to that (what does not divide evenly
    going to the first domains in priority order). *reached*: (domain, addresses reached) in
    priority order."""
    if left is None:
        return None
    given: dict[str, int] = {}
    for domain, n in reached:
        if n:
            probe = domain not in known_catch_all and domain not in given
            given[domain] = given.get(domain, 0) + n + probe
    planned = sum(given.values())
    rest = max(0, left - planned)
    if not planned or not rest:
        return given
    extra = {d: rest * cost // planned for d, cost in given.items()}
    over = rest - sum(extra.values())
    return {d: cost + extra[d] + (i < over) for i, (d, cost) in enumerate(given.items())}


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
    return join_answers(rows, remote_table(answers))


def remote_table(answers: Mapping[str, RemoteAnswer]) -> pl.DataFrame:
    """A remote API's answers by KEY, as the rows get them."""
    return pl.DataFrame(
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


def _failure(answer: RemoteAnswer) -> str | None:
    if answer.verdict is not None:
        return None
    code = answer.error.split(":", 1)[0]
    return code if code in (Mailbox.API_ERROR.value, Mailbox.NOT_VERIFIED.value) else None


def attach_mailbox_answers(rows: pl.DataFrame, answers: dict[str, MailboxResult]) -> pl.DataFrame:
    return join_answers(rows, mailbox_table(answers))


def mailbox_table(answers: Mapping[str, MailboxResult]) -> pl.DataFrame:
    """SMTP answers by KEY, as the rows get them."""
    return pl.DataFrame(
        {
            "KEY": list(answers),
            "MAILBOX": [a.outcome.value for a in answers.values()],
            "MAILBOX_REPLY": [a.reply for a in answers.values()],
            "MAILBOX_AT": [a.at for a in answers.values()],
        },
        schema=keyed_schema("MAILBOX", "MAILBOX_REPLY", "MAILBOX_AT"),
    )


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
