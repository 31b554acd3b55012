"""Consent outranks deliverability: which rows a list's own export holds back from sending.

An export says in its columns (or, for a Mailchimp zip, in the member file a row comes from)
that a person unsubscribed, was cleaned, bounced, opted out, never consented or is not a
marketing contact. Such a row gets the reason code in the work column ``CONSENT``; the decide
step (:mod:`pipeline.core.decide`) puts it in REASON and keeps SAFE_TO_SEND false, whatever the
VERDICT. Both engines call :func:`consent_of` on every read batch, and hold an address back on
every row once one row holds it back (:mod:`pipeline.stages.steps`).

The columns recognized (headers compared as for the email column: without case, accents, spaces
or punctuation), first match wins, in this order:

- **Mailchimp**: a row of a zip's ``unsubscribed_…`` or ``cleaned_…`` member file (its
  ``SOURCE_FILE``); a value in ``UNSUB_TIME`` or ``CLEAN_TIME`` (the columns of those files).
- **Status columns** (Mailchimp's ``Status`` / ``Member Status`` / ``Email Marketing Status``,
  ``Subscription Status``, ``Email Status``): ``unsubscribed``, ``cleaned``, ``bounced``,
  ``opted out``, ``blocklisted`` or ``non-subscribed`` and the like.
- **Opt-out flags** (true, yes, 1, x): HubSpot's ``Unsubscribed from all email``, an
  ``Unsubscribed`` column; Salesforce's ``Email Opt Out`` (``HasOptedOutOfEmail``), Dynamics'
  ``Do Not Email``, Brevo's ``EMAIL_BLACKLISTED`` / ``Blocklisted``, an ``Opted Out`` column.
- **Bounce columns**: a value in Salesforce's ``Email Bounced Reason`` / ``Email Bounced Date``
  or HubSpot's ``Email hard bounce reason``; a true ``Email Bounced`` / ``Hard Bounced`` flag.
- **Suppression columns** (Klaviyo's ``Email Suppressions``, ``Suppression Reason``): any value;
  a bounce or an unsubscription is named as such.
- **Consent columns** (Klaviyo's ``Email Marketing Consent``, Shopify's ``Accepts Email
  Marketing``, ``Email Consent``, ``Marketing Consent``, ``Opt In``): a no, ``unsubscribed``,
  ``never subscribed``, ``pending``, ``revoked``, ``withdrawn``. An empty cell says nothing.
- **HubSpot's** ``Marketing contact status``: ``Non-marketing contact``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

import polars as pl

from pipeline.core.schema import SOURCE_COLUMN
from pipeline.core.verdict import Reason
from pipeline.stages.read.email_column import fold_header

CONSENT: Final = "CONSENT"  # the work column
_ANY: Final = "*"  # a value key: any non-empty value
_TRUE: Final = ("true", "yes", "y", "1", "t", "x", "on", "checked")

_U, _C, _B = Reason.UNSUBSCRIBED, Reason.CLEANED, Reason.BOUNCED
_O, _N, _M = Reason.OPTED_OUT, Reason.NO_CONSENT, Reason.NON_MARKETING


@dataclass(frozen=True)
class Signal:
    """Columns named one of *headers* whose folded value (lower case, letters and digits
    only) is a key of *values* say that reason; ``*`` stands for any non-empty value. With
    *words*, a value containing one of its keys says that reason, any other non-empty value
    *otherwise*."""

    headers: tuple[str, ...]
    values: Mapping[str, Reason]
    words: Mapping[str, Reason] | None = None
    otherwise: Reason | None = None

    @property
    def folded(self) -> frozenset[str]:
        return frozenset(fold_header(h) for h in self.headers)


def _flag(reason: Reason) -> dict[str, Reason]:
    return dict.fromkeys(_TRUE, reason)


_STATUS: Final = {
    "unsubscribed": _U,
    "unsubscribe": _U,
    "cleaned": _C,
    "bounced": _B,
    "hardbounced": _B,
    "hardbounce": _B,
    "optedout": _O,
    "optout": _O,
    "blocklisted": _O,
    "blacklisted": _O,
    "suppressed": _O,
    "complained": _O,
    "spamcomplaint": _O,
    "nonsubscribed": _N,
    "notsubscribed": _N,
    "neversubscribed": _N,
}
_NO_CONSENT: Final = {
    **dict.fromkeys(("false", "no", "n", "0", "f", "off", "none", "denied", "declined"), _N),
    **dict.fromkeys(("neversubscribed", "notsubscribed", "nonsubscribed", "pending"), _N),
    **dict.fromkeys(("unsubscribed", "unsubscribe"), _U),
    **dict.fromkeys(("revoked", "withdrawn", "optedout", "optout"), _O),
}

# In order: the first signal that speaks for a row gives its reason.
SIGNALS: Final = (
    Signal(("UNSUB_TIME",), {_ANY: _U}),
    Signal(("CLEAN_TIME",), {_ANY: _C}),
    Signal(
        (
            "Status",
            "Member Status",
            "Subscriber Status",
            "Subscription Status",
            "Email Status",
            "Email Marketing Status",
            "Email Marketing",
            "Email Subscription Status",
        ),
        _STATUS,
    ),
    Signal(("Unsubscribed from all email", "hs_email_optout", "Unsubscribed"), _flag(_U)),
    Signal(
        (
            "Email Opt Out",
            "Email Opt-Out",
            "HasOptedOutOfEmail",
            "Opted Out",
            "Opt Out",
            "Do Not Email",
            "DoNotEmail",
            "EMAIL_BLACKLISTED",
            "Email Blacklisted",
            "Blacklisted",
            "Email Blocklisted",
            "Blocklisted",
        ),
        _flag(_O),
    ),
    Signal(
        (
            "Email Bounced Reason",
            "EmailBouncedReason",
            "Email Bounced Date",
            "EmailBouncedDate",
            "Email hard bounce reason",
            "hs_email_hard_bounce_reason_enum",
        ),
        {_ANY: _B},
    ),
    Signal(("Email Bounced", "IsEmailBounced", "Hard Bounced", "Email Hard Bounced"), _flag(_B)),
    Signal(
        ("Email Suppressions", "Suppressions", "Suppression Reason", "Suppressed Reason"),
        {},
        words={"bounce": _B, "invalid": _B, "unsub": _U},
        otherwise=_O,
    ),
    Signal(
        (
            "Email Marketing Consent",
            "Email Consent",
            "Marketing Consent",
            "Consent",
            "Accepts Email Marketing",
            "Accepts Marketing",
            "Email Opt In",
            "Marketing Opt In",
            "Opt In",
        ),
        _NO_CONSENT,
    ),
    Signal(("Marketing contact status", "hs_marketable_status"), {"nonmarketingcontact": _M}),
)

# Mailchimp's audience export: one member file per audience state, named by it.
MEMBER_FILES: Final = {
    "unsubscribed_": _U,
    "cleaned_": _C,
    "nonsubscribed_": _N,
    "non_subscribed_": _N,
}


def consent_of(frame: pl.DataFrame) -> pl.Series:
    """The ``CONSENT`` work column of a read batch: a reason code where the export holds the
    row back from sending, null elsewhere (see the module's doc)."""
    said = list(_spoken(frame))
    if not said:
        return pl.Series(CONSENT, [None] * frame.height, dtype=pl.String)
    return frame.select(pl.coalesce(said).alias(CONSENT)).to_series()


def _spoken(frame: pl.DataFrame) -> Iterator[pl.Expr]:
    """One expression per column of *frame* that speaks about consent, in :data:`SIGNALS`'
    order (the member file first)."""
    text = {c: t for c, t in frame.schema.items() if not t.is_nested() and t != pl.Binary}
    member = _member_file(frame.get_column(SOURCE_COLUMN)) if SOURCE_COLUMN in text else None
    if member is not None:
        yield member
    folded = {c: fold_header(c) for c in text}
    for signal in SIGNALS:
        names = signal.folded
        for column, name in folded.items():
            if name in names:
                yield _said(signal, pl.col(column).cast(pl.String))


def _member_file(source: pl.Series) -> pl.Expr | None:
    """The reason of each row's member file, judged once per file (a zip has a few)."""
    said = {}
    for name in source.cast(pl.String).unique().drop_nulls().to_list():
        base = name.rsplit("/", 1)[-1].lower()
        for prefix, reason in MEMBER_FILES.items():
            if base.startswith(prefix):
                said[name] = reason.value
    if not said:
        return None
    column = pl.col(SOURCE_COLUMN).cast(pl.String)
    return column.replace_strict(said, default=None, return_dtype=pl.String)


def _said(signal: Signal, raw: pl.Expr) -> pl.Expr:
    """The reason *signal* gives each value of the column *raw*, null where none."""
    if _ANY in signal.values:
        filled = raw.str.strip_chars().fill_null("") != ""
        return pl.when(filled).then(pl.lit(signal.values[_ANY].value))
    value = raw.str.to_lowercase().str.replace_all(r"[\W_]+", "")
    if signal.words is not None:
        assert signal.otherwise is not None
        filled = value.fill_null("") != ""
        named = (
            pl.when(filled & value.str.contains(word, literal=True)).then(pl.lit(reason.value))
            for word, reason in signal.words.items()
        )
        return pl.coalesce(*named, pl.when(filled).then(pl.lit(signal.otherwise.value)))
    codes = {k: r.value for k, r in signal.values.items()}
    return value.replace_strict(codes, default=None, return_dtype=pl.String)
