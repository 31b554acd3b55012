"""The decide step: from a row's answers (syntax, DNS, lists, mailbox, remote service, bounce
ledger) to the spec's fields, VERDICT, SCORE, REASON and DOMAIN_VERDICT, and the columns a
cleaned list adds (SAFE_TO_SEND, FREE_PROVIDER, DETAIL). The rules themselves are the reason
table in :mod:`pipeline.core.verdict`; this is where a row's columns become its reasons.
"""

from __future__ import annotations

import functools
from typing import Final

import polars as pl

from pipeline.core.addresses.repairs import Repair
from pipeline.core.addresses.syntax import Syntax
from pipeline.core.domains.dns import DnsStatus
from pipeline.core.mailboxes.types import Mailbox
from pipeline.core.schema import ADDRESS_COLUMNS, FEW_ROWS
from pipeline.core.verdict import (
    HELD_BACK,
    Partial,
    Reason,
    Verdict,
    flag_bits,
    judge,
    value_bits,
)


def with_address_columns(rows: pl.DataFrame) -> pl.DataFrame:
    """*rows* with every address-level column, null where the step did not fill it."""
    missing = {c: t for c, t in ADDRESS_COLUMNS.items() if c not in rows.columns}
    if not missing:
        return rows  # an empty with_columns is still a pass
    if rows.height > FEW_ROWS:
        return rows.with_columns(pl.lit(None, t).alias(c) for c, t in missing.items())
    # A few rows: ready columns cost less than an expression pass, and repeating one null
    # costs less than a column made from a list of them.
    return rows.hstack([_NULL[c].new_from_index(0, rows.height) for c in missing])


_NULL: Final = {c: pl.Series(c, [None], dtype=t) for c, t in ADDRESS_COLUMNS.items()}


# Reasons that belong to the domain alone: DOMAIN_VERDICT is judged from these.
DOMAIN_REASONS = frozenset(
    {
        Reason.NULL_MX,
        Reason.NO_DOMAIN,
        Reason.NO_MAIL_HOST,
        Reason.DNS_TIMEOUT,
        Reason.DNS_SERVFAIL,
        Reason.OFFLINE,
        Reason.RESOLVER_UNHEALTHY,
        Reason.IMPLICIT_MX,
        Reason.DISPOSABLE,
        Reason.TYPO_SUSPECTED,
    }
)
# The DNS answers and the syntax outcomes that are reasons of the same name (implicit_mx has
# its own rule: see reason_bits).
_DNS_REASONS = {
    s.value: Reason(s.value) for s in DnsStatus if s not in (DnsStatus.MX, DnsStatus.IMPLICIT_MX)
}
_REPAIR_REASONS = {r.value: Reason(r.value) for r in Repair}
_SYNTAX_REASONS = {
    s.value: Reason(s.value)
    for s in (
        Syntax.EMPTY,
        Syntax.INVALID,
        Syntax.DOMAIN_LITERAL,
        Syntax.COMMENT,
        Syntax.QUOTED_LOCAL,
        Syntax.SMTPUTF8,
    )
}
# Final address-level answers; each is also a reason code of the same name.
_MAILBOX_REASONS = {m.value: Reason(m.value) for m in Mailbox if m.is_final}
# A paid verifier's answer is a reason code itself (VENDOR_REASON).
_VENDOR_REASONS = {r.value: r for r in Reason}
# What the list's export says about consent (the CONSENT work column holds the code itself).
_CONSENT_REASONS = {r.value: r for r in HELD_BACK}


@functools.cache
def reason_bits() -> list[pl.Expr]:
    """Each row's reasons, as bit expressions (see :func:`pipeline.core.verdict.judge`): its
    syntax, its local part, its domain's DNS answer and lists, its mailbox's answer (SMTP or a
    remote service) and the bounce ledger. Built once: expressions are immutable."""
    # A mail server accepting the mailbox after the last hard bounce is newer evidence.
    lifted = (pl.col("MAILBOX") == Mailbox.OK.value) & (
        pl.col("MAILBOX_AT") > pl.col("LEDGER_LAST_HARD_AT")
    )
    # A mail server that accepted the mailbox (on a domain whose catch-all probe it refused)
    # answers the doubt an implicit MX raises: mail to the domain's A record is taken.
    implicit = (pl.col("DNS_STATUS") == DnsStatus.IMPLICIT_MX.value) & (
        pl.col("MAILBOX") != Mailbox.OK.value
    ).fill_null(True)
    return [
        value_bits(pl.col("SYNTAX"), _SYNTAX_REASONS),
        value_bits(pl.col("DNS_STATUS"), _DNS_REASONS),
        value_bits(pl.col("MAILBOX"), _MAILBOX_REASONS),
        value_bits(pl.col("VENDOR_REASON"), _VENDOR_REASONS),
        value_bits(pl.col("REPAIR"), _REPAIR_REASONS),
        value_bits(pl.col("CONSENT"), _CONSENT_REASONS),
        *flag_bits(
            {
                Reason.IMPLICIT_MX: implicit,
                Reason.ROLE: pl.col("ROLE"),
                Reason.DISPOSABLE: pl.col("DISPOSABLE"),
                Reason.TYPO_SUSPECTED: pl.col("SUGGESTED_DOMAIN") != "",
                Reason.API_VERIFIED: pl.col("API_VERDICT").is_not_null(),
                Reason.KNOWN_BOUNCE: pl.col("LEDGER_KNOWN") & ~lifted.fill_null(False),
                Reason.SUSPECTED_BOUNCES: pl.col("LEDGER_SUSPECTED"),
            }
        ),
    ]


def decide(rows: pl.DataFrame, *, domain_mode: bool = False) -> pl.DataFrame:
    """Add the spec's fields and REASON to rows that went through :func:`attach_domains`.

    SUGGESTION is the corrected full address, or the corrected domain in domain mode.
    """
    rows = with_address_columns(rows)  # domain mode, or rows that skipped check_addresses
    # Address-level columns no row has an answer in (the service's usual batch: no checker,
    # nothing in the ledger): what reads only those is the same on every row.
    absent = frozenset(c for c in ADDRESS_COLUMNS if rows.get_column(c).null_count() == rows.height)
    # The working column _REASONS stays: a pass to drop it costs more than carrying it to the
    # writer and the service, which select what they show.
    decided = judge(
        rows,
        _bits_without(absent),
        remote=("API_VERDICT", "API_SCORE"),
        # No domain answer (no usable domain): the domain is Invalid.
        partial={"DOMAIN_VERDICT": Partial(DOMAIN_REASONS, "DNS_STATUS", Verdict.INVALID)},
        also=_fields_without(domain_mode, absent),
    )
    if decided.get_column("MAILBOX").null_count() == decided.height:
        return decided  # no mailbox answer anywhere: no implicit MX was lifted
    # An accepted mailbox lifts implicit_mx from the address (reason_bits), not from the
    # domain: the domain's own DNS still points only at an A record, so it stays Risky.
    implicit = pl.col("DNS_STATUS") == DnsStatus.IMPLICIT_MX.value
    valid = pl.col("DOMAIN_VERDICT") == Verdict.VALID.value
    return decided.with_columns(
        DOMAIN_VERDICT=pl.when(implicit & valid)
        .then(pl.lit(Verdict.RISKY.value))
        .otherwise(pl.col("DOMAIN_VERDICT"))
    )


@functools.cache
def _bits_without(absent: frozenset[str]) -> list[pl.Expr]:
    """:func:`reason_bits` for rows whose *absent* columns are null on every row: a bit that
    reads only those is the same on every row, and left out when that is 0 (no reason), as
    an OR without it is the same. Each expression costs a fixed time on a service batch."""
    settled = [_settled(bit, absent) for bit in reason_bits()]
    kept = [bit for bit, value in settled if value != 0]
    return kept or [pl.lit(0, pl.UInt64)]


@functools.cache
def _fields_without(domain_mode: bool, absent: frozenset[str]) -> dict[str, pl.Expr]:
    """:func:`_spec_fields`, those that read only *absent* columns as the literal they are."""
    fields = _spec_fields(domain_mode)
    return {name: _settled(expr, absent)[0] for name, expr in fields.items()}


def _settled(expr: pl.Expr, absent: frozenset[str]) -> tuple[pl.Expr, object]:
    """*expr*, or the literal it is on rows where each column it reads is null, when it reads
    only *absent* columns (row-wise expressions: it is then that value on every row), and
    that value (None when *expr* stays)."""
    read = expr.meta.root_names()
    if not read or not set(read) <= absent:
        return expr, None
    null_row = pl.DataFrame([_NULL[c] for c in set(read)])
    value = null_row.select(expr).to_series()
    return pl.lit(value[0], value.dtype).alias(value.name), value[0]


@functools.cache
def _spec_fields(domain_mode: bool) -> dict[str, pl.Expr]:
    """The spec's fields that are not a verdict, from a row's columns (built once)."""
    # A corrected domain does not mend a broken local part: no suggestion for those.
    suggestion = (
        pl.when(pl.col("SYNTAX") != Syntax.INVALID.value)
        .then(pl.col("SUGGESTED_DOMAIN"))
        .fill_null("")
    )
    corrected = suggestion if domain_mode else pl.col("LOCAL") + "@" + suggestion
    return dict(
        MX=pl.col("MX").fill_null(""),
        # The ledger's word, the remote service's, and an SMTP answer of "disabled" or "full".
        HAS_SUSPECTED_BOUNCES=pl.any_horizontal(
            pl.col("LEDGER_SUSPECTED"),
            pl.col("API_SUSPECTED_BOUNCES"),
            pl.col("MAILBOX").is_in([Mailbox.DISABLED.value, Mailbox.FULL.value]),
            pl.col("VENDOR_REASON").is_in([Mailbox.DISABLED.value, Mailbox.FULL.value]),
        ).fill_null(False),
        LOCAL_PART_IS_SUSPECTED_ROLE_ADDRESS=pl.col("ROLE"),
        HAS_KNOWN_BOUNCES=pl.any_horizontal(
            pl.col("LEDGER_KNOWN"), pl.col("API_KNOWN_BOUNCES")
        ).fill_null(False),
        DOMAIN_IS_SUSPECTED_DISPOSABLE_ADDRESS=pl.col("DISPOSABLE").fill_null(False),
        # The address a broken cell holds, else a typo fix of the domain.
        SUGGESTION=pl.when(pl.col("REPAIRED") != "")
        .then(pl.col("REPAIRED"))
        .when(suggestion != "")
        .then(corrected)
        .otherwise(pl.lit("")),
    )


@functools.cache
def list_fields() -> dict[str, pl.Expr]:
    """The columns a cleaned list has beside the spec's, from a decided row's columns."""
    return dict(
        # Safe to send: a Valid address, once (the first row that has it), that its export
        # does not hold back (consent outranks deliverability).
        SAFE_TO_SEND=(pl.col("VERDICT") == Verdict.VALID.value)
        & ~pl.col("DUPLICATE")
        & pl.col("CONSENT").is_null(),
        FREE_PROVIDER=pl.col("FREE_PROVIDER").fill_null(False),
        DETAIL=detail(),
    )


def detail() -> pl.Expr:
    """What explains a decided row's answer in words: the parser's reason, else the mail
    server's words (or the paid verifier's own status), else why the domain was suggested
    another (the cleaned list's DETAIL, and what ``verify`` prints)."""
    return (
        pl.when(pl.col("SYNTAX_DETAIL") != "")
        .then(pl.col("SYNTAX_DETAIL"))
        .when(pl.col("MAILBOX_REPLY").fill_null("") != "")
        .then(pl.col("MAILBOX_REPLY"))
        .otherwise(pl.col("SUGGESTED_WHY").fill_null(""))
    )


_HELD_BACK_PATTERN = "(^|;)(" + "|".join(r.value for r in HELD_BACK) + ")(;|$)"


def held_back(reason: pl.Expr) -> pl.Expr:
    """Whether an output row is held back from sending, from its REASON: the rule the split
    files, the summary and the report share (SAFE_TO_SEND is false on every such row)."""
    return reason.str.contains(_HELD_BACK_PATTERN)
