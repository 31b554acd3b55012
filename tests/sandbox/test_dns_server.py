"""The sandbox DNS server, queried by the resolver listclean really uses (aiodns / c-ares)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiodns
import pytest
from aiodns.error import DNSError
from dnslib import QTYPE, RCODE, DNSRecord

from pipeline.sandbox.dns_server import SandboxDNS
from pipeline.sandbox.files import SANDBOX_WORLD
from pipeline.sandbox.world import World, Zone, load_world, world_from_dict

SAMPLE_WORLD = SANDBOX_WORLD

# c-ares status codes as aiodns reports them in DNSError.args[0].
ARES_ENODATA = 1
ARES_ESERVFAIL = 3
ARES_ENOTFOUND = 4
ARES_EREFUSED = 6
ARES_ETIMEOUT = 12

WORLD = world_from_dict(
    {
        "zones": {
            "gmail.com": {
                "mx": [[5, "gmail-smtp-in.l.google.com"], [10, "alt1.gmail-smtp-in.l.google.com"]]
            },
            "reversed.com": {"mx": [[20, "b.reversed.com"], [10, "a.reversed.com"]]},
            "nullmx-domain.com": {"mx": [[0, "."]]},
            "a-only.com": {"a": ["192.0.2.10", "192.0.2.11"]},
            "v6.com": {"aaaa": ["2001:db8::1"]},
            "broken.com": {"rcode": "SERVFAIL"},
            "refused.com": {"rcode": "REFUSED"},
            "gone.com": {"rcode": "NXDOMAIN"},
            "slow.com": {"timeout": True},
            "laggy.com": {"mx": [[10, "mx.laggy.com"]], "latency_ms": 300},
            "empty.com": {},
            # Over 1232 bytes: more than fits any UDP answer, so c-ares must retry over TCP.
            "big.com": {"a": [f"198.51.100.{i}" for i in range(1, 151)]},
        }
    }
)


@pytest.fixture(scope="module")
def dns() -> Iterator[SandboxDNS]:
    with SandboxDNS(WORLD) as server:
        yield server


async def _query(address: str, name: str, qtype: str, timeout: float) -> Any:
    resolver = aiodns.DNSResolver(nameservers=[address], timeout=timeout, tries=1)
    try:
        return await resolver.query_dns(name, qtype)
    finally:
        await resolver.close()


def query(dns: SandboxDNS, name: str, qtype: str, timeout: float = 1.0) -> Any:
    return asyncio.run(_query(dns.address, name, qtype, timeout))


def error_code(dns: SandboxDNS, name: str, qtype: str, timeout: float = 1.0) -> int:
    with pytest.raises(DNSError) as caught:
        query(dns, name, qtype, timeout)
    code: int = caught.value.args[0]
    return code


def mx(dns: SandboxDNS, name: str) -> list[tuple[int, str]]:
    return [(rr.data.priority, rr.data.exchange) for rr in query(dns, name, "MX").answer]


def test_mx_records_are_served_in_world_order(dns: SandboxDNS) -> None:
    assert mx(dns, "gmail.com") == [
        (5, "gmail-smtp-in.l.google.com"),
        (10, "alt1.gmail-smtp-in.l.google.com"),
    ]
    assert mx(dns, "reversed.com") == [(20, "b.reversed.com"), (10, "a.reversed.com")]


def test_null_mx_has_root_exchange(dns: SandboxDNS) -> None:
    # c-ares renders the root name "." as the empty string.
    assert mx(dns, "nullmx-domain.com") == [(0, "")]


def test_a_only_domain_has_no_mx_but_addresses(dns: SandboxDNS) -> None:
    assert error_code(dns, "a-only.com", "MX") == ARES_ENODATA
    answer = query(dns, "a-only.com", "A").answer
    assert [rr.data.addr for rr in answer] == ["192.0.2.10", "192.0.2.11"]
    assert {rr.ttl for rr in answer} == {300}


def test_aaaa_records(dns: SandboxDNS) -> None:
    assert [rr.data.addr for rr in query(dns, "v6.com", "AAAA").answer] == ["2001:db8::1"]
    assert error_code(dns, "v6.com", "A") == ARES_ENODATA


@pytest.mark.parametrize(
    ("name", "qtype"),
    [("empty.com", "MX"), ("empty.com", "A"), ("empty.com", "AAAA"), ("gmail.com", "TXT")],
)
def test_nodata(dns: SandboxDNS, name: str, qtype: str) -> None:
    assert error_code(dns, name, qtype) == ARES_ENODATA


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("not-in-world.com", ARES_ENOTFOUND),
        ("gone.com", ARES_ENOTFOUND),
        ("broken.com", ARES_ESERVFAIL),
        ("refused.com", ARES_EREFUSED),
    ],
)
def test_rcodes(dns: SandboxDNS, name: str, expected: int) -> None:
    assert error_code(dns, name, "MX") == expected


def test_timeout_zone_is_never_answered(dns: SandboxDNS) -> None:
    dns.reset_counts()
    assert error_code(dns, "slow.com", "MX", timeout=0.2) == ARES_ETIMEOUT
    assert ("slow.com", "MX") in dns.queries()


def test_zone_latency_delays_only_that_zone(dns: SandboxDNS) -> None:
    async def timed(name: str) -> float:
        started = time.perf_counter()
        await _query(dns.address, name, "MX", 2.0)
        return time.perf_counter() - started

    async def both() -> list[float]:
        return list(await asyncio.gather(timed("laggy.com"), timed("gmail.com")))

    laggy, fast = asyncio.run(both())
    assert 0.28 <= laggy < 1.0
    # The delay is a timer, not a sleep: other answers are not held up behind it.
    assert fast < 0.2


def test_world_latency_applies_to_every_answer() -> None:
    world = World(zones={"a.com": Zone(mx=((10, "mx.a.com"),))}, latency_ms=150)
    with SandboxDNS(world) as server:
        started = time.perf_counter()
        assert mx(server, "a.com") == [(10, "mx.a.com")]
        assert error_code(server, "missing.com", "MX") == ARES_ENOTFOUND
        assert time.perf_counter() - started >= 0.28


def test_a_held_name_is_answered_only_once_released() -> None:
    """Held answers wait for release, over UDP and TCP; other names are answered meanwhile."""
    world = World(
        zones={"held.com": Zone(mx=((10, "mx.held.com"),)), "free.com": Zone(a=("192.0.2.1",))}
    )
    packet = DNSRecord.question("held.com", "MX").pack()
    with SandboxDNS(world) as server:
        server.hold("Held.COM.")

        async def scenario() -> tuple[bool, Any, Any, bytes]:
            asked = asyncio.create_task(_query(server.address, "held.com", "MX", 60.0))
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(len(packet).to_bytes(2, "big") + packet)
            while server.queries().count(("held.com", "MX")) < 2:
                await asyncio.sleep(0.01)
            free = await _query(server.address, "free.com", "A", 60.0)
            waiting = not asked.done()
            await asyncio.to_thread(server.release, "held.com")
            size = int.from_bytes(await reader.readexactly(2), "big")
            framed = await reader.readexactly(size)
            writer.close()
            return waiting, free, await asked, framed

        waiting, free, answer, framed = asyncio.run(scenario())
        assert waiting
        assert [rr.data.addr for rr in free.answer] == ["192.0.2.1"]
        assert [rr.data.exchange for rr in answer.answer] == ["mx.held.com"]
        assert [str(rr.rdata.label) for rr in DNSRecord.parse(framed).rr] == ["mx.held.com."]
        assert mx(server, "held.com") == [(10, "mx.held.com")]  # answered at once from now on


def test_names_match_case_insensitively(dns: SandboxDNS) -> None:
    dns.reset_counts()
    assert mx(dns, "GMail.COM") == mx(dns, "gmail.com")
    assert dns.queries() == [("gmail.com", "MX"), ("gmail.com", "MX")]
    assert WORLD.lookup("GMAIL.com.") is WORLD.lookup("gmail.com")
    assert WORLD.lookup("absent.com") is None


def test_queries_are_counted_in_arrival_order() -> None:
    with SandboxDNS(WORLD) as server:
        assert server.query_count == 0
        mx(server, "gmail.com")
        query(server, "a-only.com", "A")
        error_code(server, "nope.com", "AAAA")
        assert server.query_count == 3
        assert server.queries() == [("gmail.com", "MX"), ("a-only.com", "A"), ("nope.com", "AAAA")]
        server.reset_counts()
        assert server.query_count == 0
        assert server.queries() == []


def test_a_query_sent_again_keeps_its_id_and_a_question_asked_again_does_not() -> None:
    """c-ares sends a query again while it waits for the answer, under the same id; the log's
    ids tell those packets from a question asked twice (the bench counts both)."""
    world = World(zones={f"{n}.com": Zone(a=("192.0.2.1",)) for n in ("a", "b", "c", "late")})
    with SandboxDNS(world) as server:
        server.hold("late.com")

        async def scenario() -> None:
            resolver = aiodns.DNSResolver(nameservers=[server.address], timeout=60.0, tries=12)
            for name in ("a.com", "b.com", "c.com"):  # fast answers: c-ares now waits 250 ms
                await resolver.query_dns(name, "A")
            waiting = asyncio.ensure_future(resolver.query_dns("late.com", "A"))
            while server.queries().count(("late.com", "A")) < 2:
                await asyncio.sleep(0.01)
            server.release("late.com")
            await waiting
            await resolver.close()
            again = aiodns.DNSResolver(nameservers=[server.address], timeout=60.0, tries=1)
            await again.query_dns("late.com", "A")  # asked again (c-ares keeps answers it had)
            await again.close()

        asyncio.run(scenario())
        late = [qid for name, _, qid in server.queries_with_ids() if name == "late.com"]
    assert len(late) >= 3
    assert len(set(late[:-1])) == 1  # the packets of the held question: one id
    assert late[-1] != late[0]  # the question asked again: another id


def test_query_log_is_bounded_but_count_is_not() -> None:
    with SandboxDNS(WORLD, query_log_limit=2) as server:
        for name in ("a.com", "b.com", "c.com"):
            error_code(server, name, "MX")
        assert server.query_count == 3
        assert server.queries() == [("b.com", "MX"), ("c.com", "MX")]


def test_oversized_answer_is_truncated_over_udp_and_complete_over_tcp(dns: SandboxDNS) -> None:
    dns.reset_counts()
    assert len(query(dns, "big.com", "A").answer) == 150
    # The first, UDP, answer had TC set, so c-ares asked again over TCP.
    assert dns.queries() == [("big.com", "A"), ("big.com", "A")]


def test_udp_limit_without_edns_is_512_bytes(dns: SandboxDNS) -> None:
    # RFC 1035 §4.2.1; the question is kept so the client can match the reply to its query.
    reply = DNSRecord.parse(udp_exchange(dns, DNSRecord.question("big.com", "A").pack()))
    assert reply.header.tc == 1
    assert reply.rr == []
    assert str(reply.q.qname) == "big.com."


def test_raw_reply_flags(dns: SandboxDNS) -> None:
    request = DNSRecord.question("Not-In-World.com", "MX")
    reply = DNSRecord.parse(udp_exchange(dns, request.pack()))
    assert reply.header.id == request.header.id
    assert reply.header.rcode == RCODE.NXDOMAIN
    assert reply.header.aa == 1
    assert reply.q.qtype == QTYPE.MX
    # The question is echoed byte for byte, case included.
    assert str(reply.q.qname) == "Not-In-World.com."


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"\x00",
        b"\x12\x34\x01\x00\x00\x01",  # header cut short
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00",  # promises a question, has none
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x3fabc",  # label runs past the end
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c\x00\x0f\x00\x01",  # self-pointer
        bytes(range(256)) * 4,
    ],
)
def test_malformed_packets_are_dropped_and_server_survives(dns: SandboxDNS, garbage: bytes) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(garbage, ("127.0.0.1", dns.port))
    assert mx(dns, "gmail.com")[0] == (5, "gmail-smtp-in.l.google.com")


def test_responses_are_not_answered(dns: SandboxDNS) -> None:
    response = DNSRecord.question("gmail.com", "MX").reply().pack()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(0.1)
        sock.sendto(response, ("127.0.0.1", dns.port))
        with pytest.raises(TimeoutError):
            sock.recv(4096)


def test_tcp_answers_length_prefixed_queries(dns: SandboxDNS) -> None:
    packet = DNSRecord.question("gmail.com", "MX").pack()
    framed = len(packet).to_bytes(2, "big") + packet
    with socket.create_connection(("127.0.0.1", dns.port), timeout=1.0) as sock:
        # Two pipelined queries in one write (RFC 7766 §6.2.1.1).
        sock.sendall(framed + framed)
        replies = [read_tcp_message(sock), read_tcp_message(sock)]
    for raw in replies:
        assert [str(rr.rdata.label) for rr in DNSRecord.parse(raw).rr] == [
            "gmail-smtp-in.l.google.com.",
            "alt1.gmail-smtp-in.l.google.com.",
        ]


def test_lifecycle() -> None:
    server = SandboxDNS(World(zones={}))
    with pytest.raises(RuntimeError):
        _ = server.port
    server.start()
    try:
        assert server.address == f"127.0.0.1:{server.port}"
        with pytest.raises(RuntimeError):
            server.start()
    finally:
        server.stop()
    server.stop()  # idempotent


def test_sample_world_file_loads_and_serves() -> None:
    world = load_world(SAMPLE_WORLD)
    for canary in ("gmail.com", "outlook.com", "yahoo.com"):
        zone = world.lookup(canary)
        assert zone is not None and zone.mx
    # Internationalised names are stored as A-labels.
    assert world.lookup("xn--bcher-shop-9db.de") is not None
    with SandboxDNS(world) as server:
        assert mx(server, "outlook.com") == [(5, "outlook-com.olc.protection.outlook.com")]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"zones": {"a.com": {"mx": [[10]]}}}, "zone 'a.com': mx entry"),
        ({"zones": {"a.com": {"mx": [["10", "mx.a.com"]]}}}, "zone 'a.com': mx preference"),
        ({"zones": {"a.com": {"mx": [[70000, "mx.a.com"]]}}}, "zone 'a.com': mx preference"),
        ({"zones": {"a.com": {"mx": "mx.a.com"}}}, "zone 'a.com': mx must be a list"),
        ({"zones": {"a.com": {"a": ["999.1.1.1"]}}}, "zone 'a.com': a value '999.1.1.1'"),
        ({"zones": {"a.com": {"aaaa": ["192.0.2.1"]}}}, "zone 'a.com': aaaa value"),
        ({"zones": {"a.com": {"rcode": "NOTAUTH"}}}, "zone 'a.com': rcode 'NOTAUTH'"),
        ({"zones": {"a.com": {"timeout": "yes"}}}, "zone 'a.com': timeout"),
        ({"zones": {"a.com": {"ttl": True}}}, "zone 'a.com': ttl"),
        ({"zones": {"a.com": {"latency_ms": -1}}}, "zone 'a.com': latency_ms"),
        ({"zones": {"a.com": {"mxx": []}}}, "zone 'a.com': unknown key(s) ['mxx']"),
        ({"zones": {"a.com": {"rcode": "SERVFAIL", "a": ["192.0.2.1"]}}}, "zone 'a.com': rcode"),
        ({"zones": {"a.com": []}}, "zone 'a.com': must be an object"),
        ({"zones": {"bücher.de": {}}}, "'xn--bcher-kva.de'"),
        ({"zones": {"a..com": {}}}, "zone name 'a..com'"),
        ({"zones": {"A.com": {}, "a.com.": {}}}, "duplicate"),
        ({"zones": []}, "'zones' must be an object"),
        ({"zones": {}, "latency": 5}, "unknown world key(s) ['latency']"),
        ({"zones": {}, "latency_ms": "5"}, "world latency_ms"),
    ],
)
def test_world_from_dict_rejects_bad_input(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        world_from_dict(data)
    assert message in str(caught.value)


def test_world_from_dict_normalises() -> None:
    world = world_from_dict(
        {"latency_ms": 5, "zones": {"Example.ORG.": {"rcode": "servfail", "ttl": 60}}}
    )
    assert world.latency_ms == 5.0
    assert dict(world.zones) == {"example.org": Zone(rcode="SERVFAIL", ttl=60)}


def test_load_world_reports_the_file(tmp_path: Path) -> None:
    path = tmp_path / "world.json"
    path.write_text(json.dumps({"zones": {"x.com": {"a": "192.0.2.1"}}}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"world\.json: zone 'x\.com': a must be a list"):
        load_world(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_world(path)


def udp_exchange(dns: SandboxDNS, packet: bytes) -> bytes:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(1.0)
        sock.sendto(packet, ("127.0.0.1", dns.port))
        return sock.recv(65535)


def read_tcp_message(sock: socket.socket) -> bytes:
    size = int.from_bytes(read_exactly(sock, 2), "big")
    return read_exactly(sock, size)


def read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed early")
        data += chunk
    return data
