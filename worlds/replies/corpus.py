"""A corpus of real SMTP replies: the text, the stage it comes at, and what it truly means.

Collected from mail server documentation (Postfix, Exim, Sendmail, qmail, Exchange), provider
error references (Gmail, Microsoft, Yahoo), published bounce reports and server logs, and the
observed-reply lists of open-source verifiers; every row names its source. The rows live in
:mod:`worlds.replies.mta`, :mod:`worlds.replies.providers` and below (the
wordings many small servers share). Types: :mod:`worlds.replies.types`.

The corpus feeds the evaluation world (:mod:`worlds.evaluation.world`), whose servers send
these texts, and is the table a reply classifier can be checked against: the same words
("rejected", "not found", "unrouteable", "access denied") mean "no such user" in one reply and
"we refuse *you*" in another, and the stage matters (``550 User unknown`` in answer to MAIL FROM
is about our sender, not about the recipient).
"""

from __future__ import annotations

from collections.abc import Iterable

from worlds.replies.mta import MTA_REPLIES
from worlds.replies.providers import PROVIDER_REPLIES
from worlds.replies.types import CorpusReply, Meaning, Stage, entry

__all__ = ["CORPUS", "CorpusReply", "Meaning", "Stage", "by_key", "select"]

_REACHER = "check-if-email-exists core/src/smtp/parser.rs (reacherhq), observed replies"
_SEEN = "verifier reports of servers that refuse the probe's envelope sender at MAIL FROM"

# Wordings shared by many small servers and hosting platforms, mostly from the observed-reply
# comments of check-if-email-exists (with the domains they were seen on).
_GENERIC: tuple[CorpusReply, ...] = (
    entry("generic.no_such_person", "550 No such person at this address", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER + " (aconsa.com.mx)"),
    entry("generic.could_not_be_found",
          "550 5.1.1 <{rcpt}>: Email address could not be found, or was misspelled (G8)",
          Stage.RCPT, Meaning.NO_SUCH_USER, _REACHER + " (biotech-calendar.com)"),
    entry("generic.not_handled", "550 E-mail address is not handled by this system", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER + " (kaimayfair.co.uk)"),
    entry("generic.recipient_is_not_exist", "550 5.1.1 recipient is not exist", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER + " (sim.com)"),
    entry("generic.dosnt_exist", "550 RCPT (<{rcpt}>) dosn't exist", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER + " (stigpods.com.cn)"),
    entry("generic.address_error", "550 5.1.1 <{rcpt}> Address Error", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER + " (lucidity.co.za)"),
    entry("generic.recipient_not_found", "550 5.1.1 <{rcpt}>  Recipient not found.", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER + " (4polymer.com)"),
    entry("generic.mailbox_is_unavailable",
          "550 5.5.0 Requested actions not taken as the mailbox is unavailable", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER + " (etu.uca.fr)"),
    entry("generic.no_such_user_pp", "550 5.1.1 No such user - pp", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER),
    entry("generic.recipient_unknown", "550 5.1.1 Recipient unknown <{rcpt}>", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER),
    entry("generic.unknown_recipient_address", "550 5.1.1 Unknown recipient address",
          Stage.RCPT, Meaning.NO_SUCH_USER, _REACHER),
    entry("generic.mailbox_not_found", "550 5.1.1 <{rcpt}>: Mailbox not found", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER),
    entry("generic.invalid_mailbox", "550 5.1.1 <{rcpt}>: Invalid mailbox", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER),
    entry("generic.not_a_valid_mailbox", "550 5.1.1 Is not a valid mailbox", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER),
    entry("generic.no_such_recipient", "550 No such recipient here", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER),
    entry("generic.no_such_mailbox", "550 5.2.0 No such mailbox", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER),
    entry("generic.invalid_address", "550 invalid address", Stage.RCPT, Meaning.NO_SUCH_USER,
          _REACHER),
    entry("generic.invalid_email_rcpt", "550 5.1.1 Invalid email address", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER),
    entry("generic.user_unknown_rcpt", "550 User unknown", Stage.RCPT, Meaning.NO_SUCH_USER,
          _REACHER),
    entry("generic.address_rejected", "550 Address rejected", Stage.RCPT, Meaning.NO_SUCH_USER,
          _REACHER),
    entry("generic.may_not_exist", "550 5.1.1 The recipient may not exist", Stage.RCPT,
          Meaning.NO_SUCH_USER, _REACHER + " ('may not exist')"),
    entry("generic.too_many_messages", "552 5.2.2 user has too many messages on the server",
          Stage.RCPT, Meaning.FULL, _REACHER),
    entry("generic.over_quota", "552 5.2.2 <{rcpt}>: user is over quota", Stage.RCPT,
          Meaning.FULL, _REACHER + " ('over quota')"),
    entry("generic.account_inactive", "550 5.2.1 <{rcpt}>: this account is inactive",
          Stage.RCPT, Meaning.DISABLED, _REACHER + " ('inactive')"),
    entry("generic.account_suspended", "550 5.2.1 {rcpt}: mailbox suspended", Stage.RCPT,
          Meaning.DISABLED, _REACHER + " ('disabled')"),
    # The probe's sender refused at MAIL FROM, in words that elsewhere mean "no such user".
    entry("mailfrom.user_unknown", "550 User unknown", Stage.MAIL, Meaning.SENDER_REFUSED,
          _SEEN + " (sender callout failed)"),
    entry("mailfrom.invalid_email", "550 5.1.1 Invalid email address", Stage.MAIL,
          Meaning.SENDER_REFUSED, _SEEN),
    entry("mailfrom.address_rejected", "553 5.1.8 <{sender}>: Sender address rejected: "
          "Domain not found", Stage.MAIL, Meaning.SENDER_REFUSED,
          "Postfix with smtpd_delay_reject = no (reject_unknown_sender_domain at MAIL FROM)"),
    entry("mailfrom.non_fqdn", "501 5.5.2 <{sender}>: Sender address rejected: need "
          "fully-qualified address", Stage.MAIL, Meaning.SENDER_REFUSED,
          "Postfix with smtpd_delay_reject = no (reject_non_fqdn_sender)"),
    entry("mailfrom.bad_syntax", "501 5.1.7 Bad sender address syntax", Stage.MAIL,
          Meaning.SENDER_REFUSED, "Postfix smtpd(8) MAIL FROM syntax reply"),
)  # fmt: skip

CORPUS: tuple[CorpusReply, ...] = (*MTA_REPLIES, *PROVIDER_REPLIES, *_GENERIC)
_BY_KEY = {reply.key: reply for reply in CORPUS}


def by_key(key: str) -> CorpusReply:
    """The corpus reply named ``key`` (``family.name``); KeyError naming it otherwise."""
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"no corpus reply {key!r}") from None


def select(
    *,
    stage: Stage | None = None,
    meanings: Iterable[Meaning] | None = None,
    families: Iterable[str] | None = None,
) -> tuple[CorpusReply, ...]:
    """The corpus rows at ``stage`` with one of ``meanings`` from one of ``families``."""
    wanted = frozenset(meanings) if meanings is not None else None
    family_set = frozenset(families) if families is not None else None
    return tuple(
        reply
        for reply in CORPUS
        if (stage is None or reply.stage is stage)
        and (wanted is None or reply.meaning in wanted)
        and (family_set is None or reply.family in family_set)
    )
