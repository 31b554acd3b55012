"""Sandbox mail servers on loopback addresses, for probing mailboxes without the network.

Each :class:`~pipeline.sandbox.world.SmtpHost` of a world gets a real SMTP server on its own
loopback address (127.0.0.2, 127.0.0.3, ...; Linux routes all of 127.0.0.0/8 to the loopback
interface), and all of them listen on the same port. With the world's DNS zones giving each MX
host an A record for its address, a prober configured with that one port reaches every host the
way it would reach port 25 of the real ones; an MX host whose address has no server refuses the
connection. The JSON format is documented in :mod:`pipeline.sandbox.world`.

Each stage can be scripted per host (keys in :mod:`pipeline.sandbox.world`; reply texts may be
multi-line and name session values, see :mod:`pipeline.sandbox.mail_hosts`).

Greeting: ``throttle_sessions`` turns away a connection that would exceed it with a
``421 4.7.0`` banner (RFC 5321 §4.2.2) and closes it. Otherwise ``greeting`` (default
``220 <name> ESMTP``) is sent; a 421 greeting closes the connection, and after a 5xx greeting
(``554 No SMTP service here``) the server answers every command but QUIT with ``503 5.5.1`` and
waits for QUIT, as RFC 5321 §3.1 says.

EHLO / HELO: ``ehlo`` / ``helo`` replace the 250 reply with a refusal (the client may then try
HELO); EHLO advertises ENHANCEDSTATUSCODES (RFC 2034) and SMTPUTF8 (RFC 6531).

MAIL FROM: the first ``mail_from`` rule whose pattern (shell-style, case-insensitive; the null
sender is "") matches the sender answers; then a ``sender_policy`` with ``"stage": "mail"``;
otherwise ``250 2.1.0``. A refused sender starts no transaction, so a RCPT after it gets 503.

RCPT TO:<local@domain> gets the first that applies:

* more RCPTs in this session than ``max_recipients``: ``452 4.5.3`` (RFC 5321 §4.5.3.1.10);
* ``rate_limit``: more RCPTs answered in its window than it allows: its reply (a 4xx);
* ``block``: ``550 5.7.1`` blocked by policy, as when the prober's address is on a blocklist;
* ``sender_policy`` (at RCPT, Postfix's default ``smtpd_delay_reject = yes``) refuses the MAIL
  FROM address: ``unknown_domain`` (reject_unknown_sender_domain) when the sender's domain has
  no dot, is ``localhost`` or has no MX/A/AAAA record in the world, with
  ``550 5.1.8 <sender>: Sender address rejected: Domain not found``; ``unverified``
  (reject_unverified_sender) when no world host would accept the sender's mailbox, with
  ``550 5.1.7 ... undeliverable address``. The null sender is never refused;
* a recipient without a domain: ``<postmaster>`` is accepted (RFC 5321 §4.5.1), others get
  ``550 5.1.3``;
* a domain the host does not serve: ``550 5.7.1`` relay denied (RFC 5321 §3.6);
* ``greylist_seconds`` and the (sender, recipient) pair is new or too recent: ``451 4.7.1``;
  greylisting runs before the mailbox lookup, so it hides whether the mailbox exists;
* a local part with its own entry in the domain's ``replies``: that reply;
* ``catch_all``, or a local part in ``mailboxes``: ``250 2.1.5``;
* in ``full``: ``452 4.2.2``; in ``disabled``: ``550 5.2.1``; otherwise ``550 5.1.1``.

``rcpt_text`` rewords any of these classes (ok, unknown, disabled, full, relay, blocked,
greylisted, too_many). Any reply with code 421, at any stage, closes the connection after it is
sent (RFC 5321 §3.8). Local parts compare case-insensitively; a domain sent as a U-label
(RFC 6531) matches its A-label. DATA is refused with ``554 5.5.1`` before any content is read: a
prober must never send a message, and :meth:`SandboxSMTP.data_attempts` counts those that try.
``delay_ms`` delays every reply after the banner and ``banner_delay_ms`` the banner.

All servers run in one asyncio event loop in a daemon thread; aiosmtpd parses the protocol.

Usage::

    world = load_world(SANDBOX_WORLD)
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import AnyStr

from aiosmtpd.smtp import SMTP

from pipeline.sandbox.loop_thread import LoopThreadServer
from pipeline.sandbox.smtp_handler import BYE, SessionHandler, Stats
from pipeline.sandbox.smtp_script import HostState
from pipeline.sandbox.smtp_script import Session as Values
from pipeline.sandbox.world import SmtpDomain, SmtpHost, loopback_address

__all__ = ["SandboxSMTP", "SmtpDomain", "SmtpHost"]

# Replies of the server's own, not scripted per host (RFC 5321 §4.2, RFC 3463).
_THROTTLED = "421 4.7.0 Too many concurrent sessions, try again later"
_NO_DATA = "554 5.5.1 DATA not accepted: this server only answers probes"
_NO_SERVICE = "503 5.5.1 No SMTP service here, only QUIT is accepted"
# Binding the first server to a free port and the others to the same number can collide with
# another process that holds that port on one of the addresses; retry with a fresh port.
_BIND_ATTEMPTS = 20
_MAX_PORT = 0xFFFF
# Shutting down: closing every session normally takes one round.
_CLOSE_ROUNDS = 20
_CLOSE_ROUND_SECONDS = 0.05


class _SmtpProtocol(SMTP):
    """aiosmtpd's SMTP session with the sandbox's throttling, delays and refusal of DATA."""

    def __init__(
        self,
        host: HostState,
        stats: Stats,
        connections: set[asyncio.BaseTransport],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        super().__init__(
            SessionHandler(host, stats),
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
        self._banner: str | None = None

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
        greeting = self._host.config.greeting
        if greeting is None:
            await super()._handle_client()
            return
        banner = greeting.render(self._session_values())
        if greeting.code == 220:
            self._banner = banner  # sent in place of aiosmtpd's own (see push)
            await super()._handle_client()
        elif greeting.code >= 500:
            await self._refuse_session(banner)
        else:
            await self.push(banner)  # a 421: push closes the connection

    async def _refuse_session(self, banner: str) -> None:
        """RFC 5321 §3.1: after a 554 greeting, wait for QUIT and answer 503 to the rest."""
        await self.push(banner)
        while self.transport is not None and not self.transport.is_closing():
            try:
                line = await self._reader.readuntil()
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                break
            if line.strip().upper() == b"QUIT":
                await self.push(BYE)
                break
            await self.push(_NO_SERVICE)
        if self.transport is not None:
            self.transport.close()

    def _session_values(self) -> Mapping[str, str]:
        peer = self.session.peer if self.session is not None else None
        client = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        return Values(self._host.config.name, client, "").values()

    async def push(self, status: AnyStr) -> None:
        if self._banner is not None:
            status, self._banner = self._banner, None  # type: ignore[assignment]
        if self._reply_pause and not self._mid_reply:
            await asyncio.sleep(self._reply_pause)
        text = status if isinstance(status, str) else status.decode("utf-8", "replace")
        last = text.rsplit("\r\n", 1)[-1]
        # RFC 5321 §4.2: "250-" continues a multi-line reply, which waits only once.
        self._mid_reply = last[3:4] == "-"
        await super().push(status)
        # The banner has its own delay; every reply after it waits delay_ms.
        self._reply_pause = self._host.config.delay_ms / 1000
        if last.startswith("421 ") and self.transport is not None:
            # RFC 5321 §3.8: a server that answers 421 closes the channel.
            self.transport.close()

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
        self._stats = Stats()

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
        hosts = [HostState(address, config, self._clock) for address, config in self._hosts.items()]
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
