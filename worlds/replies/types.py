"""The reply corpus's types (:mod:`worlds.replies.corpus`): one real SMTP reply each."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pipeline.sandbox.mail_hosts import ScriptedReply


class Stage(enum.StrEnum):
    """The command a reply answers (RFC 5321 §3); DATA-stage replies are kept for reference."""

    GREETING = "greeting"
    EHLO = "ehlo"
    MAIL = "mail"
    RCPT = "rcpt"
    DATA = "data"


class Meaning(enum.StrEnum):
    """What a reply truly says, whatever its code and words suggest."""

    ACCEPTED = "accepted"
    NO_SUCH_USER = "no_such_user"  # the recipient's mailbox does not exist
    DISABLED = "disabled"  # it exists but is closed, suspended or abandoned
    FULL = "full"  # it exists and is over quota
    RECIPIENT_REFUSED = "recipient_refused"  # a per-recipient policy; existence not said
    SENDER_REFUSED = "sender_refused"  # about our envelope sender (MAIL FROM)
    HOST_BLOCKED = "host_blocked"  # about our IP, its reputation, rDNS or HELO name
    RELAY_DENIED = "relay_denied"  # the server does not take mail for that domain
    RATE_LIMITED = "rate_limited"  # too much, too fast: from us, or to that recipient
    TOO_MANY_RECIPIENTS = "too_many_recipients"  # this transaction is full (4.5.3)
    GREYLISTED = "greylisted"  # come back later (greylisting, verification in progress)
    TRANSIENT = "transient"  # the server's own temporary trouble


RECIPIENT_MEANINGS = frozenset({Meaning.NO_SUCH_USER, Meaning.DISABLED, Meaning.FULL})
"""Meanings that say something about the recipient's mailbox itself."""


@dataclass(frozen=True)
class CorpusReply:
    """A reply as a real server sends it, where it comes, what it means and where it is from.

    ``text`` is written as :class:`~pipeline.sandbox.mail_hosts.ScriptedReply` reads it: one line
    per line, session values as placeholders (``{rcpt}``, ``{sender}``, ``{client}``...) where
    the original showed the recipient, sender or client address. ``key`` is
    ``family.name``; the family (``postfix``, ``gmail``...) is the software or provider.
    """

    key: str
    text: str
    stage: Stage
    meaning: Meaning
    source: str

    def __post_init__(self) -> None:
        family, dot, name = self.key.partition(".")
        if not (family and dot and name):
            raise ValueError(f"corpus key {self.key!r} must be 'family.name'")
        ScriptedReply.parse(self.text, self.key)  # every corpus text must be sendable

    @property
    def family(self) -> str:
        return self.key.partition(".")[0]

    @property
    def scripted(self) -> ScriptedReply:
        return ScriptedReply.parse(self.text, self.key)

    @property
    def code(self) -> int:
        return self.scripted.code


def entry(key: str, text: str, stage: Stage, meaning: Meaning, source: str) -> CorpusReply:
    """One corpus row (positional, so the tables stay compact)."""
    return CorpusReply(key, text, stage, meaning, source)
