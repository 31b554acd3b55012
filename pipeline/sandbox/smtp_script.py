"""What a sandbox mail server answers to MAIL FROM and RCPT TO: the decisions, without the protocol.

:mod:`pipeline.sandbox.smtp_server` speaks SMTP and asks this module what to say; the order in
which the rules apply is documented there. One :class:`HostState` per host holds what its
sessions share (greylisting memory, the rate-limit window, the session count); it is used by the
servers' event loop thread only.
"""

from __future__ import annotations

import fnmatch
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import idna

from pipeline.sandbox.checks import normalize_name
from pipeline.sandbox.mail_hosts import ReplyClass, SenderCheck, SmtpDomain, SmtpHost, Stage

SENDER_OK = "250 2.1.0 Sender OK"
_BAD_ADDRESS = "550 5.1.3 Recipient address must have a domain"
# RFC 5321 §4.5.1: every host must accept mail for <postmaster>, even without a domain.
_POSTMASTER = "postmaster"


@dataclass(frozen=True)
class Session:
    """The session values a scripted reply may name (see mail_hosts)."""

    host: str  # the server's name
    client: str  # the client's IP address
    helo: str  # the name the client gave in EHLO/HELO ("" before it)
    sender: str = ""  # the MAIL FROM address of the current transaction

    def values(self, recipient: str = "") -> Mapping[str, str]:
        local, _, domain = recipient.rpartition("@")
        return {
            "host": self.host,
            "client": self.client,
            "helo": self.helo,
            "sender": self.sender,
            "sender_domain": self.sender.rpartition("@")[2],
            "rcpt": recipient,
            "local": local,
            "domain": domain,
        }


class HostState:
    """One host's configuration and the state its sessions share."""

    def __init__(self, address: str, config: SmtpHost, clock: Callable[[], float]) -> None:
        self.address = address
        self.config = config
        self._clock = clock
        self._admitted = 0
        self._first_attempts: dict[tuple[str, str], float] = {}
        self._answered: deque[float] = deque()

    def admit(self) -> bool:
        """Whether a new session fits under ``throttle_sessions``; if so, it now counts."""
        limit = self.config.throttle_sessions
        if limit and self._admitted >= limit:
            return False
        self._admitted += 1
        return True

    def release(self) -> None:
        self._admitted -= 1

    def greylisted(self, sender: str, recipient: str) -> bool:
        """Whether this attempt is deferred: the pair's first attempt is too recent."""
        seconds = self.config.greylist_seconds
        if seconds <= 0:
            return False
        now = self._clock()
        # Greylisting as in postgrey: the clock starts at the first attempt, and retries do not
        # restart it; the key is case-insensitive, as the mailbox lookup is.
        first = self._first_attempts.setdefault((sender.casefold(), recipient.casefold()), now)
        return now - first < seconds

    def rate_limited(self) -> bool:
        """Whether this RCPT is over ``rate_limit``; RCPTs answered normally fill the window."""
        limit = self.config.rate_limit
        if limit is None:
            return False
        now = self._clock()
        while self._answered and now - self._answered[0] >= limit.seconds:
            self._answered.popleft()
        if len(self._answered) >= limit.rcpts:
            return True
        self._answered.append(now)
        return False


def mail_reply(host: HostState, session: Session) -> str:
    """The reply to MAIL FROM:<session.sender>: the first matching ``mail_from`` rule, the
    sender policy when it acts at MAIL, else 250."""
    config = host.config
    sender = session.sender.casefold()
    for pattern, scripted in config.mail_from:
        if fnmatch.fnmatchcase(sender, pattern):
            return scripted.render(session.values())
    policy = config.sender_policy
    if policy is not None and policy.stage is Stage.MAIL and _sender_refused(config, sender):
        return policy.reply.render(session.values())
    return SENDER_OK


def rcpt_reply(host: HostState, session: Session, recipient: str, rcpts_in_session: int) -> str:
    """The reply to the ``rcpts_in_session``-th RCPT of a session (order in smtp_server.py)."""
    config = host.config
    values = session.values(recipient)
    if config.max_recipients and rcpts_in_session > config.max_recipients:
        return config.text(ReplyClass.TOO_MANY).render(values)
    if config.rate_limit is not None and host.rate_limited():
        return config.rate_limit.reply.render(values)
    if config.block:
        return config.text(ReplyClass.BLOCKED).render(values)
    policy = config.sender_policy
    if (
        policy is not None
        and policy.stage is Stage.RCPT
        and _sender_refused(config, session.sender)
    ):
        return policy.reply.render(values)
    local, at, domain_part = recipient.rpartition("@")
    if not at:
        ok = recipient.casefold() == _POSTMASTER
        return config.text(ReplyClass.OK).render(values) if ok else _BAD_ADDRESS
    domain = config.domains.get(domain_key(domain_part))
    if domain is None:
        return config.text(ReplyClass.RELAY).render(values)
    if host.greylisted(session.sender, recipient):
        return config.text(ReplyClass.GREYLISTED).render(values)
    scripted = domain.replies.get(local.casefold())
    if scripted is not None:
        return scripted.render(values)
    return config.text(mailbox_class(domain, local)).render(values)


def mailbox_class(domain: SmtpDomain, local: str) -> ReplyClass:
    """What the host's tables say about ``local`` (per-local-part replies aside)."""
    folded = local.casefold()
    if domain.catch_all or folded in domain.mailboxes:
        return ReplyClass.OK
    if folded in domain.full:
        return ReplyClass.FULL
    if folded in domain.disabled:
        return ReplyClass.DISABLED
    return ReplyClass.UNKNOWN


def _sender_refused(config: SmtpHost, sender: str) -> bool:
    """Whether the sender policy refuses ``sender``; the null sender <> is never refused."""
    policy = config.sender_policy
    if policy is None or not sender:
        # RFC 5321 §4.5.5: bounces come from <>; refusing it would refuse every bounce.
        return False
    local, _, domain = sender.rpartition("@")
    directory = config.sender_directory
    if policy.check is SenderCheck.UNKNOWN_DOMAIN:
        return not directory.domain_exists(domain)
    return not directory.deliverable(local, domain)


def domain_key(domain: str) -> str:
    """``domain`` as world keys store it: lower case, A-labels (RFC 5890)."""
    name = normalize_name(domain)
    if name.isascii():
        return name
    try:
        # RFC 6531 §3.2: an SMTPUTF8 client may send the U-label form of a domain.
        return idna.encode(name, uts46=True).decode("ascii")
    except idna.IDNAError:
        return name
