"""The domain cache: a real SQLite file, TTL per answer kind, an injected clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.config import CacheConfig
from pipeline.core.domains.cache import DomainCache
from pipeline.core.domains.dns import DnsAnswer, DnsStatus
from pipeline.core.errors import StoreError

CONFIG = CacheConfig(ttl_good=1000, ttl_negative=100, ttl_temporary=10)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_answers_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "domains.sqlite"
    with DomainCache(path, CONFIG) as cache:
        cache.put_many({"gmail.com": DnsAnswer(DnsStatus.MX, "gmail-smtp-in.l.google.com")})
    with DomainCache(path, CONFIG) as cache:
        assert cache.get_many(["gmail.com", "other.com"]) == {
            "gmail.com": DnsAnswer(DnsStatus.MX, "gmail-smtp-in.l.google.com")
        }


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
def test_each_answer_kind_expires_after_its_ttl(
    tmp_path: Path, status: DnsStatus, ttl: int
) -> None:
    clock = Clock()
    with DomainCache(tmp_path / "d.sqlite", CONFIG, clock) as cache:
        cache.put_many({"x.com": DnsAnswer(status)})
        clock.now += ttl - 1
        assert cache.get_many(["x.com"]) == {"x.com": DnsAnswer(status)}
        clock.now += 1
        assert cache.get_many(["x.com"]) == {}


def test_offline_answers_are_not_cached(tmp_path: Path) -> None:
    with DomainCache(tmp_path / "d.sqlite", CONFIG) as cache:
        cache.put_many({"x.com": DnsAnswer(DnsStatus.OFFLINE)})
        assert cache.get_many(["x.com"]) == {}


def test_a_newer_answer_replaces_the_old_one(tmp_path: Path) -> None:
    with DomainCache(tmp_path / "d.sqlite", CONFIG) as cache:
        cache.put_many({"x.com": DnsAnswer(DnsStatus.TIMEOUT)})
        cache.put_many({"x.com": DnsAnswer(DnsStatus.MX, "mx.x.com")})
        assert cache.get_many(["x.com"]) == {"x.com": DnsAnswer(DnsStatus.MX, "mx.x.com")}


def test_many_domains_round_trip(tmp_path: Path) -> None:
    answers = {f"d{i}.com": DnsAnswer(DnsStatus.MX, f"mx.d{i}.com") for i in range(20_000)}
    with DomainCache(tmp_path / "d.sqlite", CONFIG) as cache:
        cache.put_many(answers)
        assert cache.get_many([*answers, "absent.com"]) == answers


def test_unusable_cache_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"[Dd]elete the file"):
        DomainCache(path, CONFIG)
