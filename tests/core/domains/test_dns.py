"""Domain checks against a real DNS server on loopback: every answer kind, retries, health."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from pipeline.core.domains.dns import (
    DnsAnswer,
    DnsStatus,
    Resolver,
    cares_tries,
    check_health,
    lookup_domains,
)
from pipeline.core.errors import ResolverUnhealthyError
from pipeline.sandbox.dns_server import SandboxDNS, world_from_dict
from tests.conftest import fast_dns

ZONES = {
    "gmail.com": {
        "mx": [[5, "gmail-smtp-in.l.google.com"], [10, "alt1.gmail-smtp-in.l.google.com"]]
    },
    "outlook.com": {"mx": [[10, "outlook-com.olc.protection.outlook.com"]]},
    "yahoo.com": {"mx": [[1, "mta5.am0.yahoodns.net"]]},
    "ordered.com": {
        "mx": [[20, "b.mx.ordered.com"], [10, "MX1.Ordered.COM."], [30, "c.ordered.com"]]
    },
    "tie.com": {"mx": [[10, "zeta.tie.com"], [10, "alpha.tie.com"]]},
    "nullmx.com": {"mx": [[0, "."]]},
    "mixed-null.com": {"mx": [[0, "."], [10, "real.mixed-null.com"]]},
    "a-only.com": {"a": ["192.0.2.10"]},
    "aaaa-only.com": {"aaaa": ["2001:db8::25"]},
    "nothing.com": {},
    "servfail.com": {"rcode": "SERVFAIL"},
    "refused.com": {"rcode": "REFUSED"},
    "silent.com": {"timeout": True},
}


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxDNS]:
    with SandboxDNS(world_from_dict({"zones": ZONES})) as dns:
        yield dns


def lookup(server: SandboxDNS, domain: str, **overrides: object) -> tuple[DnsAnswer, int]:
    async def go() -> tuple[DnsAnswer, int]:
        resolver = Resolver(fast_dns(server.address, **overrides))
        try:
            answers = await lookup_domains(resolver, [domain], concurrency=1)
            return answers[domain], resolver.queries_sent
        finally:
            await resolver.close()

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("domain", "status", "mx", "queries"),
    [
        ("gmail.com", DnsStatus.MX, "gmail-smtp-in.l.google.com", 1),
        # RFC 5321 §5.1: lowest preference wins; the host is lower-cased without its dot.
        ("ordered.com", DnsStatus.MX, "mx1.ordered.com", 1),
        ("tie.com", DnsStatus.MX, "alpha.tie.com", 1),
        ("nullmx.com", DnsStatus.NULL_MX, "", 1),
        ("mixed-null.com", DnsStatus.MX, "real.mixed-null.com", 1),
        ("a-only.com", DnsStatus.IMPLICIT_MX, "a-only.com", 2),
        ("aaaa-only.com", DnsStatus.IMPLICIT_MX, "aaaa-only.com", 3),
        ("nothing.com", DnsStatus.NO_MAIL_HOST, "", 3),
        ("not-in-the-world.com", DnsStatus.NO_DOMAIN, "", 1),
    ],
)
def test_answer_kinds(
    server: SandboxDNS, domain: str, status: DnsStatus, mx: str, queries: int
) -> None:
    answer, sent = lookup(server, domain)
    assert answer == DnsAnswer(status, mx)
    assert sent == queries  # never more than 3 per domain when the DNS works


@pytest.mark.parametrize(
    ("domain", "status"),
    [
        ("servfail.com", DnsStatus.SERVFAIL),
        ("refused.com", DnsStatus.SERVFAIL),
        ("silent.com", DnsStatus.TIMEOUT),
    ],
)
def test_temporary_failures_are_retried_then_reported(
    server: SandboxDNS, domain: str, status: DnsStatus
) -> None:
    server.reset_counts()
    answer, sent = lookup(server, domain, attempts=3)
    assert answer.status is status
    assert sent == 3
    seen = [q for q in server.queries() if q[0] == domain]
    assert set(seen) == {(domain, "MX")}
    if status is DnsStatus.TIMEOUT:  # c-ares may send each attempt again while it waits
        assert 3 <= len(seen) <= 3 * cares_tries(fast_dns(server.address).timeout)
    else:
        assert len(seen) == 3


def test_retries_wait_with_exponential_backoff(server: SandboxDNS) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def go() -> None:
        resolver = Resolver(fast_dns(server.address, attempts=4, backoff=0.5), sleep=sleep)
        await lookup_domains(resolver, ["servfail.com"], concurrency=1)
        await resolver.close()

    asyncio.run(go())
    assert waits == [0.5, 1.0, 2.0]


def test_the_wait_for_an_answer_is_dns_timeout_after_fast_answers_too() -> None:
    """c-ares would time a query out after 250 ms once its server answered fast three times; an
    answer that comes within dns.timeout is still taken, and a silent one waits all of it."""
    zones = {f"quick{i}.com": {"mx": [[10, f"mx.quick{i}.com"]]} for i in range(6)}
    zones["late.com"] = {"mx": [[10, "mx.late.com"]]}
    held_for = 0.6

    async def release_when_asked(dns: SandboxDNS) -> None:
        while ("late.com", "MX") not in dns.queries():
            await asyncio.sleep(0.01)
        await asyncio.sleep(held_for)
        dns.release("late.com")

    async def go(dns: SandboxDNS) -> tuple[DnsAnswer, DnsAnswer, float]:
        resolver = Resolver(fast_dns(dns.address, timeout=60.0, attempts=1))
        try:
            await lookup_domains(resolver, [f"quick{i}.com" for i in range(6)], concurrency=1)
            releasing = asyncio.create_task(release_when_asked(dns))
            late = (await lookup_domains(resolver, ["late.com"], concurrency=1))["late.com"]
            await releasing
            silent = Resolver(fast_dns(dns.address, timeout=held_for, attempts=1))
            await lookup_domains(silent, ["quick0.com", "quick1.com", "quick2.com"], 1)
            dns.hold("late.com")
            started = asyncio.get_running_loop().time()
            unanswered = (await lookup_domains(silent, ["late.com"], 1))["late.com"]
            waited = asyncio.get_running_loop().time() - started
            await silent.close()
            return late, unanswered, waited
        finally:
            await resolver.close()

    with SandboxDNS(world_from_dict({"zones": zones})) as dns:
        dns.hold("late.com")
        late, unanswered, waited = asyncio.run(go(dns))
        dns.release("late.com")
    assert late == DnsAnswer(DnsStatus.MX, "mx.late.com")
    assert unanswered.status is DnsStatus.TIMEOUT
    assert waited >= held_for


def test_cares_sends_a_query_again_until_its_shortest_waits_cover_the_timeout() -> None:
    assert [cares_tries(t) for t in (0.01, 0.125, 0.2, 0.3, 2.0, 300.0)] == [1, 1, 2, 2, 5, 12]


def test_many_domains_concurrently(server: SandboxDNS) -> None:
    domains = [f"missing-{i}.com" for i in range(300)] + ["gmail.com", "a-only.com"]

    async def go() -> dict[str, DnsAnswer]:
        resolver = Resolver(fast_dns(server.address))
        try:
            return await lookup_domains(resolver, domains, concurrency=50)
        finally:
            await resolver.close()

    answers = asyncio.run(go())
    assert set(answers) == set(domains)
    assert answers["gmail.com"].status is DnsStatus.MX
    assert sum(a.status is DnsStatus.NO_DOMAIN for a in answers.values()) == 300


def health(address: str, canaries: tuple[str, ...]) -> None:
    async def go() -> None:
        resolver = Resolver(fast_dns(address, attempts=1))
        try:
            await check_health(resolver, canaries)
        finally:
            await resolver.close()

    asyncio.run(go())


def test_healthy_resolver_passes(server: SandboxDNS) -> None:
    health(server.address, ("gmail.com", "outlook.com", "yahoo.com"))


def test_resolver_without_the_canaries_is_unhealthy(server: SandboxDNS) -> None:
    with pytest.raises(ResolverUnhealthyError) as caught:
        health(server.address, ("gmail.com", "hotmail.com", "icloud.com"))
    message = str(caught.value)
    assert server.address in message
    assert "--resolver" in message and "--offline" in message
    assert "hotmail.com: no_domain" in message


def test_resolver_that_does_not_answer_is_unhealthy() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))  # bound but never read: queries time out
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        with pytest.raises(ResolverUnhealthyError, match="dns_timeout"):
            health(address, ("gmail.com", "outlook.com", "yahoo.com"))
