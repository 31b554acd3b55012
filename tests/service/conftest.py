"""The service under test, for real: the aiohttp app on 127.0.0.1, spoken to over HTTP.

DNS answers come from the loopback sandbox world (``sample_dns``); the quota clock is a
:class:`Clock` the tests move by hand, so day and month boundaries cost no waiting.
"""

from __future__ import annotations

import asyncio
import calendar
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDict

from pipeline.core.config import Config, DnsConfig
from pipeline.sandbox.dns_server import SandboxDNS
from pipeline.service.accounts.store import ApiKey, ServiceStore
from pipeline.service.app import Paths, create_app
from pipeline.service.connections.logs import RedactingAccessLogger
from pipeline.service.connections.protocol import ServiceRunner
from pipeline.service.settings import (
    BUILTIN_PLANS,
    AnonymousConfig,
    HttpConfig,
    PlanConfig,
    ServiceConfig,
)

T = TypeVar("T")

# The keys of every problem document (RFC 9457 plus code).
PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}
SPEC_FIELDS = (
    "EMAIL",
    "VERDICT",
    "SCORE",
    "LOCAL",
    "DOMAIN",
    "DOMAIN_VERDICT",
    "MX",
    "HAS_SUSPECTED_BOUNCES",
    "LOCAL_PART_IS_SUSPECTED_ROLE_ADDRESS",
    "HAS_KNOWN_BOUNCES",
    "DOMAIN_IS_SUSPECTED_DISPOSABLE_ADDRESS",
    "SUGGESTION",
)
RATE_HEADERS = (
    "RateLimit-Policy",
    "RateLimit",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
)


def utc(text: str) -> int:
    """Unix seconds of an ISO 8601 UTC time like ``2026-01-31T23:59:59Z``."""
    return calendar.timegm(datetime.fromisoformat(text.replace("Z", "+00:00")).utctimetuple())


# Mid-month, mid-day: far from every window boundary unless a test moves the clock there.
NOON = utc("2026-01-15T12:00:00Z")


class Clock:
    """A hand-moved clock for ``create_app(clock=...)``."""

    def __init__(self, now: float = NOON) -> None:
        self.now = float(now)

    def __call__(self) -> float:
        return self.now

    def set(self, iso: str) -> None:
        self.now = float(utc(iso))

    def advance(self, seconds: float) -> None:
        self.now += seconds


def run(scenario: Awaitable[T]) -> T:
    """Run an async scenario from a plain (sync) test function."""

    async def main() -> T:
        return await scenario

    return asyncio.run(main())


def service_config(
    dns_address: str,
    *,
    plans: Mapping[str, PlanConfig] | None = None,
    anonymous: AnonymousConfig | None = None,
    **http: Any,
) -> ServiceConfig:
    """Service settings for the sandbox world: short DNS timeouts, extra plans, [service] keys."""
    dns = DnsConfig(nameservers=(dns_address,), timeout=0.3, attempts=2, backoff=0.05)
    return ServiceConfig(
        engine=replace(Config(), dns=dns),
        service=HttpConfig(**http),
        anonymous=anonymous or AnonymousConfig(),
        plans={**BUILTIN_PLANS, **(plans or {})},
    )


async def start(
    config: ServiceConfig, db: Path | str, cache: Path, clock: Callable[[], float] = time.time
) -> tuple[web.AppRunner, str]:
    """The app on 127.0.0.1, a random port: its runner (to stop it) and its base URL."""
    app = create_app(config, Paths(db=db, cache=cache), clock=clock)
    runner = ServiceRunner(
        app,
        access_log_class=RedactingAccessLogger,
        shutdown_timeout=config.service.shutdown_timeout,
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
    except BaseException:
        await runner.cleanup()
        raise
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


@contextlib.asynccontextmanager
async def serving(
    config: ServiceConfig, db: Path | str, cache: Path, clock: Callable[[], float] = time.time
) -> AsyncIterator[str]:
    """The running service's base URL; stopped (gracefully) on exit."""
    runner, url = await start(config, db, cache, clock)
    try:
        yield url
    finally:
        await runner.cleanup()


def create_key(db: Path | str, plan: str = "default", label: str = "") -> tuple[ApiKey, str]:
    """A key made directly in the service database: its record and its secret."""
    store = ServiceStore(db)
    try:
        return store.create_key(plan, label)
    finally:
        store.close()


@dataclass
class Reply:
    status: int
    headers: CIMultiDict[str]
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)

    @property
    def remaining(self) -> int:
        return int(self.headers["X-RateLimit-Remaining"])


async def fetch(session: aiohttp.ClientSession, method: str, url: Any, **kwargs: Any) -> Reply:
    async with session.request(method, url, **kwargs) as response:
        return Reply(response.status, CIMultiDict(response.headers), await response.text())


@dataclass
class Env:
    """One test's service: its sandbox DNS, its files, its clock."""

    dns: SandboxDNS
    tmp: Path
    clock: Clock = field(default_factory=Clock)
    url: str | None = None  # the service's state in this PostgreSQL database, not a file

    @property
    def db(self) -> Path | str:
        return self.url or self.tmp / "service.sqlite"

    @property
    def cache(self) -> Path:
        return self.tmp / "domains.sqlite"

    def config(self, **kwargs: Any) -> ServiceConfig:
        return service_config(self.dns.address, **kwargs)

    def store(self) -> ServiceStore:
        """The service database, opened beside the server (WAL: both may write)."""
        return ServiceStore(self.db, self.clock)

    def key(self, plan: str = "default", label: str = "") -> tuple[ApiKey, str]:
        return create_key(self.db, plan, label)

    def serving(
        self, config: ServiceConfig | None = None
    ) -> contextlib.AbstractAsyncContextManager[str]:
        return serving(config or self.config(), self.db, self.cache, self.clock)


@pytest.fixture
def env(sample_dns: SandboxDNS, tmp_path: Path) -> Env:
    return Env(sample_dns, tmp_path)


@pytest.fixture(params=["sqlite", "postgresql"])
def any_env(request: pytest.FixtureRequest, sample_dns: SandboxDNS, tmp_path: Path) -> Env:
    """:func:`env` once with its state in a SQLite file, once in a PostgreSQL database."""
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    return Env(sample_dns, tmp_path, url=url)
