"""What an SMTP reply says about a mailbox: its stage and code class first, then its words.

Deleting a real customer is the worst mistake a list cleaner can make, so only a reply that
speaks of the recipient can make an address Invalid. The order of the questions:

1. **The stage.** Nothing said before RCPT (the greeting, EHLO/HELO, MAIL FROM) is about the
   mailbox: "550 User unknown" in answer to MAIL FROM is about *our* sender (RFC 5321 §3.3).
2. **A provider's documented quirk** (:data:`QUIRKS`), matched on the exchange's name.
3. **The code class.** A 4xx is transient (RFC 5321 §4.2.1, RFC 3463 §2): it may say "full" or
   "too many recipients", never that a mailbox is gone. 421 closes the connection (§3.8).
4. **The enhanced status code** (RFC 3463). X.1.7 and X.1.8 are about the sender, X.7.x about
   security or policy: never "no such user". X.1.1 and X.1.10 (RFC 7505) are, unless the
   words speak only of us ("5.1.1 sender IP blocked"); X.2.1 is "disabled" when permanent;
   X.2.2 and a bare 552 (RFC 5321 §4.2.3) are storage.
5. **Words**, only when the code says nothing precise (no code, or an "other" detail X.Y.0, or a
   protocol code X.5.Y): words about our sender or our host come first, and only words that
   name the recipient (its user, mailbox or account) make it "no such user".

A reply that names our MAIL FROM address and not the recipient is about our sender whatever
its code: Exim's sender verification quotes the callout's "550 5.1.1 ... User unknown" for
*our* address.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.core.mailboxes.types import Mailbox
from pipeline.core.status_codes import leading_status, status_subject


class Stage(enum.StrEnum):
    """The command a reply answers (RFC 5321 §3)."""

    GREETING = "greeting"
    HELLO = "hello"  # EHLO or HELO
    MAIL = "mail"
    RCPT = "rcpt"


@dataclass(frozen=True)
class Reply:
    """One reply, with what it answered: the stage, our sender, the recipient, the exchange."""

    code: int
    message: str
    stage: Stage = Stage.RCPT
    sender: str = ""  # our MAIL FROM address
    recipient: str = ""  # the RCPT TO address, at the RCPT stage
    exchange: str = ""  # the MX host's name (not its address)

    @property
    def enhanced(self) -> str:
        """The RFC 3463 code: leading (RFC 2034 §3), or qmail's trailing "(#5.1.1)"."""
        found = leading_status(self.message)
        if found:
            return found
        qmail = _QMAIL_CODE.search(self.message)
        return qmail.group(1) if qmail else ""

    @property
    def text(self) -> str:
        return f"{self.code} {self.message}".strip()


_QMAIL_CODE = re.compile(r"\(#([245]\.\d{1,3}\.\d{1,3})\b")


def _words(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(patterns), re.IGNORECASE)


# About us as a sender: the MAIL FROM address, its domain, SPF, or our EHLO name.
_SENDER = _words(
    r"sender address rejected",
    r"sender verify",
    r"verification failed for",
    r"invalid sender",
    r"(domain of )?sender (address|domain)",
    r"envelope sender",
    r"\bspf\b",
    r"helo command rejected",
    r"invalid (e?hlo|helo) argument",
    r"\be?hlo\b.*\b(rejected|invalid|not fully|fully.qualified)",
)
# About our connecting host (its address, reputation, reverse DNS) or a policy against us.
_HOST = _words(
    r"client host",
    r"\bblock",  # blocked, block list, blocklisted
    r"black ?list",
    r"\blisted\b",
    r"\b(rbl|dnsbl|dnsbls)\b",
    r"spam",
    r"reputation",
    r"policy",
    r"prohibit",
    r"not (authori[sz]ed|authenticated)",
    r"administratively",
    r"reverse (dns|hostname)",
    r"your (ip|location|hostname)",
    r"\bip\b.*\b(banned|not accepted)",
    r"relay",
    r"rcpthosts",
    r"access denied",
    r"not permitted",
)
_GREYLISTED = _words(r"greylist", r"graylist", r"try (again )?later", r"come back later")
_TOO_MANY = _words(r"too many recipients")
_FULL = _words(
    r"over ?quota",
    r"quota exceeded",
    r"mailbox (is )?full",
    r"exceeded storage",
    r"(insufficient|out of) storage",
    r"too many messages",
)
_DISABLED = _words(
    r"\b(account|mailbox|user)\b[^.]*\b(disabled|inactive|suspended|deactivated|frozen|"
    r"discontinued|terminated)\b",
)
# Only words that speak of the recipient: its user, mailbox, account or address.
_NO_SUCH_USER = _words(
    r"user unknown",
    r"unknown (user|recipient|local.part)",
    r"no such (user|mailbox|recipient|person|account)",
    r"\b(user|mailbox|recipient|account|rcpt)\b[^\n]{0,80}\b(does not|doesn't|dosn'?t|not) exist",
    r"(recipient|mailbox|user|account) (not found|unknown)",
    r"mailbox [^ ]+ unknown",
    r"user not found",
    r"not a valid (user|mailbox|recipient)",
    r"is not a valid user",
    r"invalid (recipient|mailbox)",
    r"invalid( email)? address",
    r"no mailbox here",
    r"(doesn't|does not) have an? (\S+ )?account",
    r"mailbox unavailable",
    r"mailbox is unavailable",
    r"unrouteable address",
    r"address (is )?not handled",
    r"address could not be found",
    r"not our customer",
)


@dataclass(frozen=True)
class Quirk:
    """A provider's reply that means something its code does not say, on its own exchanges."""

    exchanges: tuple[str, ...]  # MX host names, or the domains they sit under
    enhanced: str
    words: re.Pattern[str]
    outcome: Mailbox
    source: str

    def applies(self, reply: Reply) -> bool:
        host = reply.exchange.lower().rstrip(".")
        return (
            reply.enhanced == self.enhanced
            and _under(host, self.exchanges)
            and bool(self.words.search(reply.message))
        )


QUIRKS: tuple[Quirk, ...] = (
    Quirk(
        ("mail.protection.outlook.com",),
        "5.4.1",
        _words(r"recipient address rejected: access denied"),
        Mailbox.NO_SUCH_USER,
        "Microsoft Learn, 'Fix NDR error 550 5.4.1 in Exchange Online': Directory-Based Edge "
        "Blocking rejects, at RCPT, recipients that do not exist in the tenant",
    ),
    Quirk(
        ("yandex.ru", "yandex.net"),
        "5.7.1",
        _words(r"^5\.7\.1 no such user"),
        Mailbox.NO_SUCH_USER,
        "Yandex's inbound servers answer an unknown recipient '550 5.7.1 No such user!' "
        "(published bounce reports from mx.yandex.ru)",
    ),
)


def _under(host: str, names: Iterable[str]) -> bool:
    return any(host == name or host.endswith("." + name) for name in names)


def classify(reply: Reply) -> Mailbox:
    """What *reply* says about the mailbox it answers for."""
    if 200 <= reply.code < 300:
        return Mailbox.OK
    if reply.stage is not Stage.RCPT:
        return _before_rcpt(reply)
    for quirk in QUIRKS:
        if quirk.applies(reply):
            return quirk.outcome
    if _names_only_the_sender(reply):
        return Mailbox.SENDER_REFUSED
    if reply.code == 421:
        return Mailbox.BLOCKED  # the server closes the connection: rest, then ask again
    if reply.code < 500:
        return _transient(reply)
    return _permanent(reply)


def _before_rcpt(reply: Reply) -> Mailbox:
    """The greeting, EHLO/HELO and MAIL FROM answer for us, never for a mailbox."""
    message = reply.message
    if reply.stage is Stage.MAIL and reply.code != 421:
        if _HOST.search(message) and not _SENDER.search(message):
            return Mailbox.BLOCKED
        if reply.code >= 500 or _SENDER.search(message) or _sender_code(reply.enhanced):
            return Mailbox.SENDER_REFUSED
        return Mailbox.DEFERRED  # 4xx: the server's own trouble (452 4.3.1); ask again later
    if reply.stage is Stage.HELLO:
        return Mailbox.SENDER_REFUSED  # our EHLO name: fix it (see listclean doctor)
    return Mailbox.BLOCKED


def _transient(reply: Reply) -> Mailbox:
    """A 4xx at RCPT: a state that may pass. Never Invalid."""
    enhanced, message = reply.enhanced, reply.message
    if enhanced.endswith(".5.3") or (not enhanced and _TOO_MANY.search(message)):
        return Mailbox.TOO_MANY  # 4.5.3: this transaction is full; a new session goes on
    if _sender_code(enhanced) or _SENDER.search(message):
        return Mailbox.SENDER_REFUSED  # retrying cannot change who we are
    if enhanced.endswith(".2.2") or _FULL.search(message):
        return Mailbox.FULL
    if _GREYLISTED.search(message):
        return Mailbox.DEFERRED
    if _HOST.search(message):
        return Mailbox.BLOCKED
    if status_subject(enhanced).startswith("7.") and reply.code == 452:
        return Mailbox.BLOCKED  # 452 4.7.x: a rate limit on us (Gmail's 4.7.28)
    return Mailbox.DEFERRED  # greylisting, rate limits, the server's own trouble


def _permanent(reply: Reply) -> Mailbox:
    """A 5xx at RCPT: the enhanced code decides when it is precise, words otherwise."""
    enhanced = reply.enhanced
    subject = status_subject(enhanced)
    if _sender_code(enhanced):
        return Mailbox.SENDER_REFUSED
    if subject.startswith("7."):  # security or policy status (RFC 3463 §3.8)
        return Mailbox.SENDER_REFUSED if _SENDER.search(reply.message) else Mailbox.BLOCKED
    if subject in _BY_SUBJECT:
        return _about_us(reply.message) or _BY_SUBJECT[subject]
    if enhanced and not _vague(subject):
        return Mailbox.REJECTED  # a precise code that is not about the mailbox (5.4.x, 5.3.x)
    if reply.code == 552 and not _TOO_MANY.search(reply.message):
        return Mailbox.FULL  # RFC 5321 §4.2.3: exceeded storage allocation
    return _by_words(reply.message)


# Permanent enhanced codes that decide alone (RFC 3463 §3.2, §3.3; RFC 7505 §4.2).
_BY_SUBJECT: dict[str, Mailbox] = {
    "1.1": Mailbox.NO_SUCH_USER,  # bad destination mailbox address
    "1.6": Mailbox.NO_SUCH_USER,  # destination mailbox has moved, no forwarding address
    "1.10": Mailbox.NO_SUCH_USER,  # recipient address has null MX
    "2.1": Mailbox.DISABLED,  # mailbox disabled, not accepting messages
    "2.2": Mailbox.FULL,  # mailbox full
    "5.3": Mailbox.TOO_MANY,  # too many recipients
}


def _about_us(message: str) -> Mailbox | None:
    """A mailbox code whose words speak only of our sender or host ("550 5.1.1 sender IP
    blocked"): the words are the safer reading, since a wrong "no such user" deletes someone."""
    if _NO_SUCH_USER.search(message) or _DISABLED.search(message) or _FULL.search(message):
        return None
    if _SENDER.search(message):
        return Mailbox.SENDER_REFUSED
    return Mailbox.BLOCKED if _HOST.search(message) else None


def _vague(subject: str) -> bool:
    """X.Y.0 is "other or undefined" status of a subject (RFC 3463 §3), and X.5.Y (protocol)
    is what Outlook.com sends with its "mailbox unavailable": the words must decide."""
    return subject.endswith(".0") or subject.startswith("5.")


def _sender_code(enhanced: str) -> bool:
    # X.1.7 bad sender's mailbox address syntax, X.1.8 bad sender's system address (RFC 3463).
    return status_subject(enhanced) in ("1.7", "1.8")


def _by_words(message: str) -> Mailbox:
    for pattern, outcome in _PHRASES:
        if pattern.search(message):
            return outcome
    return Mailbox.REJECTED


# First match wins: words about us before words about the recipient.
_PHRASES: tuple[tuple[re.Pattern[str], Mailbox], ...] = (
    (_TOO_MANY, Mailbox.TOO_MANY),
    (_SENDER, Mailbox.SENDER_REFUSED),
    (_HOST, Mailbox.BLOCKED),
    (_FULL, Mailbox.FULL),
    (_DISABLED, Mailbox.DISABLED),
    (_NO_SUCH_USER, Mailbox.NO_SUCH_USER),
)


def _names_only_the_sender(reply: Reply) -> bool:
    """The reply quotes our MAIL FROM address and not the recipient: it is about our sender."""
    text = reply.message.lower()
    sender, recipient = reply.sender.lower(), reply.recipient.lower()
    return bool(sender) and sender in text and not (recipient and recipient in text)
