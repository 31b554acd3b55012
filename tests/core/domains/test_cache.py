"""The domain cache in each of its forms (a SQLite file, PostgreSQL, a bucketed table on a
shared folder): TTL per answer kind, an injected clock, answers that survive reopening."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.core.config import CacheConfig
from pipeline.core.db.buckets import Shelf
from pipeline.core.domains.cache import DomainBuckets, DomainCache, DomainStore
from pipeline.core.domains.dns import DnsAnswer, DnsStatus, HostStatus
from pipeline.core.errors import StoreError

CONFIG = CacheConfig(ttl_good=1000, ttl_negative=100, ttl_temporary=10)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


Open = Callable[..., DomainStore]


@pytest.fixture(params=["sqlite", "postgresql", "buckets"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Open:
    """A function opening the cache in one of its forms, the same one each time."""
    if request.param == "buckets":
        shelf = Shelf(str(tmp_path / "shared"))
        return lambda config, clock=None: DomainBuckets(shelf, config, clock or Clock())
    where: Path | str = tmp_path / "cache" / "domains.sqlite"
    if request.param == "postgresql":
        where = request.getfixturevalue("pg_url")
    return lambda config, clock=None: DomainCache(where, config, clock or Clock())


def test_answers_survive_reopening(opened: Open) -> None:
    cache = opened(CONFIG)
    cache.put_many({"gmail.com": DnsAnswer(DnsStatus.MX, "gmail-smtp-in.l.google.com")})
    cache.put_hosts({"gmail-smtp-in.l.google.com": HostStatus.ADDRESS})
    again = opened(CONFIG)
    assert again.get_many(["gmail.com", "other.com"]) == {
        "gmail.com": DnsAnswer(DnsStatus.MX, "gmail-smtp-in.l.google.com")
    }
    assert again.get_hosts(["gmail-smtp-in.l.google.com", "mx.other.com"]) == {
        "gmail-smtp-in.l.google.com": HostStatus.ADDRESS
    }


def test_the_sandbox_family_is_kept_apart(pg_url: str) -> None:
    real, made_up = DomainCache(pg_url, CONFIG), DomainCache(pg_url, CONFIG, family="sandbox_")
    made_up.put_many({"gmail.com": DnsAnswer(DnsStatus.MX, "127.0.0.9")})
    assert real.get_many(["gmail.com"]) == {}
    assert made_up.get_many(["gmail.com"]) != {}


@pytest.mark.parametrize(
    ("status", "ttl"),
    [
        (DnsStatus.MX, 1000),
        (DnsStatus.IMPLICIT_MX, 1000),
        (DnsStatus.NO_DOMAIN, 100),
        (DnsStatus.NULL_MX, 100),
        (DnsStatus.NO_MAIL_HOST, 100),
        (DnsStatus.TIMEOUT, 10),
        (DnsStatus.SERVFAIL, 10),
    ],
)
def test_each_answer_kind_expires_after_its_ttl(opened: Open, status: DnsStatus, ttl: int) -> None:
    clock = Clock()
    cache = opened(CONFIG, clock)
    cache.put_many({"x.com": DnsAnswer(status)})
    clock.now += ttl - 1
    assert cache.get_many(["x.com"]) == {"x.com": DnsAnswer(status)}
    clock.now += 1
    assert cache.get_many(["x.com"]) == {}


def test_offline_answers_are_not_cached(opened: Open) -> None:
    cache = opened(CONFIG)
    cache.put_many({"x.com": DnsAnswer(DnsStatus.OFFLINE)})
    assert cache.get_many(["x.com"]) == {}


def test_a_newer_answer_replaces_the_old_one(opened: Open) -> None:
    cache = opened(CONFIG)
    cache.put_many({"x.com": DnsAnswer(DnsStatus.TIMEOUT)})
    cache.put_many({"x.com": DnsAnswer(DnsStatus.MX, "mx.x.com")})
    assert cache.get_many(["x.com"]) == {"x.com": DnsAnswer(DnsStatus.MX, "mx.x.com")}


def test_many_domains_round_trip(opened: Open) -> None:
    answers = {f"d{i}.com": DnsAnswer(DnsStatus.MX, f"mx.d{i}.com") for i in range(20_000)}
    cache = opened(CONFIG)
    cache.put_many(answers)
    assert cache.get_many([*answers, "absent.com"]) == answers


def test_unusable_cache_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"[Dd]elete the file"):
        DomainCache(path, CONFIG)
