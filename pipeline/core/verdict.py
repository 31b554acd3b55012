"""VERDICT, SCORE and REASON: one table, applied to domains and to addresses alike.

SCORE is our estimate of the probability that mail to the address is accepted. Each reason code
found on a row caps that estimate (``Rule.cap``) and sets the least verdict it allows; a few
codes only scale the score down (``PENALTIES``). A row's VERDICT is the worst verdict among its
reasons (Valid when it has none), and its SCORE is ``min(caps) * penalties`` clamped into the
verdict's band, so VERDICT and SCORE never contradict each other:

    Invalid: 0.00 ≤ SCORE < 0.30    Risky: 0.30 ≤ SCORE < 0.70    Valid: 0.70 ≤ SCORE ≤ 1.00

At the domain level no mailbox has been checked, so an address with a working MX and no other
reason scores ``UNVERIFIED_VALID``; one whose mailbox the mail server accepted scores
``VERIFIED_VALID``. Neither is 1.0: acceptance at RCPT is not delivery.
"""

from __future__ import annotations

import enum
import functools
import operator
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from pipeline.core.schema import FEW_ROWS


class Verdict(enum.StrEnum):
    VALID = "Valid"
    RISKY = "Risky"
    INVALID = "Invalid"


class Reason(enum.StrEnum):
    EMPTY = "empty"
    SYNTAX_INVALID = "syntax_invalid"
    DOMAIN_LITERAL = "domain_literal"
    COMMENT = "comment"
    QUOTED_LOCAL = "quoted_local"
    SMTPUTF8 = "smtputf8"
    NO_DOMAIN = "no_domain"
    NULL_MX = "null_mx"
    NO_MAIL_HOST = "no_mail_host"
    DNS_TIMEOUT = "dns_timeout"
    DNS_SERVFAIL = "dns_servfail"
    OFFLINE = "offline"
    RESOLVER_UNHEALTHY = "resolver_unhealthy"
    IMPLICIT_MX = "implicit_mx"
    DISPOSABLE = "disposable"
    TYPO_SUSPECTED = "typo_suspected"
    ROLE = "role"
    # Address level (SMTP): the values match pipeline.core.mailboxes.smtp.Mailbox.
    NO_SUCH_USER = "no_such_user"
    MAILBOX_DISABLED = "mailbox_disabled"
    MAILBOX_FULL = "mailbox_full"
    CATCH_ALL = "catch_all"
    GREYLISTED = "greylisted"
    SMTP_BLOCKED = "smtp_blocked"
    SMTP_SENDER_REFUSED = "smtp_sender_refused"
    SMTP_REFUSES_ALL = "smtp_refuses_all"
    SMTP_REJECTED = "smtp_rejected"
    SMTP_UNREACHABLE = "smtp_unreachable"
    SMTP_TIMEOUT = "smtp_timeout"
    PROVIDER_UNVERIFIABLE = "provider_unverifiable"
    API_ERROR = "api_error"
    KNOWN_BOUNCE = "known_bounce"
    SUSPECTED_BOUNCES = "suspected_bounces"
    MAILBOX_OK = "mailbox_ok"
    API_VERIFIED = "api_verified"
    NOT_VERIFIED_BUDGET = "not_verified_budget"
    # Address level (a paid verifier: pipeline.core.mailboxes.vendors).
    SPAMTRAP = "spamtrap"
    ABUSE = "abuse"
    DO_NOT_MAIL = "do_not_mail"
    LOW_QUALITY = "low_quality"
    VENDOR_UNKNOWN = "vendor_unknown"
    NOT_VERIFIED_CREDITS = "not_verified_credits"
    # A broken cell that holds an address: SUGGESTION has it (pipeline.core.addresses.repairs).
    FIXABLE_INVISIBLE = "fixable_invisible"
    FIXABLE_MAILTO = "fixable_mailto"
    FIXABLE_DISPLAY_NAME = "fixable_display_name"
    FIXABLE_SEVERAL = "fixable_several"
    FIXABLE_SPACES = "fixable_spaces"
    FIXABLE_COMMA = "fixable_comma"
    # Consent: what the list's own export says about the person (pipeline.stages.read.consent).
    UNSUBSCRIBED = "unsubscribed"
    CLEANED = "cleaned"
    BOUNCED = "bounced"
    OPTED_OUT = "opted_out"
    NO_CONSENT = "no_consent"
    NON_MARKETING = "non_marketing"


@dataclass(frozen=True)
class Rule:
    verdict: Verdict
    cap: float  # the highest SCORE a row with this reason can have
    meaning: str


RULES: Mapping[Reason, Rule] = {
    Reason.EMPTY: Rule(Verdict.INVALID, 0.0, "no address in the email column"),
    Reason.SYNTAX_INVALID: Rule(
        Verdict.INVALID, 0.0, "not an email address (RFC 5321/5322, see the syntax rules)"
    ),
    Reason.DOMAIN_LITERAL: Rule(
        Verdict.INVALID, 0.05, "user@[192.0.2.1]: legal in RFC 5321, refused by mail providers"
    ),
    Reason.COMMENT: Rule(Verdict.INVALID, 0.05, "RFC 5322 comment in the address: a header form"),
    Reason.NULL_MX: Rule(Verdict.INVALID, 0.01, "the domain publishes a null MX (RFC 7505)"),
    Reason.NO_DOMAIN: Rule(Verdict.INVALID, 0.02, "the domain does not exist (NXDOMAIN)"),
    Reason.NO_MAIL_HOST: Rule(Verdict.INVALID, 0.03, "the domain has no MX, A or AAAA record"),
    Reason.DISPOSABLE: Rule(Verdict.RISKY, 0.35, "a disposable / temporary mailbox provider"),
    Reason.TYPO_SUSPECTED: Rule(
        Verdict.RISKY, 0.40, "the domain looks like a typo of a popular one (see SUGGESTION)"
    ),
    Reason.QUOTED_LOCAL: Rule(
        Verdict.RISKY, 0.45, 'quoted local part ("john doe"@x): legal, rarely deliverable'
    ),
    Reason.DNS_TIMEOUT: Rule(Verdict.RISKY, 0.50, "DNS timed out after retries; not decided"),
    Reason.DNS_SERVFAIL: Rule(Verdict.RISKY, 0.50, "DNS failed (SERVFAIL/REFUSED); not decided"),
    Reason.OFFLINE: Rule(Verdict.RISKY, 0.50, "DNS checks were skipped (--offline)"),
    Reason.RESOLVER_UNHEALTHY: Rule(
        Verdict.RISKY, 0.50, "(service) the resolver was failing its health check; not decided"
    ),
    Reason.IMPLICIT_MX: Rule(
        Verdict.RISKY, 0.55, "no MX; mail would go to the domain's A/AAAA host (RFC 5321 §5.1)"
    ),
    Reason.NO_SUCH_USER: Rule(
        Verdict.INVALID, 0.02, "the mail server says the mailbox does not exist (5.1.1)"
    ),
    Reason.MAILBOX_DISABLED: Rule(Verdict.INVALID, 0.05, "the mailbox is disabled (5.2.1)"),
    # A vendor's word about what mail to the address would do to the sender, not whether it is
    # accepted: never Valid, so never SAFE_TO_SEND.
    Reason.SPAMTRAP: Rule(
        Verdict.INVALID, 0.02, "(vendor) a spam trap: mail to it harms the sender; never send"
    ),
    Reason.ABUSE: Rule(Verdict.RISKY, 0.30, "(vendor) a known complainer: marks mail as spam"),
    Reason.DO_NOT_MAIL: Rule(
        Verdict.RISKY, 0.30, "(vendor) on a do-not-mail list: a possible trap, a suppression"
    ),
    Reason.MAILBOX_FULL: Rule(Verdict.RISKY, 0.40, "the mailbox is full (4.2.2 / 5.2.2)"),
    Reason.SMTP_REJECTED: Rule(Verdict.RISKY, 0.40, "refused with a reply that says no more"),
    Reason.GREYLISTED: Rule(Verdict.RISKY, 0.50, "still deferred after every retry"),
    Reason.SMTP_BLOCKED: Rule(Verdict.RISKY, 0.50, "the server refused us by policy; not decided"),
    Reason.SMTP_SENDER_REFUSED: Rule(
        Verdict.RISKY,
        0.50,
        "the server refused our envelope sender or EHLO name, not the mailbox; not decided",
    ),
    Reason.SMTP_REFUSES_ALL: Rule(
        Verdict.RISKY,
        0.50,
        "the server refused every address alike, known ones too: a refusal of us; not decided",
    ),
    Reason.SMTP_UNREACHABLE: Rule(Verdict.RISKY, 0.50, "no mail host could be reached"),
    Reason.SMTP_TIMEOUT: Rule(Verdict.RISKY, 0.50, "the mail server did not answer in time"),
    Reason.KNOWN_BOUNCE: Rule(
        Verdict.INVALID, 0.05, "a hard bounce is on record, with no delivery since (ledger)"
    ),
    Reason.SUSPECTED_BOUNCES: Rule(
        Verdict.RISKY, 0.45, "repeated soft bounces, or a domain whose mailboxes bounce (ledger)"
    ),
    Reason.LOW_QUALITY: Rule(
        Verdict.RISKY, 0.45, "(vendor) risky for a reason the vendor does not give"
    ),
    Reason.VENDOR_UNKNOWN: Rule(Verdict.RISKY, 0.50, "(vendor) the paid verifier could not decide"),
    Reason.API_ERROR: Rule(
        Verdict.RISKY, 0.50, "the remote service gave no usable answer (error, malformed, partial)"
    ),
    Reason.CATCH_ALL: Rule(
        Verdict.RISKY, 0.60, "the domain accepts any address: 250 proves nothing"
    ),
    Reason.PROVIDER_UNVERIFIABLE: Rule(
        Verdict.RISKY, 0.65, "a provider that accepts every RCPT: not checkable by SMTP"
    ),
}

PENALTIES: Mapping[Reason, float] = {
    Reason.ROLE: 0.9,  # role mailboxes deliver, but to a team or a ticket queue
    Reason.SMTPUTF8: 0.9,  # needs SMTPUTF8 (RFC 6531) on every hop; not all servers have it
}

# Consent outranks deliverability: a row its export marks unsubscribed, cleaned, bounced or
# opted out is never SAFE_TO_SEND, whatever its VERDICT. These codes say why it is held back;
# VERDICT and SCORE stay what the checks found (the address may well be deliverable).
HELD_BACK: tuple[Reason, ...] = (
    Reason.UNSUBSCRIBED,
    Reason.CLEANED,
    Reason.BOUNCED,
    Reason.OPTED_OUT,
    Reason.NO_CONSENT,
    Reason.NON_MARKETING,
)

# Codes that inform without moving VERDICT or SCORE. not_verified_budget: the row keeps its
# domain-level verdict. mailbox_ok raises the ceiling instead (VERIFIED_VALID).
FLAGS_ONLY: tuple[Reason, ...] = (
    *HELD_BACK,
    Reason.FIXABLE_INVISIBLE,
    Reason.FIXABLE_MAILTO,
    Reason.FIXABLE_DISPLAY_NAME,
    Reason.FIXABLE_SEVERAL,
    Reason.FIXABLE_SPACES,
    Reason.FIXABLE_COMMA,
    Reason.MAILBOX_OK,
    Reason.API_VERIFIED,
    Reason.NOT_VERIFIED_BUDGET,
    Reason.NOT_VERIFIED_CREDITS,
)

UNVERIFIED_VALID = 0.90
# The mail server accepted the RCPT on a domain that is not catch-all, or a paid verifier says
# the mailbox exists (api_verified without a remote score of its own).
VERIFIED_VALID = 0.97
_VERIFIED = (Reason.MAILBOX_OK, Reason.API_VERIFIED)
BANDS: Mapping[Verdict, tuple[float, float]] = {
    Verdict.INVALID: (0.0, 0.29),
    Verdict.RISKY: (0.30, 0.69),
    Verdict.VALID: (0.70, 1.0),
}
_RANK = {Verdict.VALID: 0, Verdict.RISKY: 1, Verdict.INVALID: 2}
_BY_RANK = [Verdict.VALID, Verdict.RISKY, Verdict.INVALID]

# The order codes appear in REASON: why a row is held back first, then what decided, flags last.
REASON_ORDER: tuple[Reason, ...] = (
    *HELD_BACK,
    *RULES,
    *PENALTIES,
    *(r for r in FLAGS_ONLY if r not in HELD_BACK),
)


# Each reason is one bit of a row's reason set (REASON_ORDER: what decided first, flags last).
REASON_BITS: Mapping[Reason, int] = {r: 1 << i for i, r in enumerate(REASON_ORDER)}
assert len(REASON_BITS) < 64, "a row's reasons must fit one unsigned 64-bit integer"
_MASK = pl.UInt64


def flag_bits(flags: Mapping[Reason, pl.Expr]) -> list[pl.Expr]:
    """One bit expression per Boolean *flags* expression (null counts as false)."""
    return [
        pl.when(flag).then(pl.lit(REASON_BITS[r], _MASK)).otherwise(pl.lit(0, _MASK))
        for r, flag in flags.items()
    ]


def value_bits(column: pl.Expr, reasons: Mapping[str, Reason]) -> pl.Expr:
    """The bit of the reason *column*'s value stands for (0 for any other value or null):
    one expression where one Boolean flag per value would take several.

    The value's place among *reasons* is its code as an Enum of them (null for any other
    value), and the bit is taken from a table by that place. ``replace_strict`` does the same
    through a join: as fast on a list's batch, eight times slower on a service batch of 64
    rows (0.18 ms against 0.02 ms), where each expression's fixed cost is what counts."""
    values = list(reasons)
    table = pl.Series([REASON_BITS[reasons[v]] for v in values] + [0], dtype=_MASK)
    place = column.cast(pl.Enum(values), strict=False).to_physical().cast(pl.UInt32)
    return pl.lit(table).gather(place.fill_null(len(values)))


def reason_set(bits: list[pl.Expr]) -> pl.Expr:
    """A row's reason set from its bit expressions: their bitwise OR, so that two columns
    naming the same reason (a vendor's ``disposable`` and the shipped list's) set one bit."""
    return pl.reduce(operator.or_, [b.cast(_MASK) for b in bits])


@functools.lru_cache(maxsize=65_536)
def judge_one(
    mask: int, remote_verdict: str | None = None, remote_score: float | None = None
) -> tuple[str, float, str]:
    """VERDICT, SCORE and REASON of a row whose reasons are the bits of *mask*.

    A remote service's answer for the address (*remote_verdict*, *remote_score*; None where
    there is none) takes the place of the unverified ceiling and the penalties: the service
    has weighed the address already. The local reasons still set the least verdict, so local
    hard evidence is never overruled.
    """
    present = [r for r in REASON_ORDER if mask & REASON_BITS[r]]
    remote_rank = _RANK[Verdict(remote_verdict)] if remote_verdict in _VERDICTS else 0
    rank = max([remote_rank] + [_RANK[RULES[r].verdict] for r in present if r in RULES])
    answered = remote_score is not None
    ceiling = VERIFIED_VALID if any(r in present for r in _VERIFIED) else UNVERIFIED_VALID
    if remote_score is not None:
        ceiling = remote_score
    cap = min([ceiling] + [RULES[r].cap for r in present if r in RULES])
    factor = 1.0
    for r in present:
        if r in PENALTIES and not answered:
            factor *= PENALTIES[r]
    verdict = _BY_RANK[rank]
    low, high = BANDS[verdict]
    # Hundredths, ties to even on the scaled value: what the batch's polars gave before, so
    # scores do not move (0.45 * 0.9 is 0.4, not 0.41).
    score = round(min(max(cap * factor, low), high) * 100) / 100
    return verdict.value, score, ";".join(r.value for r in present)


_VERDICTS = frozenset(v.value for v in Verdict)


@dataclass(frozen=True)
class Partial:
    """The VERDICT of only some reasons (the domain's, from the domain's reasons), for rows
    where column *given* is not null; *otherwise* where it is."""

    reasons: frozenset[Reason]
    given: str
    otherwise: Verdict


def judge(
    frame: pl.DataFrame,
    bits: list[pl.Expr],
    remote: tuple[str, str] | None = None,
    partial: Mapping[str, Partial] | None = None,
    also: Mapping[str, pl.Expr] | None = None,
) -> pl.DataFrame:
    """*frame* with VERDICT, SCORE and REASON (and ``_REASONS``, the reason set as bits).

    *bits* are expressions whose bitwise OR is each row's reason set; *remote* names the
    verdict and score columns of a remote service's answer. *partial* adds, per name, the
    VERDICT of only some reasons (see :class:`Partial`). The rules run once per
    distinct (reason set, remote answer), in :func:`judge_one`, and join back: a list has a
    few hundred such combinations, whatever its length. *also* are columns to add in the
    same pass (one pass costs less than two).
    """
    keyed = frame.with_columns(_REASONS=reason_set(bits), **(also or {}))
    partial = partial or {}
    parts = {name: sum(REASON_BITS[r] for r in p.reasons) for name, p in partial.items()}
    if remote is None or all(keyed.get_column(c).null_count() == keyed.height for c in remote):
        return _judged_by_reasons(keyed, parts, partial)
    keys = ["_REASONS", *remote]
    judged = [
        (*key, *judge_one(*key), *(judge_one(key[0] & part)[0] for part in parts.values()))
        for key in keyed.select(keys).unique().rows()
    ]
    schema = {k: keyed.schema[k] for k in keys} | {
        "VERDICT": pl.String,
        "SCORE": pl.Float64,
        "REASON": pl.String,
        **dict.fromkeys(parts, pl.String),
    }
    table = pl.DataFrame(judged, schema=schema, orient="row")
    joined = keyed.join(table, on=keys, how="left", nulls_equal=True, maintain_order="left")
    return joined.with_columns(
        _only_given(pl.col(name), p).alias(name) for name, p in partial.items()
    )


def _only_given(verdict: pl.Expr, part: Partial) -> pl.Expr:
    return (
        pl.when(pl.col(part.given).is_not_null())
        .then(verdict)
        .otherwise(pl.lit(part.otherwise.value))
    )


def _judged_by_reasons(
    keyed: pl.DataFrame, parts: Mapping[str, int], partial: Mapping[str, Partial]
) -> pl.DataFrame:
    """:func:`judge` without remote answers: the reason set alone is the key, and a lookup
    per column costs less than a join."""
    reasons = keyed.get_column("_REASONS")
    few = reasons.len() <= FEW_ROWS
    each = reasons.to_list() if few else []
    masks = list(dict.fromkeys(each)) if few else reasons.unique().sort().to_list()
    judged = {mask: judge_one(mask) for mask in masks}
    columns: dict[str, tuple[dict[int, object], type[pl.DataType]]] = {
        "VERDICT": ({m: j[0] for m, j in judged.items()}, pl.String),
        "SCORE": ({m: j[1] for m, j in judged.items()}, pl.Float64),
        "REASON": ({m: j[2] for m, j in judged.items()}, pl.String),
        **{
            name: ({m: judge_one(m & part)[0] for m in masks}, pl.String)
            for name, part in parts.items()
        },
    }
    if few:  # a few rows: each row's values looked up here cost less than a pass of lookups,
        # and the columns set one after another less than handed to the thread pool together
        ready = {n: pl.lit(pl.Series(n, [m[r] for r in each], t)) for n, (m, t) in columns.items()}
        return keyed.with_columns_seq(
            (_only_given(value, partial[name]) if name in partial else value).alias(name)
            for name, value in ready.items()
        )
    # Each row's place among the masks is looked up once, and each column's values are taken
    # by it (a lookup a column cost twice as much). The masks are sorted: a binary search
    # finds the place (250,000 rows: 0.7 ms, against 2.3 ms for replace_strict's join). An
    # empty frame has no masks: a null of each column's type.
    place = pl.Series(masks, dtype=_MASK).search_sorted(reasons)
    looked_up = {
        name: pl.lit(pl.Series(name, [mapping[m] for m in masks], dtype).gather(place))
        if mapping
        else pl.lit(None, dtype)
        for name, (mapping, dtype) in columns.items()
    }
    return keyed.with_columns(
        (_only_given(value, partial[name]) if name in partial else value).alias(name)
        for name, value in looked_up.items()
    )
