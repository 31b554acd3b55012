"""Several ``listclean serve`` processes on one store, as a load balancer sees them.

Each instance is its own process (``tests/service/instance.py``: ``serve`` with a clock the
test moves) with its own sandbox DNS, or the test's DNS server at ``nameserver``, and its own
domain cache (caches are per instance), on a port of its own on 127.0.0.1; they share the store
at ``db``: one SQLite file, or one PostgreSQL database.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from pipeline.service.accounts.store import ServiceStore
from tests.conftest import REPO
from tests.service.conftest import Reply, fetch

_SERVING = re.compile(r"Serving on (http://127\.0\.0\.1:\d+)")


@dataclass
class Instance:
    process: subprocess.Popen[bytes]
    url: str
    cache: Path
    log: Path

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


class Instances:
    """Instances on the store at *db*, their quota clock in *clock_file*."""

    def __init__(
        self,
        db: Path | str,
        root: Path,
        env: dict[str, str] | None = None,
        open_files: int | None = None,
        options: tuple[str, ...] = (),
        nameserver: str | None = None,
    ) -> None:
        self.db = db
        self.options = options  # more `serve` options, for every instance
        self.nameserver = nameserver  # the DNS server every instance asks, instead of its own
        self.open_files = open_files  # the instances' open-file limit, when not inherited
        self.root = root
        self.clock_file = root / "clock"
        self.env = env or {}
        self.running: list[Instance] = []

    def set_clock(self, now: float) -> None:
        fresh = self.clock_file.with_suffix(".new")
        fresh.write_text(repr(float(now)))
        fresh.replace(self.clock_file)

    def key(self, plan: str = "default") -> tuple[str, str]:
        """A new key: its id and its secret."""
        state = ServiceStore(self.db)
        try:
            key, secret = state.create_key(plan)
        finally:
            state.close()
        return key.key_id, secret

    def used(self, subject: str, policy: str, window_start: int) -> int:
        state = ServiceStore(self.db)
        try:
            return state.used(subject, policy, window_start)
        finally:
            state.close()

    def start(self, count: int) -> list[Instance]:
        """*count* instances, started together; returns once each serves."""
        starting = [self._launch(len(self.running) + i) for i in range(count)]
        try:
            started = [self._wait(*launched) for launched in starting]
        except BaseException:
            for process, _, _ in starting:  # one failed: none of them outlives the test
                process.kill()
                process.wait()
            raise
        self.running += started
        return started

    def _launch(self, number: int) -> tuple[subprocess.Popen[bytes], Path, Path]:
        cache, log = self.root / f"cache{number}", self.root / f"instance{number}.log"
        dns = ("--sandbox",) if self.nameserver is None else ()
        argv = [
            sys.executable, "-m", "tests.service.instance", str(self.clock_file),
            "--host", "127.0.0.1", "--port", "0", *dns, "--cache-dir", str(cache),
            "--db", str(self.db), *self.options,
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO), **self.env}
        if self.nameserver is not None:
            env["LISTCLEAN_DNS_NAMESERVERS"] = self.nameserver
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv, stdout=out, stderr=out, env=env, cwd=REPO, preexec_fn=self._limits
            )
        return process, cache, log

    def _limits(self) -> None:
        if self.open_files is not None:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, hard))

    def _wait(self, process: subprocess.Popen[bytes], cache: Path, log: Path) -> Instance:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = _SERVING.search(log.read_text(errors="replace"))
            if found:
                return Instance(process, found.group(1), cache, log)
            if process.poll() is not None:
                raise RuntimeError(f"an instance stopped: {log.read_text(errors='replace')}")
            time.sleep(0.05)
        raise RuntimeError(f"an instance did not start: {log.read_text(errors='replace')}")

    def stop(self) -> None:
        for instance in self.running:
            if instance.process.poll() is None:
                instance.process.send_signal(signal.SIGTERM)
        for instance in self.running:
            try:
                instance.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                instance.kill()


@contextlib.contextmanager
def instances(
    db: Path | str,
    root: Path,
    now: float,
    count: int = 3,
    env: dict[str, str] | None = None,
    open_files: int | None = None,
    options: tuple[str, ...] = (),
    nameserver: str | None = None,
) -> Iterator[Instances]:
    group = Instances(db, root, env, open_files, options, nameserver)
    group.set_clock(now)
    try:
        group.start(count)
        yield group
    finally:
        group.stop()


async def burst(
    urls: Sequence[str], requests: int, headers: Sequence[dict[str, str]] | None = None
) -> list[Reply]:
    """*requests* concurrent GET /api/email, the i-th to ``urls[i % len(urls)]``."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        return await asyncio.gather(
            *(
                fetch(
                    s,
                    "GET",
                    f"{urls[i % len(urls)]}/api/email?email=burst{i}@gmail.com",
                    headers=headers[i % len(headers)] if headers else None,
                )
                for i in range(requests)
            )
        )
