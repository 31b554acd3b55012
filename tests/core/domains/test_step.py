"""The domain step: answers from the cache, else from the resolver, each question asked once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from pipeline.core.domains.dns import DnsAnswer, DnsStatus, Resolver, SharedResolver, lookup_domains
from pipeline.core.domains.step import DomainWork, domain_answers
from pipeline.core.lists import load_lists
from pipeline.sandbox.dns_server import SandboxDNS, world_from_dict
from tests.conftest import fast_dns

ZONES = {
    "gmail.com": {"mx": [[5, "mx.gmail.com"]]},
    "mx.gmail.com": {"a": ["192.0.2.5"]},
    "ordered.com": {"mx": [[10, "mx1.ordered.com"]]},
    "mx1.ordered.com": {"a": ["192.0.2.6"]},
}


@pytest.fixture
def server() -> Iterator[SandboxDNS]:
    with SandboxDNS(world_from_dict({"zones": ZONES})) as dns:
        yield dns


def test_answers_another_process_got_are_taken_not_asked_again(server: SandboxDNS) -> None:
    """A Dask driver checks the resolver with its canaries and hands their answers to the
    workers (``DomainWork.known``): the domain step takes them as fresh answers, judges their
    mail hosts as it judges any, and asks the resolver only for the other domains."""
    config = fast_dns(server.address)

    async def canaries() -> dict[str, DnsAnswer]:
        resolver = Resolver(config)
        try:
            return await lookup_domains(resolver, ["gmail.com"], 1)
        finally:
            await resolver.close()

    known = asyncio.run(canaries())
    server.reset_counts()

    async def step() -> dict[str, DnsAnswer]:
        shared = SharedResolver(config, check=False)
        work = DomainWork(load_lists(), shared, config, known=known)
        try:
            answers, stats = await domain_answers(work, ["gmail.com", "ordered.com"])
            assert stats.looked_up == 2 and stats.cache_hits == 0
            return answers
        finally:
            await shared.close()

    answers = asyncio.run(step())
    heard = server.queries()
    assert ("gmail.com", "MX") not in heard
    assert ("ordered.com", "MX") in heard
    assert answers["gmail.com"].status is DnsStatus.MX and answers["gmail.com"].mx == "mx.gmail.com"
    assert answers["ordered.com"].status is DnsStatus.MX
