"""Bulk jobs under test, for real: the service on 127.0.0.1 with its jobs' processes, spoken to
over HTTP, its lists checked against ``clean`` run on the same file in the same world."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import dataclasses
import io
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pipeline.core.assembly.build import EngineOptions, open_engine
from pipeline.core.config import JobsConfig
from pipeline.sandbox.dns_server import SandboxDNS
from pipeline.sandbox.files import SANDBOX_WORLD
from pipeline.service.settings import PlanConfig, ServiceConfig
from pipeline.stages.job import CleanRequest, open_job
from pipeline.stages.runner import run_clean
from tests.conftest import SAMPLE_CSV
from tests.service.conftest import Env, Reply, fetch, start

# What the sample list costs: its distinct addresses whose syntax passes.
SAMPLE_UNITS = 254
# A domain whose DNS answers the tests hold back (SandboxDNS.hold): a job with an address there
# stays in its domain stage until the test releases the name or stops the job.
HELD_DOMAIN = "slowpoke.io"
# How long a job waits for one DNS answer in these worlds: far longer than any test holds one,
# so an answer comes when the test releases it, never because the wait ran out.
HELD_WAIT = 300.0


def held_world() -> dict[str, Any]:
    """The sample world and one zone more, HELD_DOMAIN, for a test to hold. Its zones that never
    answer answer SERVFAIL instead (Risky all the same): with answers waited for HELD_WAIT, a
    silent zone would keep every job in its domain stage that long."""
    world: dict[str, Any] = json.loads(Path(SANDBOX_WORLD).read_text())
    zones = world["zones"]
    for name, zone in zones.items():
        if zone.get("timeout"):
            zones[name] = {"rcode": "SERVFAIL"}
    zones[HELD_DOMAIN] = {"mx": [[10, f"mx.{HELD_DOMAIN}"]]}
    return world


def held_list(tmp: Path) -> Path:
    """The sample list and one address at HELD_DOMAIN: its job waits while the name is held."""
    path = tmp / "held.csv"
    text = SAMPLE_CSV.read_text(encoding="utf-8")
    path.write_text(text + f"9999,Slow,Poke,slow.poke@{HELD_DOMAIN},,2024-01-01\n", "utf-8")
    return path


@contextlib.contextmanager
def held(dns: SandboxDNS) -> Iterator[None]:
    """HELD_DOMAIN's answers held back for the block, then sent."""
    dns.hold(HELD_DOMAIN)
    try:
        yield
    finally:
        dns.release(HELD_DOMAIN)


def jobs_settings(tmp: Path, **overrides: Any) -> JobsConfig:
    """Jobs that start at once (short polls), keep their files in *tmp*, call back anywhere."""
    settings: dict[str, Any] = {
        "storage": str(tmp / "jobs"),
        "poll": 0.05,
        "lease": 5.0,
        "callbacks": "any",
        **overrides,
    }
    return JobsConfig(**settings)


def with_jobs(config: ServiceConfig, tmp: Path, **overrides: Any) -> ServiceConfig:
    return dataclasses.replace(config, jobs=jobs_settings(tmp, **overrides))


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def form(
    path: Path | None = None,
    data: bytes | None = None,
    name: str = "list.csv",
    **fields: str | list[str],
) -> aiohttp.FormData:
    """A job's form: the list (the file at *path*, or *data*) and option fields."""
    body = aiohttp.FormData()
    for field, value in fields.items():
        for one in value if isinstance(value, list) else [value]:
            body.add_field(field, one)
    content = data if data is not None else (path or SAMPLE_CSV).read_bytes()
    body.add_field("file", content, filename=name, content_type="text/csv")
    return body


async def post_job(
    s: aiohttp.ClientSession, url: str, secret: str, body: Any, **kwargs: Any
) -> Reply:
    if isinstance(body, dict):
        return await fetch(s, "POST", f"{url}/api/jobs", json=body, headers=bearer(secret))
    return await fetch(s, "POST", f"{url}/api/jobs", data=body, headers=bearer(secret), **kwargs)


async def status(s: aiohttp.ClientSession, url: str, secret: str, job: str) -> dict[str, Any]:
    reply = await fetch(s, "GET", f"{url}/api/jobs/{job}", headers=bearer(secret))
    assert reply.status == 200, reply.text
    found: dict[str, Any] = reply.json
    return found


async def wait_for(
    s: aiohttp.ClientSession,
    url: str,
    secret: str,
    job: str,
    states: tuple[str, ...] = ("done", "failed", "cancelled"),
    timeout: float = 60,
) -> dict[str, Any]:
    """The job's status once it is in one of *states*."""
    deadline = time.monotonic() + timeout
    while True:
        found = await status(s, url, secret, job)
        if found["state"] in states:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job} stayed {found['state']}: {json.dumps(found)[:2000]}")
        await asyncio.sleep(0.05)


async def download(
    s: aiohttp.ClientSession, url: str, secret: str | None, path: str
) -> tuple[int, bytes, dict[str, str]]:
    headers = bearer(secret) if secret else {}
    async with s.get(f"{url}{path}", headers=headers) as reply:
        return reply.status, await reply.read(), dict(reply.headers)


def csv_rows(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))


@contextlib.asynccontextmanager
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def clean_directly(
    env: Env, config: ServiceConfig, source: Path, output: Path, **asked: Any
) -> dict[str, Any]:
    """``clean`` of *source* into *output* as the command line runs it, in the service's world
    (its settings and sandbox DNS, a cache of its own): its summary."""
    engine_config = config.engine
    request = CleanRequest(str(source), str(output), memory_mb=engine_config.run.memory, **asked)
    with contextlib.ExitStack() as stack:
        job = stack.enter_context(open_job(request, engine_config.storage, engine_config.read))
        engine = open_engine(
            stack, engine_config, output.parent / "direct-domains.sqlite", EngineOptions(spent=0)
        )
        summary = run_clean(job, engine, output.parent)
    return summary.as_dict()


@pytest.fixture
def served(env: Env, tmp_path: Path) -> Iterator[tuple[Env, ServiceConfig]]:
    """The test's service settings, with jobs."""
    yield env, with_jobs(env.config(), tmp_path)


class Live:
    """The service with jobs, on 127.0.0.1 in a thread of its own with its own event loop, for
    every test of a module: its job processes start once, and each test brings its own keys."""

    def __init__(self, env: Env, config: ServiceConfig) -> None:
        self.env = env
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.url = ""

    def __enter__(self) -> Live:
        self._thread.start()
        started = self._call(start(self.config, self.env.db, self.env.cache, self.env.clock))
        self._runner, self.url = started
        return self

    def __exit__(self, *exc: object) -> None:
        self._call(self._runner.cleanup())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    def _call(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(60)

    def key(self, plan: str = "starter") -> str:
        return self.env.key(plan)[1]

    def job_folders(self) -> set[str]:
        folder = Path(self.config.jobs.storage)
        return {p.name for p in folder.iterdir()} if folder.exists() else set()


def live_server(
    dns: SandboxDNS, root: Path, plans: dict[str, PlanConfig], **jobs: Any
) -> Iterator[Live]:
    env = Env(dns, root)
    with Live(env, with_jobs(env.config(plans=plans), root, **jobs)) as live:
        yield live
