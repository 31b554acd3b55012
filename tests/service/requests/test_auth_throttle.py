"""Repeated failed authentication from one client address is slowed down (429 with
Retry-After past ``auth_failures`` 401s within ``auth_window``), and a valid key is never
locked out."""

from __future__ import annotations

import aiohttp

from pipeline.service.requests.guard import AuthThrottle
from tests.service.conftest import RATE_HEADERS, Env, Reply, fetch, run


def test_failures_past_the_limit_get_429_and_a_valid_key_still_gets_through(env: Env) -> None:
    _, good = env.key("starter")
    config = env.config(auth_failures=5, auth_window=60.0)

    async def scenario() -> dict[str, list[Reply]]:
        async with env.serving(config) as url, aiohttp.ClientSession() as s:
            email = f"{url}/api/email?email=a@gmail.com"
            find = f"{url}/api/find?search_term=Jane+Roe&find_Contact=true"
            made_up = [
                await fetch(s, "GET", email, headers={"Authorization": f"Bearer lc_guess{i}"})
                for i in range(40)
            ]
            made_up.append(await fetch(s, "GET", f"{find}&apikey=lc_guess_find"))
            valid = [
                await fetch(s, "GET", email, headers={"Authorization": f"Bearer {good}"}),
                await fetch(s, "GET", f"{email}&apikey={good}"),
            ]
            env.clock.advance(61)  # the window has passed: the address starts afresh
            later = [
                await fetch(s, "GET", email, headers={"Authorization": "Bearer lc_guess_late"})
            ]
            return {"made_up": made_up, "valid": valid, "later": later}

    replies = run(scenario())
    made_up = replies["made_up"]
    assert [r.status for r in made_up] == [401] * 5 + [429] * 36
    for reply in made_up[5:]:
        assert reply.json["code"] == "too_many_auth_failures", reply.text
        assert reply.headers["Retry-After"] == "60"  # every failure counts: the window slides
        assert all(h in reply.headers for h in RATE_HEADERS)
        assert "WWW-Authenticate" not in reply.headers
    assert [r.status for r in replies["valid"]] == [200, 200]
    assert [r.remaining for r in replies["valid"]] == [9_999, 9_998]
    assert [r.status for r in replies["later"]] == [401]


def test_ipv6_addresses_count_per_64_and_the_table_is_bounded() -> None:
    now = [1000.0]
    throttle = AuthThrottle(limit=2, window=10.0, clock=lambda: now[0], max_addresses=3)
    same_64 = ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::9"]
    assert [throttle.failed(ip) for ip in same_64] == [None, None, 10]
    assert throttle.failed("2001:db8:1:3::1") is None  # another /64
    assert throttle.failed("::ffff:192.0.2.7") is None  # IPv4-mapped counts as the IPv4 address
    assert throttle.failed("192.0.2.7") is None
    assert throttle.failed("192.0.2.7") == 10
    now[0] += 4
    assert throttle.failed("192.0.2.7") == 6  # Retry-After: until the oldest counted one expires
    for i in range(5):  # more addresses than the table holds: the least recent are forgotten
        throttle.failed(f"198.51.100.{i}")
    assert throttle.failed("192.0.2.7") is None
