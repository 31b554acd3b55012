"""Who may hold a connection that has not finished sending its request, and for how long.

A client that opens connections and sends its request a byte at a time ("slowloris", CWE-400)
costs nothing and holds one open file of ours per connection; enough of them and the service
cannot accept anyone (``accept()`` fails with EMFILE). So a request is *unfinished* from its
connection's start (or, on a kept-alive connection, from the first byte of its next request)
until its headers and, when it has one, its body are in, and:

- an unfinished request gets ``header_timeout`` seconds for its line and headers and then
  :meth:`Admission.body_timeout` seconds for its body (408, then the connection closes);
- one client address (an IPv4 address, an IPv6 /64: one client usually holds a whole /64,
  RFC 6177) may hold ``max_unfinished_per_client`` unfinished connections, and all clients
  together ``max_unfinished_total``, kept below three quarters of the open-file limit read at
  start; every connection, finished or not, counts toward the open-file limit less what the
  service needs besides connections (:attr:`ConnectionLimits.open_ceiling`). One connection more is
  answered 503 at once, which needs an accepted socket: the caps stay below the limit so that
  accepting never fails.

A trusted proxy speaks for many clients: its connections count only toward the totals. A
finished request on a kept-alive connection never counts, so a client's pool of complete
keep-alive connections is untouched. Refusals and cut-offs are logged as one counted line per
``flood_log_interval`` (:class:`FloodLog`), never a line per connection.

Uploads (bulk jobs) will be bounded by a transfer rate and a size, not by a time:
:meth:`Admission.body_timeout` answers per route, and a route prefix in ``body_timeouts``
mapped to None leaves the body to its route.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import resource
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from pipeline.core.config import HttpConfig
from pipeline.service.requests.guard import client_bucket

log = logging.getLogger("listclean.service")

Networks = Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]

# Connections the system may hand the service in one go before it sees any of them: asyncio
# accepts up to the listening socket's backlog (aiohttp's TCPSite: 128) per wake-up. Those,
# what the service holds open at start (databases, the resolver's sockets, logs) and a margin
# for what it opens later (a PostgreSQL pool growing, a log rotated) stay below the limit.
ACCEPT_BACKLOG = 128
MARGIN_FILES = 32


class BodyTimeout(TimeoutError):
    """Set on a request's body that did not arrive in time; its reader answers 408."""


class Refusal(StrEnum):
    """Why a connection was answered 503 instead of served."""

    CLIENT = "the per-client cap"
    TOTAL = "the total cap"
    FILES = "the open-file ceiling"


class Cutoff(StrEnum):
    """Which part of a request did not arrive in time."""

    HEADERS = "headers"
    BODY = "body"


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float
    body_timeout: float
    per_client: int
    total: int  # unfinished connections, all clients
    open_ceiling: int  # every connection
    log_interval: float

    @classmethod
    def from_settings(
        cls, http: HttpConfig, open_files: int | None = None, in_use: int | None = None
    ) -> ConnectionLimits:
        """The limits for *http* under *open_files* (default: this process's soft limit) with
        *in_use* files already open (default: as many as are now)."""
        files = open_file_limit() if open_files is None else open_files
        held = files_in_use() if in_use is None else in_use
        ceiling = max(8, files - held - ACCEPT_BACKLOG - MARGIN_FILES)
        total = max(1, min(http.max_unfinished_total, ceiling * 3 // 4))
        return cls(
            header_timeout=http.header_timeout,
            body_timeout=http.body_timeout,
            # One client never holds the whole total: a quarter stays for the others.
            per_client=max(1, min(http.max_unfinished_per_client, total * 3 // 4)),
            total=total,
            open_ceiling=ceiling,
            log_interval=http.flood_log_interval,
        )


def open_file_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1 << 20 if soft == resource.RLIM_INFINITY else soft


def files_in_use() -> int:
    """How many files this process has open (Linux's /proc; elsewhere a generous guess)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 128


@dataclass
class Ticket:
    """One connection's standing: whose it is, and whether its request is unfinished."""

    peer: str
    bucket: str | None  # None: a trusted proxy's, counted only toward the totals
    refused: Refusal | None = None
    unfinished: bool = False


class Admission:
    """Counts connections and unfinished requests (see the module docstring)."""

    def __init__(
        self,
        limits: ConnectionLimits,
        trusted: Networks = (),
        body_timeouts: Mapping[str, float | None] | None = None,
    ) -> None:
        self.limits = limits
        self._trusted = trusted
        self._body_timeouts = dict(body_timeouts or {})
        self.open = 0
        self.unfinished = 0
        self._per_client: Counter[str] = Counter()
        self.flood = FloodLog(limits.log_interval)

    def measure(self, http: HttpConfig) -> None:
        """Read the open-file limit and the files in use again (at start, once the service's
        own files are open)."""
        self.limits = ConnectionLimits.from_settings(http)
        self.flood.interval = self.limits.log_interval

    def accept_failed(self) -> None:
        """The system refused a connection before we saw it (EMFILE): counted, not a trace."""
        self.flood.refused(Refusal.FILES, "(not accepted)")

    def connected(self, peer: str) -> Ticket:
        """A new connection from *peer*: admitted (its request unfinished), or refused."""
        bucket = None if _in(peer, self._trusted) else client_bucket(peer)
        ticket = Ticket(peer, bucket)
        self.open += 1
        refusal = self._over_cap(bucket)
        if refusal is not None:
            ticket.refused = refusal
            self.flood.refused(refusal, ticket.bucket or peer)
        else:
            self.started(ticket)
        return ticket

    def _over_cap(self, bucket: str | None) -> Refusal | None:
        if self.open > self.limits.open_ceiling:
            return Refusal.FILES
        if self.unfinished >= self.limits.total:
            return Refusal.TOTAL
        if bucket is not None and self._per_client[bucket] >= self.limits.per_client:
            return Refusal.CLIENT
        return None

    def started(self, ticket: Ticket) -> None:
        """*ticket*'s connection began a request."""
        if not ticket.unfinished and ticket.refused is None:
            ticket.unfinished = True
            self.unfinished += 1
            if ticket.bucket is not None:
                self._per_client[ticket.bucket] += 1

    def finished(self, ticket: Ticket) -> None:
        """*ticket*'s request is all in (or its connection is gone)."""
        if ticket.unfinished:
            ticket.unfinished = False
            self.unfinished -= 1
            if ticket.bucket is not None:
                self._per_client[ticket.bucket] -= 1
                if not self._per_client[ticket.bucket]:
                    del self._per_client[ticket.bucket]

    def closed(self, ticket: Ticket) -> None:
        self.finished(ticket)
        self.open -= 1

    def may_linger(self) -> bool:
        """Whether a refused or cut-off connection may stay half-open a moment so that its
        client reads the answer: not once open files run short for the clients admitted."""
        return self.open <= self.limits.total

    def cut_off(self, ticket: Ticket, part: Cutoff) -> None:
        self.flood.cut_off(part, ticket.bucket or ticket.peer)

    def body_timeout(self, path: str) -> float | None:
        """Seconds the body of a request to *path* may take; None: its route bounds it."""
        for prefix, seconds in self._body_timeouts.items():
            if path.startswith(prefix):
                return seconds
        return self.limits.body_timeout

    def pending_for(self, peer: str) -> int:
        """Unfinished connections counted against *peer*'s client address."""
        return self._per_client.get(client_bucket(peer), 0)


def _in(peer: str, networks: Networks) -> bool:
    if not networks:
        return False
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in network for network in networks)


@dataclass
class FloodLog:
    """Refusals and cut-offs, counted and logged as one line per *interval* seconds."""

    interval: float
    refusals: Counter[Refusal] = field(default_factory=Counter)
    cutoffs: Counter[Cutoff] = field(default_factory=Counter)
    clients: Counter[str] = field(default_factory=Counter)
    _flush: asyncio.TimerHandle | None = None

    def refused(self, why: Refusal, client: str) -> None:
        self.refusals[why] += 1
        self._note(client)

    def cut_off(self, part: Cutoff, client: str) -> None:
        self.cutoffs[part] += 1
        self._note(client)

    def _note(self, client: str) -> None:
        if len(self.clients) < 10_000 or client in self.clients:  # memory stays bounded
            self.clients[client] += 1
        if self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(self.interval, self.write)

    def write(self) -> None:
        """Log what was counted since the last line, and start counting afresh."""
        self._flush = None
        if not self.refusals and not self.cutoffs:
            return
        parts = []
        if self.refusals:
            why = ", ".join(f"{n} over {reason}" for reason, n in self.refusals.most_common())
            parts.append(f"refused {self.refusals.total()} connections with 503 ({why})")
        if self.cutoffs:
            late = ", ".join(f"{n} {part}" for part, n in self.cutoffs.most_common())
            parts.append(f"cut off {self.cutoffs.total()} slow requests with 408 ({late})")
        top, count = self.clients.most_common(1)[0]
        log.warning(
            "in the last %gs: %s; %d client addresses, the busiest %s (%d)",
            self.interval,
            "; ".join(parts),
            len(self.clients),
            top,
            count,
        )
        self.refusals.clear()
        self.cutoffs.clear()
        self.clients.clear()

    def close(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
        self.write()
