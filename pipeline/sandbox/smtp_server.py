"""Sandbox mail servers on loopback addresses, for probing mailboxes without the network.

Each :class:`~pipeline.sandbox.world.SmtpHost` of a world gets a real SMTP server on its own
loopback address (127.0.0.2, 127.0.0.3, ...; Linux routes all of 127.0.0.0/8 to the loopback
interface), and all of them listen on the same port. With the world's DNS zones giving each MX
host an A record for its address, a prober configured with that one port reaches every host the
way it would reach port 25 of the real ones; an MX host whose address has no server refuses the
connection. The JSON format is documented in :mod:`pipeline.sandbox.world`.

A server answers RCPT TO:<local@domain> with the first that applies:

* more RCPTs in this session than ``max_recipients``: ``452 4.5.3`` (RFC 5321 §4.5.3.1.10);
* ``block``: ``550 5.7.1`` blocked by policy, as when the prober's address is on a blocklist;
* a domain the host does not serve: ``550 5.7.1`` relay denied (RFC 5321 §3.6);
* ``greylist_seconds`` and the (sender, recipient) pair is new or too recent: ``451 4.7.1``;
  greylisting runs before the mailbox lookup, so it hides whether the mailbox exists;
* ``catch_all``, or a local part in ``mailboxes``: ``250 2.1.5``;
* in ``full``: ``452 4.2.2``; in ``disabled``: ``550 5.2.1``; otherwise ``550 5.1.1``.

Local parts compare case-insensitively; a domain sent as a U-label (RFC 6531) matches its
A-label. ``<postmaster>`` without a domain is accepted, as RFC 5321 §4.5.1 requires. Every other
command gets the usual answer (EHLO advertises ENHANCEDSTATUSCODES, RFC 2034, and SMTPUTF8,
RFC 6531) except DATA, which is refused with ``554 5.5.1`` before any content is read: a prober
must never send a message, and :meth:`SandboxSMTP.data_attempts` counts those that try.
``throttle_sessions`` turns away a connection that would exceed it with a ``421 4.7.0`` banner
(RFC 5321 §4.2.2) and closes it; ``delay_ms`` delays every reply after the banner and
``banner_delay_ms`` the banner.

All servers run in one asyncio event loop in a daemon thread; aiosmtpd parses the protocol.

Usage::

    world = load_world("sample_data/world.json")
    with SandboxDNS(world) as dns, SandboxSMTP(world.smtp) as smtp:
        ...  # resolve MX hosts with dns.address, connect to (their A record, smtp.port)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import AnyStr

import idna
from aiosmtpd.smtp import SMTP, Envelope, Session

from pipeline.sandbox.loop_thread import LoopThreadServer
from pipeline.sandbox.world import SmtpDomain, SmtpHost, loopback_address, normalize_name

__all__ = ["SandboxSMTP", "SmtpDomain", "SmtpHost"]

# Replies: RFC 5321 §4.2 reply codes with RFC 3463 enhanced status codes.
_SENDER_OK = "250 2.1.0 Sender OK"
_RECIPIENT_OK = "250 2.1.5 OK"
_OK = "250 2.0.0 OK"
_BYE = "221 2.0.0 Bye"
_NO_SUCH_USER = "550 5.1.1 No such user here"
_BAD_ADDRESS = "550 5.1.3 Recipient address must have a domain"
_MAILBOX_DISABLED = "550 5.2.1 Mailbox disabled, not accepting messages"
_MAILBOX_FULL = "452 4.2.2 Mailbox full"
_TOO_MANY_RECIPIENTS = "452 4.5.3 Too many recipients"
_RELAY_DENIED = "550 5.7.1 Relay access denied"
_BLOCKED = "550 5.7.1 Message rejected: blocked by policy"
_GREYLISTED = "451 4.7.1 Greylisted, please try again later"
_THROTTLED = "421 4.7.0 Too many concurrent sessions, try again later"
_NO_DATA = "554 5.5.1 DATA not accepted: this server only answers probes"
# RFC 5321 §4.5.1: every host must accept mail for <postmaster>, even without a domain.
_POSTMASTER = "postmaster"
# Binding the first server to a free port and the others to the same number can collide with
# another process that holds that port on one of the addresses; retry with a fresh port.
_BIND_ATTEMPTS = 20
_MAX_PORT = 0xFFFF
# Shutting down: closing every session normally takes one round.
_CLOSE_ROUNDS = 20
_CLOSE_ROUND_SECONDS = 0.05


class _Stats:
    """What the servers saw; written by the event loop, read by any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rcpts: list[tuple[str, str, int]] = []
        self._sessions: Counter[str] = Counter()
        self._open: Counter[str] = Counter()
        self._most_open: Counter[str] = Counter()
        self._data_attempts = 0

    def session_opened(self, host: str) -> None:
        with self._lock:
            self._sessions[host] += 1
            self._open[host] += 1
            self._most_open[host] = max(self._most_open[host], self._open[host])

    def session_closed(self, host: str) -> None:
        with self._lock:
            self._open[host] -= 1

    def rcpt(self, host: str, recipient: str, code: int) -> None:
        with self._lock:
            self._rcpts.append((host, recipient, code))

    def data_attempt(self) -> None:
        with self._lock:
            self._data_attempts += 1

    def rcpts(self) -> list[tuple[str, str, int]]:
        with self._lock:
            return list(self._rcpts)

    def sessions(self, host: str) -> int:
        with self._lock:
            return self._sessions[host]

    def most_open(self, host: str) -> int:
        with self._lock:
            return self._most_open[host]

    def data_attempts(self) -> int:
        with self._lock:
            return self._data_attempts

    def reset(self) -> None:
        with self._lock:
            self._rcpts.clear()
            self._sessions.clear()
            self._data_attempts = 0
            # Sessions still open count towards the next maximum.
            self._most_open = Counter(self._open)


class _HostState:
    """One host's configuration and the state its sessions share; used by the loop thread only."""

    def __init__(self, address: str, config: SmtpHost, clock: Callable[[], float]) -> None:
        self.address = address
        self.config = config
        self._clock = clock
        self._admitted = 0
        self._first_attempts: dict[tuple[str, str], float] = {}

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


def _rcpt_reply(host: _HostState, sender: str, recipient: str, rcpts_in_session: int) -> str:
    """The reply to the ``rcpts_in_session``-th RCPT of a session (order in module docstring)."""
    config = host.config
    if config.max_recipients and rcpts_in_session > config.max_recipients:
        return _TOO_MANY_RECIPIENTS
    if config.block:
        return _BLOCKED
    local, at, domain_part = recipient.rpartition("@")
    if not at:
        return _RECIPIENT_OK if recipient.casefold() == _POSTMASTER else _BAD_ADDRESS
    domain = config.domains.get(_domain_key(domain_part))
    if domain is None:
        return _RELAY_DENIED
    if host.greylisted(sender, recipient):
        return _GREYLISTED
    return _mailbox_reply(domain, local)


def _mailbox_reply(domain: SmtpDomain, local: str) -> str:
    folded = local.casefold()
    if domain.catch_all or folded in domain.mailboxes:
        return _RECIPIENT_OK
    if folded in domain.full:
        return _MAILBOX_FULL
    if folded in domain.disabled:
        return _MAILBOX_DISABLED
    return _NO_SUCH_USER


def _domain_key(domain: str) -> str:
    """``domain`` as world keys store it: lower case, A-labels (RFC 5890)."""
    name = normalize_name(domain)
    if name.isascii():
        return name
    try:
        # RFC 6531 §3.2: an SMTPUTF8 client may send the U-label form of a domain.
        return idna.encode(name, uts46=True).decode("ascii")
    except idna.IDNAError:
        return name


class _Handler:
    """aiosmtpd's command hooks for one session; the protocol creates one per connection."""

    def __init__(self, host: _HostState, stats: _Stats) -> None:
        self._host = host
        self._stats = stats
        self._rcpts = 0

    async def handle_EHLO(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        hostname: str,
        responses: list[str],
    ) -> list[str]:
        # With this hook present aiosmtpd leaves recording the client's name to us.
        session.host_name = hostname
        # RFC 2034 §3: announces enhanced status codes. Every reply of ours carries one;
        # aiosmtpd's own syntax and sequence errors (501, 503) do not.
        return [*responses[:-1], "250-ENHANCEDSTATUSCODES", responses[-1]]

    async def handle_MAIL(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        mail_options: list[str],
    ) -> str:
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return _SENDER_OK

    async def handle_RCPT(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        self._rcpts += 1
        reply = _rcpt_reply(self._host, envelope.mail_from or "", address, self._rcpts)
        if reply.startswith("250"):
            envelope.rcpt_tos.append(address)
            envelope.rcpt_options.extend(rcpt_options)
        self._stats.rcpt(self._host.address, address, int(reply[:3]))
        return reply

    async def handle_RSET(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        return _OK

    async def handle_NOOP(
        self, server: SMTP, session: Session, envelope: Envelope, arg: str | None
    ) -> str:
        return _OK

    async def handle_QUIT(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        return _BYE


class _SmtpProtocol(SMTP):
    """aiosmtpd's SMTP session with the sandbox's throttling, delays and refusal of DATA."""

    def __init__(
        self,
        host: _HostState,
        stats: _Stats,
        connections: set[asyncio.BaseTransport],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        super().__init__(
            _Handler(host, stats),
            hostname=host.config.name,
            ident="ESMTP",
            enable_SMTPUTF8=True,
            loop=loop,
        )
        # aiosmtpd keeps these limits in a class attribute that every EHLO raises; a dict of our
        # own keeps sessions (and other users of aiosmtpd in this process) apart.
        self.command_size_limits = collections.defaultdict(lambda: SMTP.command_size_limit)
        self._host = host
        self._stats = stats
        self._connections = connections
        self._connection: asyncio.BaseTransport | None = None
        self._admitted = False
        self._reply_pause = 0.0
        self._mid_reply = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._connection = transport
        self._connections.add(transport)
        self._stats.session_opened(self._host.address)
        self._admitted = self._host.admit()
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        super().connection_lost(error)
        if self._connection is not None:
            self._connections.discard(self._connection)
        self._stats.session_closed(self._host.address)
        if self._admitted:
            self._host.release()

    async def _handle_client(self) -> None:
        # aiosmtpd has no hook before its greeting, so throttling and the banner delay wrap the
        # method that sends it. A client that leaves while we write ends its session; that is
        # not an error of the server.
        with contextlib.suppress(ConnectionError):
            await self._greet_and_serve()

    async def _greet_and_serve(self) -> None:
        if not self._admitted:
            # RFC 5321 §4.2.2: 421 may answer anything, the greeting included, when the server
            # is about to close the channel.
            await self.push(_THROTTLED)
            if self.transport is not None:
                self.transport.close()
            return
        if self._host.config.banner_delay_ms:
            await asyncio.sleep(self._host.config.banner_delay_ms / 1000)
        await super()._handle_client()

    async def push(self, status: AnyStr) -> None:
        if self._reply_pause and not self._mid_reply:
            await asyncio.sleep(self._reply_pause)
        text = status if isinstance(status, str) else status.decode("utf-8", "replace")
        # RFC 5321 §4.2: "250-" continues a multi-line reply, which waits only once.
        self._mid_reply = text[3:4] == "-"
        await super().push(status)
        # The banner has its own delay; every reply after it waits delay_ms.
        self._reply_pause = self._host.config.delay_ms / 1000

    async def smtp_DATA(self, arg: str | None) -> None:
        # Refused before the 354 go-ahead, so no message content is ever accepted.
        self._stats.data_attempt()
        await self.push(_NO_DATA)


@dataclass(frozen=True)
class _Running:
    """Everything that exists only while the servers run."""

    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    servers: tuple[asyncio.Server, ...]
    connections: set[asyncio.BaseTransport]
    port: int


class SandboxSMTP(LoopThreadServer[_Running]):
    """Serve every host of ``hosts`` (loopback address -> config) on ``port`` (0: a free one).

    ``clock`` (seconds, monotonic) times greylisting; tests can pass a fake one.
    """

    _thread_name = "sandbox-smtp"

    def __init__(
        self,
        hosts: Mapping[str, SmtpHost],
        port: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 <= port <= _MAX_PORT:
            raise ValueError(f"port {port} is outside 0..{_MAX_PORT}")
        super().__init__()
        self._hosts = MappingProxyType(
            {loopback_address(address): host for address, host in hosts.items()}
        )
        self._requested_port = port
        self._clock = clock
        self._stats = _Stats()

    @property
    def port(self) -> int:
        """The port every host listens on; raises RuntimeError before :meth:`start`.

        With no hosts nothing is bound and this is the port asked for.
        """
        return super().port

    def rcpts(self) -> list[tuple[str, str, int]]:
        """``(host address, recipient as sent, reply code)`` of every RCPT answered, in order.

        RCPTs that aiosmtpd rejects itself (before MAIL, bad syntax) are not included.
        """
        return self._stats.rcpts()

    def rcpt_count(self, recipient: str | None = None) -> int:
        """RCPTs answered, all or only those for ``recipient`` (compared case-insensitively)."""
        entries = self._stats.rcpts()
        if recipient is None:
            return len(entries)
        wanted = recipient.casefold()
        return sum(1 for _, sent, _ in entries if sent.casefold() == wanted)

    def sessions(self, host: str) -> int:
        """Connections ``host`` accepted, including those turned away with a 421 banner."""
        return self._stats.sessions(loopback_address(host))

    def max_concurrent_sessions(self, host: str) -> int:
        """The most connections ``host`` had open at once (421-throttled ones included)."""
        return self._stats.most_open(loopback_address(host))

    def data_attempts(self) -> int:
        """DATA commands received (each refused); a well-behaved prober sends none."""
        return self._stats.data_attempts()

    def reset_counts(self) -> None:
        """Forget the RCPTs, sessions and DATA attempts so far (greylisting memory is kept)."""
        self._stats.reset()

    async def _bind(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> _Running:
        hosts = [
            _HostState(address, config, self._clock) for address, config in self._hosts.items()
        ]
        connections: set[asyncio.BaseTransport] = set()
        attempts = _BIND_ATTEMPTS if hosts and not self._requested_port else 1
        for attempt in range(attempts):
            servers: list[asyncio.Server] = []
            port = self._requested_port
            try:
                for host in hosts:
                    factory = functools.partial(_SmtpProtocol, host, self._stats, connections, loop)
                    server = await loop.create_server(factory, host.address, port)
                    servers.append(server)
                    # The first server picks the port (when 0 was asked); the others share it.
                    port = int(server.sockets[0].getsockname()[1])
            except OSError:
                for server in servers:
                    server.close()
                    await server.wait_closed()
                if attempt == attempts - 1:
                    raise
                continue
            return _Running(loop, thread, tuple(servers), connections, port)
        raise AssertionError("unreachable")

    async def _close(self, running: _Running) -> None:
        # Stop accepting first and let connections already accepted get their transports: closing
        # an asyncio server while a transport is being set up for it fails that setup and leaks the
        # socket (an AssertionError in Server._attach on Python 3.11).
        for server in running.servers:
            for sock in server.sockets:
                running.loop.remove_reader(sock.fileno())
        await asyncio.sleep(0)
        for server in running.servers:
            server.close()
        current = asyncio.current_task()
        for _ in range(_CLOSE_ROUNDS):
            # A connection accepted just before the servers closed gets its transport a moment
            # later, so close and wait in rounds until no session task is left.
            for transport in list(running.connections):
                transport.close()
            pending = asyncio.all_tasks() - {current}
            if not pending:
                break
            await asyncio.wait(pending, timeout=_CLOSE_ROUND_SECONDS)
        else:
            leftover = asyncio.all_tasks() - {current}
            for task in leftover:
                task.cancel()
            await asyncio.gather(*leftover, return_exceptions=True)
        for server in running.servers:
            await server.wait_closed()
        # Let the transports' last connection_lost callbacks run before the loop stops.
        await asyncio.sleep(0)
