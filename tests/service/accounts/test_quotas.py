"""Quotas over real HTTP: the rate-limit headers, burst caps, daily and monthly windows,
restarts, client addresses behind proxies, and exact counting under concurrency."""

from __future__ import annotations

import asyncio
from collections import Counter

import aiohttp

from pipeline.service.settings import PlanConfig
from tests.service.conftest import (
    NOON,
    RATE_HEADERS,
    Env,
    Reply,
    fetch,
    run,
    utc,
)

ADDRESS = "john.doe@gmail.com"
JAN = utc("2026-01-01T00:00:00Z")
FEB = utc("2026-02-01T00:00:00Z")
MAR = utc("2026-03-01T00:00:00Z")
JAN_16 = utc("2026-01-16T00:00:00Z")
TINY = {"tiny": PlanConfig(email_per_month=3)}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def rate_headers(reply: Reply) -> dict[str, str]:
    return {
        name: reply.headers[name]
        for name in (*RATE_HEADERS, "Retry-After")
        if name in reply.headers
    }


# --- headers ------------------------------------------------------------------------------------


def test_anonymous_headers_on_200_400_401_405_and_429(env: Env) -> None:
    async def scenario() -> dict[str, Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            api = f"{url}/api/email"
            return {
                "400 before": await fetch(s, "GET", api),
                "401 before": await fetch(s, "GET", f"{api}?email={ADDRESS}&apikey=lc_nope"),
                "405 before": await fetch(s, "PUT", f"{api}?email={ADDRESS}"),
                "200": await fetch(s, "GET", f"{api}?email={ADDRESS}"),
                "429": await fetch(s, "GET", f"{api}?email={ADDRESS}"),
                "400 after": await fetch(s, "POST", api, json={"email": 1}),
                "401 after": await fetch(s, "GET", api, headers={"Authorization": "Basic x"}),
                "405 after": await fetch(s, "DELETE", api),
            }

    replies = run(scenario())
    assert {name: r.status for name, r in replies.items()} == {
        "400 before": 400,
        "401 before": 401,
        "405 before": 405,
        "200": 200,
        "429": 429,
        "400 after": 400,
        "401 after": 401,
        "405 after": 405,
    }
    to_reset = JAN_16 - NOON  # 43200: the clock stands at noon UTC
    fresh = {
        "RateLimit-Policy": '"email-day";q=1;w=86400',
        "RateLimit": f'"email-day";r=1;t={to_reset}',
        "X-RateLimit-Limit": "1",
        "X-RateLimit-Remaining": "1",
        "X-RateLimit-Reset": str(JAN_16),
    }
    used = {**fresh, "RateLimit": f'"email-day";r=0;t={to_reset}', "X-RateLimit-Remaining": "0"}
    for name in ("400 before", "401 before", "405 before"):
        assert rate_headers(replies[name]) == fresh, name
    assert rate_headers(replies["200"]) == used
    assert rate_headers(replies["429"]) == {**used, "Retry-After": str(to_reset)}
    for name in ("400 after", "401 after", "405 after"):
        assert rate_headers(replies[name]) == used, name
    assert replies["429"].json["detail"] == (
        "The email-day quota of 1 requests is used up for this client address; "
        "it renews at 2026-01-16T00:00:00Z. See Retry-After."
    )


def test_plan_headers_and_monthly_quota(env: Env) -> None:
    _, secret = env.key("tiny")

    async def scenario() -> list[Reply]:
        async with (
            env.serving(env.config(plans=TINY)) as url,
            aiohttp.ClientSession(headers=bearer(secret)) as s,
        ):
            api = f"{url}/api/email?email={ADDRESS}"
            return [await fetch(s, "GET", api) for _ in range(5)]

    replies = run(scenario())
    assert [r.status for r in replies] == [200, 200, 200, 429, 429]
    to_reset = FEB - NOON
    for left, reply in zip([2, 1, 0, 0, 0], replies, strict=True):
        expected = {
            "RateLimit-Policy": f'"email-month";q=3;w={FEB - JAN}',
            "RateLimit": f'"email-month";r={left};t={to_reset}',
            "X-RateLimit-Limit": "3",
            "X-RateLimit-Remaining": str(left),
            "X-RateLimit-Reset": str(FEB),
        }
        if reply.status == 429:
            expected["Retry-After"] = str(to_reset)
        assert rate_headers(reply) == expected
    assert replies[3].json == {
        "type": "/problems/quota_exceeded",
        "title": "Quota exceeded",
        "status": 429,
        "detail": "The email-month quota of 3 requests is used up for this key; "
        "it renews at 2026-02-01T00:00:00Z. See Retry-After.",
        "code": "quota_exceeded",
    }


def test_burst_cap_per_second(env: Env) -> None:
    _, secret = env.key("bursty")
    config = env.config(plans={"bursty": PlanConfig(email_per_month=100, burst_per_second=2)})

    async def scenario() -> list[Reply]:
        async with env.serving(config) as url, aiohttp.ClientSession(headers=bearer(secret)) as s:
            api = f"{url}/api/email?email={ADDRESS}"
            replies = [await fetch(s, "GET", api) for _ in range(3)]
            env.clock.advance(0.5)  # still the same second
            replies.append(await fetch(s, "GET", api))
            env.clock.advance(0.5)  # the next second
            replies += [await fetch(s, "GET", api) for _ in range(3)]
            return replies

    replies = run(scenario())
    assert [r.status for r in replies] == [200, 200, 429, 429, 200, 200, 429]
    # The burst refusals did not use the monthly quota.
    assert [r.remaining for r in replies] == [99, 98, 98, 98, 97, 96, 96]
    policy = f'"email-month";q=100;w={FEB - JAN}, "email-second";q=2;w=1'
    assert {r.headers["RateLimit-Policy"] for r in replies} == {policy}
    month = FEB - NOON
    assert [r.headers["RateLimit"] for r in replies[:4]] == [
        f'"email-month";r=99;t={month}, "email-second";r=1;t=1',
        f'"email-month";r=98;t={month}, "email-second";r=0;t=1',
        f'"email-month";r=98;t={month}, "email-second";r=0;t=1',
        f'"email-month";r=98;t={month}, "email-second";r=0;t=1',  # both rounded up
    ]
    assert [r.headers.get("Retry-After") for r in replies] == [
        None,
        None,
        "1",
        "1",
        None,
        None,
        "1",
    ]
    slow_down = "More than 2 requests per second for this key; slow down."
    assert {r.json["detail"] for r in replies if r.status == 429} == {slow_down}
    assert replies[4].headers["X-RateLimit-Reset"] == str(FEB)  # the legacy trio: the quota


def test_default_plan_allows_exactly_100_a_month(any_env: Env) -> None:
    key, secret = any_env.key("default")

    async def scenario() -> list[Reply]:
        async with (
            any_env.serving() as url,
            aiohttp.ClientSession(headers=bearer(secret)) as s,
        ):
            api = f"{url}/api/email?email={ADDRESS}"
            replies = [await fetch(s, "GET", api) for _ in range(100)]
            replies.append(await fetch(s, "GET", api))
            return replies

    replies = run(scenario())
    assert [r.status for r in replies] == [200] * 100 + [429]
    assert [r.remaining for r in replies] == [*range(99, -1, -1), 0]
    assert {r.headers["X-RateLimit-Limit"] for r in replies} == {"100"}
    assert replies[-1].headers["Retry-After"] == str(FEB - NOON)
    with any_env.store() as store:
        assert store.used(f"key:{key.key_id}", "email-month", JAN) == 100


# --- windows roll over --------------------------------------------------------------------------


def test_anonymous_quota_renews_at_utc_midnight(any_env: Env) -> None:
    any_env.clock.set("2026-01-31T23:59:59Z")

    async def scenario() -> list[Reply]:
        async with any_env.serving() as url, aiohttp.ClientSession() as s:
            api = f"{url}/api/email?email={ADDRESS}"
            replies = [await fetch(s, "GET", api), await fetch(s, "GET", api)]
            any_env.clock.set("2026-02-01T00:00:00Z")
            replies += [await fetch(s, "GET", api), await fetch(s, "GET", api)]
            return replies

    replies = run(scenario())
    assert [r.status for r in replies] == [200, 429, 200, 429]
    assert [r.headers["X-RateLimit-Reset"] for r in replies] == [str(FEB)] * 2 + [
        str(FEB + 86400)
    ] * 2
    assert replies[1].headers["Retry-After"] == "1"
    assert replies[3].headers["Retry-After"] == "86400"
    assert replies[2].headers["RateLimit"] == '"email-day";r=0;t=86400'


def test_key_quota_renews_on_the_first_of_the_month(any_env: Env) -> None:
    _, secret = any_env.key("tiny")
    any_env.clock.set("2026-01-31T23:59:59Z")

    async def scenario() -> list[Reply]:
        async with (
            any_env.serving(any_env.config(plans=TINY)) as url,
            aiohttp.ClientSession(headers=bearer(secret)) as s,
        ):
            api = f"{url}/api/email?email={ADDRESS}"
            replies = [await fetch(s, "GET", api) for _ in range(4)]
            any_env.clock.set("2026-02-01T00:00:00Z")
            replies += [await fetch(s, "GET", api) for _ in range(4)]
            return replies

    replies = run(scenario())
    assert [r.status for r in replies] == [200, 200, 200, 429] * 2
    assert [r.remaining for r in replies] == [2, 1, 0, 0] * 2
    assert replies[3].headers["Retry-After"] == "1"
    assert replies[3].headers["X-RateLimit-Reset"] == str(FEB)
    assert replies[4].headers["RateLimit-Policy"] == f'"email-month";q=3;w={MAR - FEB}'
    assert replies[4].headers["X-RateLimit-Reset"] == str(MAR)
    assert replies[7].headers["Retry-After"] == str(MAR - FEB)


def test_counts_survive_a_restart(any_env: Env) -> None:
    _, secret = any_env.key("tiny")
    config = any_env.config(plans=TINY)

    async def session_of_requests(count: int) -> list[Reply]:
        async with (
            any_env.serving(config) as url,
            aiohttp.ClientSession(headers=bearer(secret)) as s,
        ):
            replies = [await fetch(s, "GET", f"{url}/api/email")]  # 400: where we stand
            for _ in range(count):
                replies.append(await fetch(s, "GET", f"{url}/api/email?email={ADDRESS}"))
            return replies

    async def scenario() -> tuple[list[Reply], list[Reply]]:
        return await session_of_requests(2), await session_of_requests(2)

    before, after = run(scenario())
    assert [(r.status, r.remaining) for r in before] == [(400, 3), (200, 2), (200, 1)]
    assert [(r.status, r.remaining) for r in after] == [(400, 1), (200, 0), (429, 0)]


def test_anonymous_count_survives_a_restart(env: Env) -> None:
    async def once() -> Reply:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            return await fetch(s, "GET", f"{url}/api/email?email={ADDRESS}")

    async def scenario() -> tuple[Reply, Reply]:
        return await once(), await once()

    first, second = run(scenario())
    assert (first.status, second.status) == (200, 429)


# --- who is counted: client addresses behind proxies ------------------------------------------


def forwarded(hops: str) -> dict[str, str]:
    return {"X-Forwarded-For": hops}


def test_forwarded_for_is_believed_from_trusted_proxies(any_env: Env) -> None:
    config = any_env.config(trusted_proxies=("127.0.0.1",))

    async def scenario() -> list[Reply]:
        async with any_env.serving(config) as url, aiohttp.ClientSession() as s:
            api = f"{url}/api/email?email={ADDRESS}"
            return [
                await fetch(s, "GET", api, headers=forwarded("203.0.113.7")),
                await fetch(s, "GET", api, headers=forwarded("203.0.113.7")),
                await fetch(s, "GET", api, headers=forwarded("198.51.100.9")),
                # The nearest untrusted hop counts; what a client claims before it does not.
                await fetch(s, "GET", api, headers=forwarded("192.0.2.1, 203.0.113.7")),
                await fetch(s, "GET", api, headers=forwarded("192.0.2.44, 127.0.0.1")),
                await fetch(s, "GET", api),  # the proxy's own requests: its own address
                await fetch(s, "GET", api, headers=forwarded("not-an-ip")),  # falls back to it
            ]

    replies = run(scenario())
    assert [r.status for r in replies] == [200, 429, 200, 429, 200, 200, 429]
    with any_env.store() as store:
        day = utc("2026-01-15T00:00:00Z")
        used = {
            ip: store.used(f"ip:{ip}", "email-day", day)
            for ip in ("203.0.113.7", "198.51.100.9", "192.0.2.1", "192.0.2.44", "127.0.0.1")
        }
    assert used == {
        "203.0.113.7": 1,
        "198.51.100.9": 1,
        "192.0.2.1": 0,
        "192.0.2.44": 1,
        "127.0.0.1": 1,
    }


def test_forwarded_for_is_ignored_without_trusted_proxies(env: Env) -> None:
    async def scenario() -> list[Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            api = f"{url}/api/email?email={ADDRESS}"
            return [
                await fetch(s, "GET", api, headers=forwarded("203.0.113.7")),
                await fetch(s, "GET", api, headers=forwarded("198.51.100.9")),
            ]

    replies = run(scenario())
    assert [r.status for r in replies] == [200, 429]
    with env.store() as store:
        day = utc("2026-01-15T00:00:00Z")
        assert store.used("ip:127.0.0.1", "email-day", day) == 1
        assert store.used("ip:203.0.113.7", "email-day", day) == 0
        assert store.used("ip:198.51.100.9", "email-day", day) == 0


# --- exact under concurrency --------------------------------------------------------------------


def test_parallel_requests_take_exactly_the_units_left(any_env: Env) -> None:
    key, secret = any_env.key("ten")
    config = any_env.config(plans={"ten": PlanConfig(email_per_month=10)})
    with any_env.store() as store:
        for _ in range(5):
            store.consume(f"key:{key.key_id}", "email-month", JAN, 10)

    async def scenario() -> list[Reply]:
        async with any_env.serving(config) as url:
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(headers=bearer(secret), connector=connector) as s:
                api = f"{url}/api/email?email={ADDRESS}"
                return await asyncio.gather(*(fetch(s, "GET", api) for _ in range(200)))

    replies = run(scenario())
    assert Counter(r.status for r in replies) == {200: 5, 429: 195}
    assert sorted(r.remaining for r in replies if r.status == 200) == [0, 1, 2, 3, 4]
    assert {r.remaining for r in replies if r.status == 429} == {0}
    with any_env.store() as store:
        assert store.used(f"key:{key.key_id}", "email-month", JAN) == 10
