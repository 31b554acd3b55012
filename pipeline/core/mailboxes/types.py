"""The address-level wing's value types: what is asked, what came back, and what it cost.

Everything else in ``pipeline.core.mailboxes`` (the SMTP session, the prober, the remote API
client, the cache, the frame step) builds on these; none of them imports another's types.
"""

from __future__ import annotations

import enum
import hashlib
import math
import time
from dataclasses import dataclass, field
from typing import Literal

from pipeline.core.domains.dns import DnsStatus
from pipeline.core.verdict import Reason, Verdict


class Mailbox(enum.StrEnum):
    """What one RCPT (or the attempt to make one) told us about one address.

    A final answer is also a reason code of the same name: the values are taken from
    :class:`Reason`, so the two vocabularies cannot drift apart. DEFERRED and TOO_MANY are
    steps on the way to an answer and never reach a row.
    """

    OK = Reason.MAILBOX_OK.value
    NO_SUCH_USER = Reason.NO_SUCH_USER.value
    DISABLED = Reason.MAILBOX_DISABLED.value
    FULL = Reason.MAILBOX_FULL.value
    DEFERRED = "deferred"  # 450/451: greylisting or a transient problem; ask again later
    GREYLISTED = Reason.GREYLISTED.value  # still deferred after every retry
    BLOCKED = Reason.SMTP_BLOCKED.value  # the server refuses us by policy (5.7.x, 421, 554)
    # Our envelope sender or EHLO name refused (5.1.7, 5.1.8, "Sender address rejected"): the
    # same answer for every recipient, so it says nothing about any mailbox.
    SENDER_REFUSED = Reason.SMTP_SENDER_REFUSED.value
    # Every address of the domain refused alike, known ones included: the server refuses us.
    REFUSES_ALL = Reason.SMTP_REFUSES_ALL.value
    TOO_MANY = "too_many_recipients"  # 452 4.5.3: this session is full, use another
    REJECTED = Reason.SMTP_REJECTED.value  # a 5xx we cannot read
    UNREACHABLE = Reason.SMTP_UNREACHABLE.value
    TIMEOUT = Reason.SMTP_TIMEOUT.value
    CATCH_ALL = Reason.CATCH_ALL.value  # the domain accepts any local part: 250 proves nothing
    UNVERIFIABLE = Reason.PROVIDER_UNVERIFIABLE.value  # a provider that accepts every RCPT
    NOT_VERIFIED = Reason.NOT_VERIFIED_BUDGET.value  # the budget ran out before this address
    API_ERROR = Reason.API_ERROR.value  # the remote API gave no usable answer for this address

    @property
    def is_final(self) -> bool:
        return self not in (Mailbox.DEFERRED, Mailbox.TOO_MANY)


@dataclass(frozen=True)
class Target:
    key: str  # the dedupe key: one check per distinct address
    address: str  # as sent in RCPT TO or to the remote API
    domain: str
    dns_status: DnsStatus
    known_to_exist: bool = False  # the bounce ledger has a delivery since its last hard bounce


@dataclass(frozen=True)
class MailboxResult:
    outcome: Mailbox
    reply: str = ""  # the server's words, e.g. "550 5.1.1 No such user"
    at: float = field(default_factory=time.time)  # when the server said it (Unix time)


@dataclass(frozen=True)
class RemoteAnswer:
    """What the remote service said about one address, or why it could not say."""

    verdict: Verdict | None  # None: no usable answer (see error)
    score: float = 0.0
    known_bounces: bool = False
    suspected_bounces: bool = False
    error: str = ""  # "": answered; otherwise api_error / not_verified_budget with detail
    at: float | None = None  # when it was answered (Unix time), when known
    note: str = ""  # what DETAIL says of a kept answer shown past its lifetime


class Budget:
    """The requests (RCPTs or API calls) a run may still send (``None``: no limit)."""

    def __init__(self, limit: int | None, spent: int = 0) -> None:
        self.limit = limit
        self.spent = spent

    def take(self) -> bool:
        if self.limit is not None and self.spent >= self.limit:
            return False
        self.spent += 1
        return True

    @property
    def left(self) -> int | None:
        """What may still be spent; None: no limit."""
        return None if self.limit is None else self.limit - self.spent

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.spent >= self.limit


CheckKind = Literal["smtp", "api", "vendor"]


@dataclass(frozen=True)
class Plan:
    """The pre-flight estimate, shown before anything is spent."""

    kind: CheckKind
    distinct_addresses: int
    need_checks: int  # checkable and not answered in the cache
    cached: int
    budget: int | None  # requests this run may still send
    covered: int  # addresses the budget reaches
    pace: Pace | None = None  # how long SMTP pacing makes the probes take (None: not known)
    vendor: str = ""  # the paid verifier asked (kind "vendor")
    balance: int | None = None  # its credits left, asked before anything is spent
    settled: int = 0  # addresses the bounce ledger settles: no request is spent on them
    refresh: Refresh | None = None  # the cached answers that are due again, and their share


@dataclass(frozen=True)
class Pace:
    """The least time the pacing settings let a run's probes take: the provider that needs the
    longest, at its RCPTs per minute (the per-provider limit, or the per-host limit times the
    provider's hosts, whichever is lower). Providers are probed side by side."""

    seconds: float
    busiest: str  # the provider (registrable domain of its mail hosts)
    requests: int  # RCPTs it gets, catch-all probes included
    per_minute: int
    greylist_seconds: float  # what retrying greylisted addresses may add


@dataclass(frozen=True)
class Refresh:
    """The cached answers of a run's addresses that are due again (past their lifetime), and
    what the budget does about them: the budget goes to addresses never answered first, then
    to the due answers, oldest first; a due answer it does not reach is still shown, with its
    age in DETAIL."""

    due: int = 0  # cached answers of the run's addresses past their lifetime
    refreshed: int = 0  # of them, those the run's budget reaches
    # Runs at this budget that refresh every due answer (the never-answered addresses taking
    # their share first); 0: none is due. Counts one request an address.
    runs: int = 0


def refresh_of(due: int, refreshed: int, need: int, budget: Budget) -> Refresh:
    """The figures of :class:`Refresh` for *due* answers of which *refreshed* are reached,
    *need* addresses in all wanting a request (never answered, and due)."""
    if not due:
        return Refresh()
    if budget.limit is None:
        return Refresh(due, refreshed, 1)
    return Refresh(due, refreshed, max(1, math.ceil(need / budget.limit)))


def lifetime(ttl: float, key: str, at: float, floor: float) -> float:
    """How long an answer about *key* learned at *at* is kept: a share of *ttl* between *floor*
    and 1, drawn once, from the key and the moment (the same in every process). Answers
    learned in one night so fall due over many nights, never before their own lifetime ends;
    *floor* 1 keeps every answer its whole *ttl*."""
    if floor >= 1:
        return ttl
    digest = hashlib.blake2b(f"{key}\0{at!r}".encode(), digest_size=8).digest()
    drawn = int.from_bytes(digest, "big") / 2**64
    return ttl * (floor + (1 - floor) * drawn)


@dataclass(frozen=True)
class CheckStats:
    """What one pass of an address checker sent."""

    kind: CheckKind
    requests: int = 0  # RCPTs, or API requests
    sessions: int = 0  # SMTP sessions opened
    busiest_host_sessions: int = 0  # the most sessions opened to one mail host
    vendor_requests: int = 0  # HTTP requests to paid verifiers
    credits: int = 0  # the paid verifiers' credits this run spent (answers they bill)
    warnings: tuple[str, ...] = ()  # what the run's user must be told (an empty balance)
    refresh: Refresh = field(default_factory=Refresh)  # due answers, and those refreshed


def combined(parts: list[CheckStats]) -> CheckStats:
    """The stats of checkers that answered parts of one run (routing), summed. Their kind is
    the first that sent RCPTs or API requests (whose requests it counts), else "vendor"."""
    kinds = [p.kind for p in parts if p.kind != "vendor"]
    kind = kinds[0] if kinds else "vendor"
    return CheckStats(
        kind,
        sum(p.requests for p in parts if p.kind == kind),
        sum(p.sessions for p in parts),
        max((p.busiest_host_sessions for p in parts), default=0),
        sum(p.vendor_requests for p in parts),
        sum(p.credits for p in parts),
        tuple(w for p in parts for w in p.warnings),
        Refresh(
            sum(p.refresh.due for p in parts),
            sum(p.refresh.refreshed for p in parts),
            max((p.refresh.runs for p in parts), default=0),
        ),
    )
