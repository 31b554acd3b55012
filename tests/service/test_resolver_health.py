"""The service watches its resolver while serving: when it turns bad (a captive or broken
resolver answering NXDOMAIN for everything), new domains are Risky ``resolver_unhealthy`` and
nothing it said is cached; once it passes its canaries again, answers are trusted again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Awaitable, Iterator, Mapping
from pathlib import Path

import aiohttp
import pytest

from pipeline.core.config import DnsConfig
from pipeline.sandbox.dns_server import SandboxDNS, World, Zone, load_world
from tests.conftest import SAMPLE_WORLD
from tests.service.conftest import Reply, fetch, run, service_config, serving


class Switchable(Mapping[str, Zone]):
    """The sample world's zones, or, once broken, none at all: every name is NXDOMAIN."""

    def __init__(self, zones: Mapping[str, Zone]) -> None:
        self._zones = zones
        self.broken = False

    def __getitem__(self, name: str) -> Zone:
        if self.broken:
            raise KeyError(name)
        return self._zones[name]

    def __iter__(self) -> Iterator[str]:
        return iter(() if self.broken else self._zones)

    def __len__(self) -> int:
        return 0 if self.broken else len(self._zones)


@pytest.fixture
def switchable() -> Iterator[tuple[SandboxDNS, Switchable]]:
    world = load_world(SAMPLE_WORLD)
    zones = Switchable(world.zones)
    with SandboxDNS(World(zones=zones, latency_ms=world.latency_ms)) as dns:
        yield dns, zones


def cached(cache: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(cache)) as db:
        return {row[0] for row in db.execute("SELECT domain FROM domains")}


INTERVAL = 0.3  # seconds between the service's own checks, short for the test


class Heard(logging.Handler):
    """What the resolver's watcher logged: each turn of its health (the service runs in this
    process), so the test waits for the watcher's own verdict instead of for a time."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def turn(self, words: str) -> Awaitable[None]:
        """Until the watcher logs *words*, from now on (at most 60 s: a watcher that never
        turns fails the test instead of hanging it)."""
        seen = len(self.messages)

        async def logged() -> None:
            while not any(words in m for m in self.messages[seen:]):
                await asyncio.sleep(0.02)

        return asyncio.wait_for(logged(), 60)


@pytest.fixture
def heard() -> Iterator[Heard]:
    handler = Heard()
    watcher = logging.getLogger("listclean.dns")
    watcher.addHandler(handler)
    try:
        yield handler
    finally:
        watcher.removeHandler(handler)


def asked_beside_canaries(dns: SandboxDNS, before: int) -> int:
    """Questions the server received after its first *before*, but for the canaries' (the
    service's own check asks them every INTERVAL, whenever that falls)."""
    since = dns.queries()[before:]
    return sum(1 for name, _ in since if name not in DnsConfig().canaries)


def test_a_resolver_gone_bad_is_noticed_and_its_answers_are_not_kept(
    switchable: tuple[SandboxDNS, Switchable], tmp_path: Path, heard: Heard
) -> None:
    dns, zones = switchable
    cache = tmp_path / "domains.sqlite"
    # Each request comes from its own client (through a trusted proxy): one anonymous request
    # per client address and day.
    config = service_config(
        dns.address, resolver_check_interval=INTERVAL, trusted_proxies=("127.0.0.1",)
    )

    async def ask(s: aiohttp.ClientSession, url: str, email: str, client: str) -> Reply:
        headers = {"X-Forwarded-For": client}
        return await fetch(s, "GET", f"{url}/api/email", params={"email": email}, headers=headers)

    async def scenario() -> dict[str, Reply | int]:
        service = serving(config, tmp_path / "service.sqlite", cache)
        async with service as url, aiohttp.ClientSession() as s:
            steps: dict[str, Reply | int] = {}
            steps["healthy"] = await ask(s, url, "a@gmail.com", "192.0.2.1")
            zones.broken = True
            # A batch whose new domain comes back NXDOMAIN makes the service check at once.
            steps["noticed"] = await ask(s, url, "b@faraway-isp.com.au", "192.0.2.2")
            before = dns.query_count
            steps["while bad"] = await ask(s, url, "c@hotmail.com", "192.0.2.3")
            steps["queries while bad"] = asked_beside_canaries(dns, before)
            steps["cached domain"] = await ask(s, url, "d@gmail.com", "192.0.2.4")
            passes = heard.turn("passes its health check again")
            zones.broken = False
            await passes  # the periodic check sees it recover
            steps["recovered"] = await ask(s, url, "e@faraway-isp.com.au", "192.0.2.5")
            fails = heard.turn("failed its health check while serving")
            zones.broken = True
            await fails  # ... and sees it go bad, with no request
            before = dns.query_count
            steps["bad again"] = await ask(s, url, "f@icloud.com", "192.0.2.6")
            steps["queries bad again"] = asked_beside_canaries(dns, before)
            zones.broken = False
            return steps

    steps = run(scenario())

    def body(name: str) -> dict[str, object]:
        reply = steps[name]
        assert isinstance(reply, Reply) and reply.status == 200, (name, reply)
        return dict(reply.json)

    assert body("healthy")["VERDICT"] == "Valid"
    for name in ("noticed", "while bad", "bad again"):
        answer = body(name)
        assert (answer["VERDICT"], answer["DOMAIN_VERDICT"]) == ("Risky", "Risky"), answer
        assert "resolver_unhealthy" in str(answer["REASON"]).split(";"), answer
        assert answer["MX"] == ""
    # While it is known to be bad, nothing is asked of it.
    assert steps["queries while bad"] == 0
    assert steps["queries bad again"] == 0
    # What was learned before stays good.
    assert body("cached domain")["VERDICT"] == "Valid"
    recovered = body("recovered")
    assert (recovered["VERDICT"], recovered["MX"]) == ("Valid", "mx.faraway-isp.com.au")
    # Nothing the bad resolver said was kept; the answer after recovery was.
    assert cached(cache) == {"gmail.com", "faraway-isp.com.au"}
