"""A small authoritative-style DNS server on the loopback interface that serves a sandbox world.

It lets the test suite, the benchmarks and ``listclean clean --sandbox`` resolve mail domains
with a real resolver (aiodns/c-ares) and real packets, without touching the network. Which names
exist and what they answer is described by a :class:`~pipeline.sandbox.world.World`; the JSON
format of a world file is documented in :mod:`pipeline.sandbox.world`.

For a query NAME/QTYPE the server answers:

* NAME not in the world: NXDOMAIN with the AA flag (RFC 2308 §2.1);
* a zone with ``rcode``: that rcode; a zone with ``timeout``: nothing at all;
* MX: the zone's MX records in the world's order (an exchange of ``"."`` is a null MX,
  RFC 7505); A / AAAA: the zone's addresses; when there are none, or for any other QTYPE,
  NOERROR with an empty answer section (NODATA, RFC 2308 §2.2).

Every answer is delayed by the zone's ``latency_ms`` or, when that is 0, the world's; delays are
timers on the event loop, so a slow zone never holds up the others. :meth:`SandboxDNS.hold` keeps
the answers for a name back until :meth:`SandboxDNS.release`: a test that needs a lookup to be
under way while it acts holds the name instead of guessing how long a delay will last. Malformed
packets are dropped and nothing is logged per query.

The server runs an asyncio event loop in a daemon thread and listens on UDP and, on the same
port, TCP: a resolver retries over TCP when a UDP answer is truncated (RFC 7766 §5), which
happens when a zone's answer exceeds the client's EDNS payload size (RFC 6891 §6.2.3) or 512
bytes without EDNS (RFC 1035 §4.2.1). ``dnslib`` parses requests and builds replies.

Usage::

    with SandboxDNS(load_world(SANDBOX_WORLD)) as dns:
        resolver = aiodns.DNSResolver(nameservers=[dns.address], timeout=0.5, tries=1)
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from dnslib import AAAA, EDNS0, MX, OPCODE, QTYPE, RCODE, RR, A, DNSHeader, DNSRecord

from pipeline.sandbox.loop_thread import LoopThreadServer
from pipeline.sandbox.world import World, Zone, load_world, normalize_name, world_from_dict

__all__ = ["SandboxDNS", "World", "Zone", "load_world", "world_from_dict"]

# RFC 1035 §4.2.1: without EDNS a UDP message carries at most 512 bytes.
_CLASSIC_UDP_LIMIT = 512
# The payload size we advertise and honour with EDNS: the DNS Flag Day 2020 value, which avoids
# IP fragmentation on practically every path.
_EDNS_UDP_LIMIT = 1232
# RFC 1035 §4.2.2 / RFC 7766 §8: over TCP every message is preceded by its 16-bit length.
_TCP_LENGTH_PREFIX = 2
# Binding UDP and TCP to the same ephemeral port can race with other processes; retry a few times.
_BIND_ATTEMPTS = 20
_DEFAULT_QUERY_LOG_LIMIT = 200_000


@dataclass(frozen=True)
class _Reply:
    """A packed reply, how long to wait before sending it, and the held name it waits on."""

    packet: bytes
    delay: float
    held: str | None = None


@dataclass
class _Holds:
    """Names whose answers wait, and the sends parked until each is released; used only on the
    server's loop thread."""

    names: set[str] = field(default_factory=set)
    parked: dict[str, list[Callable[[], None]]] = field(default_factory=dict)

    def send(self, reply: _Reply, send: Callable[[], None]) -> None:
        """Send now, after the reply's delay, or when its name is released."""
        if reply.held is not None and reply.held in self.names:
            self.parked.setdefault(reply.held, []).append(send)
        elif reply.delay > 0:
            asyncio.get_running_loop().call_later(reply.delay, send)
        else:
            send()

    def release(self, name: str) -> None:
        self.names.discard(name)
        for send in self.parked.pop(name, []):
            send()


class _QueryLog:
    """Counts queries and remembers the most recent ones; shared by the loop and other threads."""

    def __init__(self, limit: int) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._entries: deque[tuple[str, str, int]] = deque(maxlen=limit)

    def record(self, name: str, qtype: str, qid: int) -> None:
        with self._lock:
            self._count += 1
            self._entries.append((name, qtype, qid))

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    def entries(self) -> list[tuple[str, str, int]]:
        with self._lock:
            return list(self._entries)

    def reset(self) -> None:
        with self._lock:
            self._count = 0
            self._entries.clear()


class _Responder:
    """Turns one request packet into a reply (or into silence); transport-independent."""

    def __init__(self, world: World, log: _QueryLog, holds: _Holds) -> None:
        self._world = world
        self._log = log
        self.holds = holds

    def respond(self, packet: bytes, *, udp: bool) -> _Reply | None:
        try:
            request = DNSRecord.parse(packet)
        except Exception:
            # dnslib raises DNSError for most malformed input but lets other exceptions through
            # for some (e.g. bad label encodings); whatever a stray packet contains, we drop it.
            return None
        header = request.header
        if header.qr:
            # Never answer a response: two servers replying to each other would loop forever.
            return None
        if header.opcode != OPCODE.QUERY:
            return self._error(request, RCODE.NOTIMP)
        if len(request.questions) != 1:
            # RFC 9619: a query carries exactly one question.
            return self._error(request, RCODE.FORMERR)
        question = request.q
        name = normalize_name(str(question.qname))
        self._log.record(name, QTYPE.get(question.qtype, f"TYPE{question.qtype}"), header.id)
        zone = self._world.zones.get(name)
        if zone is not None and zone.timeout:
            return None
        reply = self._answer(request, zone)
        edns = _client_edns_size(request)
        if edns is not None:
            reply.add_ar(EDNS0(udp_len=_EDNS_UDP_LIMIT))
        wire = reply.pack()
        limit = _CLASSIC_UDP_LIMIT if edns is None else min(edns, _EDNS_UDP_LIMIT)
        if udp and len(wire) > limit:
            wire = _truncated(reply).pack()
        return _Reply(wire, self._latency_ms(zone) / 1000.0, name)

    def _latency_ms(self, zone: Zone | None) -> float:
        # A zone's own latency replaces the world's default rather than adding to it.
        if zone is not None and zone.latency_ms:
            return zone.latency_ms
        return self._world.latency_ms

    def _error(self, request: DNSRecord, rcode: int) -> _Reply:
        # No question is echoed: with none or several there is no single one to echo.
        reply = DNSRecord(DNSHeader(id=request.header.id, qr=1, rcode=rcode))
        return _Reply(reply.pack(), 0.0)

    def _answer(self, request: DNSRecord, zone: Zone | None) -> DNSRecord:
        if zone is None:
            reply = request.reply(ra=0, aa=1)
            reply.header.rcode = RCODE.NXDOMAIN
            return reply
        if zone.rcode is not None:
            # A forced NXDOMAIN is an authoritative statement about the name; SERVFAIL and
            # REFUSED say the server could not or would not speak for it (AA: RFC 1035 §4.1.1).
            reply = request.reply(ra=0, aa=int(zone.rcode == "NXDOMAIN"))
            reply.header.rcode = getattr(RCODE, zone.rcode)
            return reply
        reply = request.reply(ra=0, aa=1)
        qname = request.q.qname
        qtype = request.q.qtype
        if qtype == QTYPE.MX:
            for preference, exchange in zone.mx:
                reply.add_answer(RR(qname, QTYPE.MX, ttl=zone.ttl, rdata=MX(exchange, preference)))
        elif qtype == QTYPE.A:
            for address in zone.a:
                reply.add_answer(RR(qname, QTYPE.A, ttl=zone.ttl, rdata=A(address)))
        elif qtype == QTYPE.AAAA:
            for address in zone.aaaa:
                reply.add_answer(RR(qname, QTYPE.AAAA, ttl=zone.ttl, rdata=AAAA(address)))
        return reply


def _client_edns_size(request: DNSRecord) -> int | None:
    """The UDP payload size the client advertised in an OPT record (RFC 6891 §6.1.2), if any."""
    for record in request.ar:
        if record.rtype == QTYPE.OPT:
            # RFC 6891 §6.2.5: values below 512 are treated as 512.
            return max(_CLASSIC_UDP_LIMIT, int(record.rclass))
    return None


def _truncated(reply: DNSRecord) -> DNSRecord:
    """``reply`` with TC set and no records, so the client retries over TCP (RFC 2181 §9)."""
    header = reply.header
    short = DNSRecord(
        DNSHeader(id=header.id, bitmap=header.bitmap, qr=1, rcode=header.rcode), q=reply.q
    )
    # The question is kept: c-ares discards replies whose question does not match its query.
    short.header.tc = 1
    short.ar = [record for record in reply.ar if record.rtype == QTYPE.OPT]
    return short


class _UdpProtocol(asyncio.DatagramProtocol):
    def __init__(self, responder: _Responder) -> None:
        self._responder = responder
        self._transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Before Python 3.13 the selector loop's UDP transport does not subclass
        # DatagramTransport, so an isinstance check would fail; the loop guarantees the type.
        self._transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        reply = self._responder.respond(data, udp=True)
        if reply is not None:
            self._responder.holds.send(reply, functools.partial(self._send, reply.packet, addr))

    def error_received(self, exc: Exception) -> None:
        # An ICMP "port unreachable" from a client that stopped waiting is no reason to stop.
        pass

    def _send(self, packet: bytes, addr: tuple[str | int, ...]) -> None:
        # A delayed reply may fire after stop() closed the socket; it is simply not sent.
        if self._transport is not None and not self._transport.is_closing():
            self._transport.sendto(packet, addr)


class _TcpProtocol(asyncio.Protocol):
    def __init__(self, responder: _Responder, connections: set[asyncio.Transport]) -> None:
        self._responder = responder
        self._connections = connections
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._connections.add(self._transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._transport is not None:
            self._connections.discard(self._transport)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= _TCP_LENGTH_PREFIX:
            size = int.from_bytes(self._buffer[:_TCP_LENGTH_PREFIX], "big")
            end = _TCP_LENGTH_PREFIX + size
            if len(self._buffer) < end:
                return
            message = bytes(self._buffer[_TCP_LENGTH_PREFIX:end])
            del self._buffer[:end]
            reply = self._responder.respond(message, udp=False)
            if reply is None:
                continue
            framed = len(reply.packet).to_bytes(_TCP_LENGTH_PREFIX, "big") + reply.packet
            self._responder.holds.send(reply, functools.partial(self._send, framed))

    def _send(self, framed: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(framed)


@dataclass(frozen=True)
class _Running:
    """Everything that exists only while the server runs."""

    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    udp: asyncio.DatagramTransport
    tcp: asyncio.Server
    connections: set[asyncio.Transport]
    port: int


class SandboxDNS(LoopThreadServer[_Running]):
    """Serve ``world`` over UDP and TCP on ``host:port`` (port 0 picks a free one)."""

    _thread_name = "sandbox-dns"

    def __init__(
        self,
        world: World,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        query_log_limit: int = _DEFAULT_QUERY_LOG_LIMIT,
    ) -> None:
        super().__init__()
        self._world = world
        self._host = host
        self._requested_port = port
        self._log = _QueryLog(query_log_limit)
        self._holds = _Holds()

    @property
    def port(self) -> int:
        """The port bound (UDP and TCP); raises RuntimeError before :meth:`start`."""
        return super().port

    @property
    def address(self) -> str:
        """``HOST:PORT`` as c-ares/aiodns take it in ``nameservers`` (IPv6 as ``[HOST]:PORT``)."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{host}:{self.port}"

    @property
    def query_count(self) -> int:
        """Well-formed queries received since start or the last :meth:`reset_counts`."""
        return self._log.count

    def queries(self) -> list[tuple[str, str]]:
        """``(name, qtype)`` of the most recent queries (up to ``query_log_limit``), oldest first.

        ``name`` is lower-case without the trailing dot; ``qtype`` is its mnemonic ("MX").
        """
        return [(name, qtype) for name, qtype, _ in self._log.entries()]

    def queries_with_ids(self) -> list[tuple[str, str, int]]:
        """``(name, qtype, query id)`` of the most recent queries, oldest first. A resolver that
        sends a query again while it waits (c-ares does) sends it with the same id, so one
        question asked once is one id, however many times its packet came."""
        return self._log.entries()

    def reset_counts(self) -> None:
        """Forget the queries received so far."""
        self._log.reset()

    def hold(self, name: str) -> None:
        """Keep every answer about *name* back, from now until :meth:`release`."""
        self._on_loop(self._holds.names.add, normalize_name(name))

    def release(self, name: str) -> None:
        """Send the answers about *name* held so far, and answer it as usual from now on."""
        self._on_loop(self._holds.release, normalize_name(name))

    def _on_loop(self, call: Callable[[str], None], name: str) -> None:
        async def run() -> None:
            call(name)

        running = self._running
        if running is None:
            call(name)  # not started: nothing is parked, and no loop thread to race with
            return
        asyncio.run_coroutine_threadsafe(run(), running.loop).result()

    async def _bind(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> _Running:
        responder = _Responder(self._world, self._log, self._holds)
        connections: set[asyncio.Transport] = set()
        attempts = 1 if self._requested_port else _BIND_ATTEMPTS
        for attempt in range(attempts):
            udp, _ = await loop.create_datagram_endpoint(
                lambda: _UdpProtocol(responder), local_addr=(self._host, self._requested_port)
            )
            port = int(udp.get_extra_info("sockname")[1])
            try:
                tcp = await loop.create_server(
                    lambda: _TcpProtocol(responder, connections), self._host, port
                )
            except OSError:
                # The TCP port of the same number is taken; pick another UDP port and retry.
                udp.close()
                if attempt == attempts - 1:
                    raise
                continue
            return _Running(loop, thread, udp, tcp, connections, port)
        raise AssertionError("unreachable")

    async def _close(self, running: _Running) -> None:
        running.tcp.close()
        for transport in list(running.connections):
            transport.close()
        running.udp.close()
        await running.tcp.wait_closed()
        # Let the transports' connection_lost callbacks run before the loop stops.
        await asyncio.sleep(0)
