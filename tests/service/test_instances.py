"""Three ``listclean serve`` processes on one store: quotas stay exact across instances.

Run on both stores: one SQLite file the three share on one host, and one PostgreSQL database.
Each scenario sends 300 concurrent requests spread over the three instances, against a key
(or a client address) with 100 units left.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import StoreAt
from tests.service.conftest import NOON, Reply, fetch, utc
from tests.service.instances import Instances, burst, instances

JAN = utc("2026-01-01T00:00:00Z")
FEB = utc("2026-02-01T00:00:00Z")
MAR = utc("2026-03-01T00:00:00Z")
DAY = utc("2026-01-15T00:00:00Z")


@pytest.fixture
def group(store_at: StoreAt, tmp_path: Path) -> Iterator[Instances]:
    with instances(store_at("service.sqlite"), tmp_path, NOON) as started:
        yield started


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def remaining(replies: list[Reply], status: int = 200) -> list[int]:
    return sorted(r.remaining for r in replies if r.status == status)


def diagnosis(replies: list[Reply], group: Instances) -> str:
    """What a failed burst needs explained: its answers by status and problem code (with one
    detail of each), and the end of each instance's log."""
    kinds: Counter[tuple[int, str]] = Counter()
    details: dict[tuple[int, str], str] = {}
    for r in replies:
        code = r.json.get("code", "") if r.status != 200 else ""
        kinds[(r.status, code)] += 1
        details.setdefault((r.status, code), r.text[:300])
    logs = [i.log.read_text(errors="replace")[-2000:] for i in group.running]
    return f"{dict(kinds)}\n{details}\n" + "\n---\n".join(logs)


def test_300_requests_on_100_units_give_exactly_100(group: Instances) -> None:
    key_id, secret = group.key()
    replies = asyncio.run(burst([i.url for i in group.running], 300, [bearer(secret)]))
    assert Counter(r.status for r in replies) == {200: 100, 429: 200}
    # Each unit was taken once, whichever instance took it.
    assert remaining(replies) == list(range(100))
    assert group.used(f"key:{key_id}", "email-month", JAN) == 100


def test_anonymous_callers_are_counted_per_address_across_instances(
    store_at: StoreAt, tmp_path: Path
) -> None:
    env = {
        "LISTCLEAN_HTTP_TRUSTED_PROXIES": '["127.0.0.1"]',
        "LISTCLEAN_ANONYMOUS_EMAIL_PER_DAY": "100",
    }
    addresses = ["203.0.113.7", "198.51.100.9"]
    with instances(store_at("service.sqlite"), tmp_path, NOON, env=env) as group:
        headers = [{"X-Forwarded-For": ip} for ip in addresses]
        replies = asyncio.run(burst([i.url for i in group.running], 300, headers))
        used = {ip: group.used(f"ip:{ip}", "email-day", DAY) for ip in addresses}
    for n, ip in enumerate(addresses):
        mine = replies[n::2]  # the i-th request came from addresses[i % 2]
        assert Counter(r.status for r in mine) == {200: 100, 429: 50}, ip
        assert remaining(mine) == list(range(100)), ip
    assert used == dict.fromkeys(addresses, 100)


def test_the_month_boundary(group: Instances) -> None:
    """The last second of January, then the first of February: each month's counter is its
    own (the window's start is part of the counter's key), and each is exact."""
    key_id, secret = group.key()
    urls = [i.url for i in group.running]
    group.set_clock(utc("2026-01-31T23:59:59Z"))
    january = asyncio.run(burst(urls, 150, [bearer(secret)]))
    group.set_clock(FEB)
    february = asyncio.run(burst(urls, 150, [bearer(secret)]))
    for replies, renews in ((january, FEB), (february, MAR)):
        assert Counter(r.status for r in replies) == {200: 100, 429: 50}
        assert remaining(replies) == list(range(100))
        assert {r.headers["X-RateLimit-Reset"] for r in replies} == {str(renews)}
    assert {r.headers["Retry-After"] for r in january if r.status == 429} == {"1"}
    assert group.used(f"key:{key_id}", "email-month", JAN) == 100
    assert group.used(f"key:{key_id}", "email-month", FEB) == 100


def break_domain_cache(cache: Path) -> None:
    """Make one instance's domain cache unusable: it answers 500 from then on."""
    with contextlib.closing(sqlite3.connect(cache / "sandbox-domains.sqlite")) as db:
        db.execute("DROP TABLE domains")
        db.commit()


def test_requests_that_fail_on_our_side_are_not_charged(group: Instances) -> None:
    key_id, secret = group.key()
    broken = group.running[2]
    break_domain_cache(broken.cache)
    urls = [i.url for i in group.running]
    failed = asyncio.run(burst([broken.url], 60, [bearer(secret)]))
    assert {r.status for r in failed} == {500}
    assert group.used(f"key:{key_id}", "email-month", JAN) == 0
    replies = asyncio.run(burst(urls, 300, [bearer(secret)]))
    statuses = Counter(r.status for r in replies)
    # The broken instance answers 500 to every request its quota admits.
    assert {r.status for r in replies[2::3]} <= {500, 429}
    served = statuses[200]
    assert group.used(f"key:{key_id}", "email-month", JAN) == served
    # What the failures took for a moment was given back: the healthy instances serve the
    # rest of the 100 units, and not one more.
    rest = asyncio.run(burst(urls[:2], 100 - served + 20, [bearer(secret)]))
    assert served + sum(r.status == 200 for r in rest) == 100
    assert group.used(f"key:{key_id}", "email-month", JAN) == 100


def test_an_instance_killed_mid_burst(group: Instances) -> None:
    key_id, secret = group.key()
    replies, unanswered = asyncio.run(burst_with_a_kill(group, secret))
    assert_exact_after_a_kill(group, key_id, replies, unanswered)


@pytest.fixture
def slow_victim(store_at: StoreAt, tmp_path: Path) -> Iterator[Instances]:
    """Three instances, the third (the one to be killed) answering 3 seconds late: its engine
    passes wait batch_wait for more requests (while a connection of the test's stays idle)."""
    group = Instances(store_at("service.sqlite"), tmp_path)
    group.set_clock(NOON)
    try:
        group.start(2)
        group.env = {"LISTCLEAN_HTTP_BATCH_WAIT": "3", "LISTCLEAN_HTTP_BATCH_QUIET": "3"}
        group.start(1)
        yield group
    finally:
        group.stop()


def test_an_instance_killed_while_it_holds_every_unit(slow_victim: Instances) -> None:
    """The timing a busy machine made once: the instance to be killed takes all 100 units, its
    answers come late, and the others' 429s come back first. Killing it after 60 answers of any
    kind lost every unit (300 answers of 429); it is killed once 60 requests were served."""
    key_id, secret = slow_victim.key()
    replies, unanswered = asyncio.run(burst_with_a_kill(slow_victim, secret, others_after=0.3))
    assert_exact_after_a_kill(slow_victim, key_id, replies, unanswered)


async def burst_with_a_kill(
    group: Instances, secret: str, others_after: float = 0.0
) -> tuple[list[Reply], int]:
    """300 requests, the i-th to instance i % 3; the third instance is killed once 60 requests
    have been served (not once 60 answers came back: a 429 is answered at once, a 200 after an
    engine pass). A request the killed instance leaves unanswered is sent to another, as a load
    balancer does. The requests to the first two leave *others_after* seconds late. Returns
    the answers and how many requests were sent twice."""
    victim = group.running[2]
    urls = [i.url for i in group.running]
    host, port = urls[2].removeprefix("http://").rsplit(":", 1)
    _, idle = await asyncio.open_connection(host, int(port))  # an engine pass waits for more
    served = unanswered = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:

        async def one(i: int) -> Reply:
            nonlocal served, unanswered
            await asyncio.sleep(0 if i % 3 == 2 else others_after)
            url = f"/api/email?email=k{i}@gmail.com"
            try:
                reply = await fetch(s, "GET", urls[i % 3] + url, headers=bearer(secret))
            except aiohttp.ClientError:  # what a load balancer does: try another one
                unanswered += 1
                reply = await fetch(s, "GET", urls[i % 2] + url, headers=bearer(secret))
            served += reply.status == 200
            if served == 60 and reply.status == 200:
                victim.kill()
            return reply

        replies = await asyncio.gather(*(one(i) for i in range(300)))
    idle.close()
    return replies, unanswered


def assert_exact_after_a_kill(
    group: Instances, key_id: str, replies: list[Reply], unanswered: int
) -> None:
    served = [r for r in replies if r.status == 200]
    assert {r.status for r in replies} == {200, 429}, diagnosis(replies, group)
    assert len({r.remaining for r in served}) == len(served)  # no unit taken twice
    assert group.used(f"key:{key_id}", "email-month", JAN) == 100
    # A unit the killed instance took and never answered stays spent: at most one per request
    # it had in flight.
    assert 100 - len(served) <= unanswered
