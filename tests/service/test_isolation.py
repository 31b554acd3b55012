"""A failure touches only the request that caused it, and a request that fails on our side is
never charged."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import aiohttp
import pytest

from pipeline.core.assembly.build import EngineOptions, open_engine
from pipeline.core.clock import Window, window_bounds
from pipeline.core.engine import verify_many
from pipeline.service.batcher import MicroBatcher
from pipeline.service.settings import PlanConfig
from tests.service.conftest import Env, Reply, fetch, run


def test_one_failing_item_fails_only_its_own_submission() -> None:
    runs: list[int] = []

    async def fragile(items: Sequence[int]) -> list[int]:
        runs.append(len(items))
        if 13 in items:
            raise ValueError("13 cannot be served")
        return [2 * i for i in items]

    async def scenario() -> list[object]:
        batcher = MicroBatcher(fragile, max_size=64, max_wait=0.01)
        return await asyncio.gather(*(batcher.submit(i) for i in range(40)), return_exceptions=True)

    results = asyncio.run(scenario())
    assert isinstance(results[13], ValueError)
    assert [r for i, r in enumerate(results) if i != 13] == [2 * i for i in range(40) if i != 13]
    # Halving finds the one bad item: far fewer passes than one per item.
    assert len(runs) <= 1 + 2 * 6


def test_a_lone_surrogate_in_the_engine_fails_only_its_own_request(env: Env) -> None:
    """The engine itself cannot take a lone surrogate (the service refuses one at its edge);
    should one reach a batch anyway, the other requests of that batch are still answered."""
    values = [f"user{i}@gmail.com" for i in range(30)]
    values[7] = "\ud800@gmail.com"

    async def scenario() -> list[object]:
        with contextlib.ExitStack() as stack:
            engine = open_engine(stack, env.config().engine, env.cache, EngineOptions())
            try:
                batcher = MicroBatcher(lambda v: verify_many(engine, v), 64, 0.01)
                return await asyncio.gather(
                    *(batcher.submit(v) for v in values), return_exceptions=True
                )
            finally:
                await engine.dns.close()

    results = run(scenario())
    assert isinstance(results[7], Exception)
    answered = [r for i, r in enumerate(results) if i != 7]
    assert all(isinstance(r, dict) and r["VERDICT"] == "Valid" for r in answered), answered


def break_domain_cache(path: Path) -> None:
    """Make the running service's domain cache unusable, as a corrupt or replaced file would."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("DROP TABLE domains")
        db.commit()


def test_a_5xx_is_never_charged(any_env: Env, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    record, key = any_env.key("small")
    config = any_env.config(plans={"small": PlanConfig(email_per_month=10, find_per_month=10)})
    auth = {"Authorization": f"Bearer {key}"}

    async def scenario() -> list[Reply]:
        async with any_env.serving(config) as url, aiohttp.ClientSession(headers=auth) as s:
            api = f"{url}/api/email"
            first = await fetch(s, "GET", api, params={"email": "first.person@gmail.com"})
            break_domain_cache(any_env.cache)
            failed = [
                await fetch(s, "GET", api, params={"email": f"failing.person{i}@gmail.com"})
                for i in range(3)
            ]
            after = await fetch(s, "GET", api, params={"domain": "gmail.com"})
            return [first, *failed, after]

    first, *failed, after = run(scenario())
    assert (first.status, first.remaining) == (200, 9)
    for reply in failed:
        assert reply.status == 500, reply.text
        assert reply.json["code"] == "internal_error"
        assert reply.remaining == 9  # taken, then given back
    assert after.status == 500 and after.remaining == 9
    month, _ = window_bounds(Window.MONTH, any_env.clock())
    with any_env.store() as store:  # the counter itself, not only the header
        assert store.used(f"key:{record.key_id}", "email-month", month) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors and all("failing.person" not in e and "\n" not in e for e in errors)
    assert any("StoreError" in e and "no such table: domains" in e for e in errors), errors
