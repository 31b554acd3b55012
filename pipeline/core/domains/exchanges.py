"""Whether a domain's mail can go anywhere: an MX host that resolves, or a routable implicit MX.

RFC 5321 §5.1: "If MX records are present, but none of them are usable, or the implicit MX is
unusable, this situation MUST be reported as an error." So a domain is Invalid ``no_mail_host``
when every one of its exchanges is unusable:

- an MX record names a host (RFC 1035 §3.3.9: EXCHANGE is a domain name; RFC 5321 §2.3.5 allows
  only names that resolve), so an IP address written as the exchange is no host at all;
- an MX host whose name does not exist (NXDOMAIN) or has neither an A nor an AAAA record;
- an implicit MX (no MX records, an A/AAAA record instead) whose every address is not globally
  routable: loopback, private, link-local, shared or reserved space. A domain whose A record is
  127.0.0.1 or 10.0.0.5 has nowhere on the internet to take mail (python-email-validator's
  deliverability check ignores such addresses the same way).

Each distinct MX host is looked up once per run however many domains name it, best exchange
first and the next only when it is unusable, and its answer is kept in the domain cache like a
domain's (:class:`HostStore`). A temporary DNS failure never makes a domain Invalid.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from pipeline.core.domains.dns import DnsAnswer, DnsStatus, HostStatus, Resolver, lookup_host

_LOOPBACK = ipaddress.ip_address("127.0.0.1")


class HostStore(Protocol):
    """Where MX host answers are kept between runs (the domain cache)."""

    def get_hosts(self, hosts: Iterable[str]) -> dict[str, HostStatus]: ...
    def put_hosts(self, answers: Mapping[str, HostStatus]) -> None: ...


class MemoryHosts:
    """A :class:`HostStore` for an engine without a cache: remembers for its own lifetime."""

    def __init__(self) -> None:
        self._known: dict[str, HostStatus] = {}

    def get_hosts(self, hosts: Iterable[str]) -> dict[str, HostStatus]:
        return {h: self._known[h] for h in hosts if h in self._known}

    def put_hosts(self, answers: Mapping[str, HostStatus]) -> None:
        self._known.update(answers)


@dataclass(frozen=True)
class Routing:
    """Which addresses mail can be delivered to.

    On the internet: globally routable ones. In the sandbox world every mail server sits on its
    own loopback address from 127.0.0.2 up, which plays the internet, while 127.0.0.1 (where
    the sandbox's DNS server listens) keeps playing the loopback address.
    """

    sandbox: bool = False

    def routable(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        if self.sandbox and ip.version == 4 and ip.is_loopback:
            return ip != _LOOPBACK
        return ip.is_global


async def judge_exchanges(
    resolver: Resolver,
    answers: Mapping[str, DnsAnswer],
    store: HostStore,
    routing: Routing,
    concurrency: int,
) -> dict[str, DnsAnswer]:
    """*answers* with every domain that has nowhere to deliver turned into ``no_mail_host``."""
    judged = dict(answers)
    mx = {d: a for d, a in answers.items() if a.status is DnsStatus.MX}
    implicit = {d: a for d, a in answers.items() if a.status is DnsStatus.IMPLICIT_MX}
    judged.update(await _judge_mx(resolver, mx, store, concurrency))
    limit = asyncio.Semaphore(max(1, concurrency))
    verdicts = await asyncio.gather(
        *(_judge_implicit(resolver, d, a, routing, limit) for d, a in implicit.items())
    )
    judged.update(zip(implicit, verdicts, strict=True))
    return judged


async def _judge_mx(
    resolver: Resolver, answers: Mapping[str, DnsAnswer], store: HostStore, concurrency: int
) -> dict[str, DnsAnswer]:
    """Changed answers only. Round by round: every domain's next untried exchange, each
    distinct host looked up once, until each domain has a usable one or none is left."""
    pending = {d: list(a.exchanges or (a.mx,)) for d, a in answers.items()}
    temporary: set[str] = set()
    changed: dict[str, DnsAnswer] = {}
    known: dict[str, HostStatus] = {}
    while pending:
        wanted = {hosts[0] for hosts in pending.values() if not is_address(hosts[0])}
        known.update(await _statuses(resolver, wanted - known.keys(), store, concurrency))
        for domain, hosts in list(pending.items()):
            host = hosts.pop(0)
            status = HostStatus.NO_HOST if is_address(host) else known[host]
            if status is HostStatus.TEMPORARY:
                temporary.add(domain)
            if status is HostStatus.ADDRESS or not hosts:
                del pending[domain]
            if status is not HostStatus.ADDRESS and not hosts:
                failed = DnsStatus.SERVFAIL if domain in temporary else DnsStatus.NO_MAIL_HOST
                changed[domain] = DnsAnswer(failed)
    return changed


async def _statuses(
    resolver: Resolver, hosts: set[str], store: HostStore, concurrency: int
) -> dict[str, HostStatus]:
    """Each host's status: the store's if it has one, DNS's otherwise (then stored)."""
    found = store.get_hosts(sorted(hosts))
    missing = iter(sorted(hosts - found.keys()))
    fresh: dict[str, HostStatus] = {}

    async def worker() -> None:
        for host in missing:
            fresh[host] = (await lookup_host(resolver, host)).status

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    store.put_hosts(fresh)
    return {**found, **fresh}


async def _judge_implicit(
    resolver: Resolver,
    domain: str,
    answer: DnsAnswer,
    routing: Routing,
    limit: asyncio.Semaphore,
) -> DnsAnswer:
    if any(routing.routable(a) for a in answer.addresses):
        return answer
    if answer.addresses and all(":" in a for a in answer.addresses):
        return DnsAnswer(DnsStatus.NO_MAIL_HOST)  # AAAA was asked already (there was no A)
    async with limit:  # the A records lead nowhere: an AAAA record may still
        aaaa = await lookup_host(resolver, domain, ("AAAA",))
    if any(routing.routable(a) for a in aaaa.addresses):
        return replace(answer, addresses=aaaa.addresses)
    if aaaa.status is HostStatus.TEMPORARY:
        return DnsAnswer(DnsStatus.SERVFAIL)
    return DnsAnswer(DnsStatus.NO_MAIL_HOST)


def is_address(exchange: str) -> bool:
    """An IP address written where a host name belongs ("192.0.2.25", "[192.0.2.25]")."""
    try:
        ipaddress.ip_address(exchange.strip("[]"))
    except ValueError:
        return False
    return True
