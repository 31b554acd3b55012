"""What every fake vendor shares: an aiohttp app on 127.0.0.1 in a thread of its own, the keys
it knows with their balances, the credits spent, the calls made and the bulk jobs."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from pipeline.sandbox.loop_thread import LoopThreadServer

GOOD_KEY = "test-key-4f1c9e7a2b"  # a key every fake knows, with FakeVendor.credits credits


@dataclass(frozen=True)
class _Running:
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    port: int
    runner: web.AppRunner


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    query: dict[str, str]


@dataclass
class FakeJob:
    """A bulk job: its addresses, and the status polls it still needs before it is done."""

    job_id: str
    key: str
    addresses: list[str]
    polls_left: int
    records: list[dict[str, Any]] = field(default_factory=list)  # answers, once done
    polls: int = 0


class FakeVendor(LoopThreadServer[_Running]):
    """A vendor on loopback. *credits*: the balance of :data:`GOOD_KEY`; *polls*: status polls
    a bulk job takes to finish (a job never finishes with ``polls=None``)."""

    name = "vendor"
    _thread_name = "fake-vendor"

    def __init__(self, credits: int = 1_000, polls: int | None = 2) -> None:
        super().__init__()
        self.balances: dict[str, int] = {GOOD_KEY: credits}
        self.polls = polls
        self.spent = 0  # credits charged
        self.calls: list[Call] = []
        self.jobs: dict[str, FakeJob] = {}
        self.in_flight = 0
        self.peak_in_flight = 0
        self.fail_next: list[int] = []  # statuses to answer the next requests with (5xx, 429)
        # Once a balance was told, the key's balance becomes this: someone else spent it.
        self.drain_to: int | None = None
        self._ids = itertools.count(1001)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def count(self, path: str) -> int:
        """Calls made to *path*."""
        return sum(1 for c in self.calls if c.path == path)

    def checked(self, path: str) -> list[str]:
        """The addresses asked about one at a time at *path*, in order."""
        return [c.query.get("email", "") for c in self.calls if c.path == path]

    # --- what a subclass says --------------------------------------------------------------

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    # --- the ledger ------------------------------------------------------------------------

    def key_known(self, key: str | None) -> bool:
        return key is not None and key in self.balances

    def charge(self, key: str, credits: int) -> bool:
        """Take *credits* from *key*'s balance, or False when it cannot pay."""
        if self.balances[key] < credits:
            return False
        self.balances[key] -= credits
        self.spent += credits
        return True

    def told(self, key: str) -> int:
        """The balance a balance request tells (then drained, if a test asked for that)."""
        balance = self.balances[key]
        if self.drain_to is not None:
            self.balances[key], self.drain_to = self.drain_to, None
        return balance

    def refund(self, key: str, credits: int) -> None:
        self.balances[key] += credits
        self.spent -= credits

    def new_job(self, key: str, addresses: list[str]) -> FakeJob:
        job_id = str(next(self._ids))
        polls = 10**9 if self.polls is None else self.polls
        job = FakeJob(job_id, key, addresses, polls)
        self.jobs[job_id] = job
        return job

    def poll(self, job: FakeJob, answer: Callable[[str], dict[str, Any]]) -> bool:
        """One status poll of *job*; whether it is done (its records made on the last)."""
        job.polls += 1
        if job.polls_left > 0:
            job.polls_left -= 1
        if job.polls_left == 0 and not job.records:
            job.records = [answer(a) for a in job.addresses]
            self.finished(job)
        return job.polls_left == 0

    def finished(self, job: FakeJob) -> None:
        """A job's answers are made: a vendor that refunds some of them does it here."""

    # --- the server ------------------------------------------------------------------------

    async def _bind(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> _Running:
        app = web.Application(middlewares=[self._middleware])
        self.routes(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return _Running(loop, thread, runner.addresses[0][1], runner)

    async def _close(self, running: _Running) -> None:
        await running.runner.cleanup()

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        self.calls.append(Call(request.method, request.path, dict(request.query)))
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)  # let requests overlap, as a real server's would
            if self.fail_next:
                return web.Response(status=self.fail_next.pop(0), text="<html>busy</html>")
            return await handler(request)
        finally:
            self.in_flight -= 1


def trigger(address: str) -> str:
    """The magic word of an address: its +tag if it has one, else its local part (Kickbox's
    sandbox convention, which the fakes of vendors without a sandbox borrow)."""
    local = address.rpartition("@")[0].lower()
    base, _, tag = local.partition("+")
    return tag or base
