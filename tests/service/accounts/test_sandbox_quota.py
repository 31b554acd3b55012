"""`listclean serve --sandbox` lets the docs' curl examples run: an anonymous caller on loopback
has no daily quota there (a policy of its own in the headers), while a caller from another
address, behind a trusted proxy, is counted against the anonymous quota as anywhere."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from pipeline.service.accounts.quotas import SANDBOX_PER_DAY
from tests.service.conftest import NOON
from tests.service.instances import burst, instances


def test_loopback_callers_of_the_sandbox_are_not_held_to_the_daily_quota(tmp_path: Path) -> None:
    env = {"LISTCLEAN_HTTP_TRUSTED_PROXIES": '["127.0.0.2"]'}
    with instances(tmp_path / "service.sqlite", tmp_path, NOON, count=1, env=env) as group:
        url = group.running[0].url
        mine = asyncio.run(burst([url], 5))  # no key, from 127.0.0.1: the docs' curl
        # 127.0.0.1 is no trusted proxy here, so X-Forwarded-For is ignored: still loopback.
        claimed = asyncio.run(burst([url], 3, [{"X-Forwarded-For": "203.0.113.7"}]))
    assert [r.status for r in mine] == [200] * 5
    assert {r.headers["RateLimit-Policy"] for r in mine} == {
        f'"email-sandbox-day";q={SANDBOX_PER_DAY};w=86400'
    }
    assert sorted(r.remaining for r in mine) == list(range(SANDBOX_PER_DAY - 5, SANDBOX_PER_DAY))
    assert Counter(r.status for r in claimed) == {200: 3}


def test_a_caller_from_elsewhere_is_counted_as_anywhere(tmp_path: Path) -> None:
    env = {"LISTCLEAN_HTTP_TRUSTED_PROXIES": '["127.0.0.1"]'}
    with instances(tmp_path / "service.sqlite", tmp_path, NOON, count=1, env=env) as group:
        url = group.running[0].url
        outside = asyncio.run(burst([url], 3, [{"X-Forwarded-For": "203.0.113.7"}]))
    # The anonymous quota (one a day by default) holds for 203.0.113.7, sandbox or not.
    assert Counter(r.status for r in outside) == {200: 1, 429: 2}
    assert {r.headers["RateLimit-Policy"] for r in outside} == {'"email-day";q=1;w=86400'}
