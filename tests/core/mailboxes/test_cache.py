"""The mailbox cache in each of its forms (a SQLite file, PostgreSQL, a bucketed table on a
shared folder): the same answers, TTLs, catch-all findings, the quota ledger and erasure."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.core.config import VerifyConfig
from pipeline.core.db.buckets import Shelf
from pipeline.core.mailboxes.cache import MailboxBuckets, MailboxCache, MailboxStore
from pipeline.core.mailboxes.types import Mailbox, MailboxResult, RemoteAnswer
from pipeline.core.verdict import Verdict
from tests.conftest import at_once

CONFIG = VerifyConfig(ttl_good=1000, ttl_temporary=10)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


Open = Callable[[Clock], MailboxStore]


@pytest.fixture(params=["sqlite", "postgresql", "buckets"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Open:
    if request.param == "buckets":
        shelf = Shelf(str(tmp_path / "shared"))
        return lambda clock: MailboxBuckets(shelf, CONFIG, clock)
    where: Path | str = tmp_path / "mailboxes.sqlite"
    if request.param == "postgresql":
        where = request.getfixturevalue("pg_url")
    return lambda clock: MailboxCache(where, CONFIG, clock)


def test_answers_and_their_ttls(opened: Open) -> None:
    clock = Clock()
    cache = opened(clock)
    cache.put("a@x.com", MailboxResult(Mailbox.OK, "250 ok", 5.0))
    cache.put("b@x.com", MailboxResult(Mailbox.GREYLISTED, "451 later", 6.0))
    cache.put("a@x.com", MailboxResult(Mailbox.NO_SUCH_USER, "550 no", 7.0))  # replaces
    again = opened(clock)
    assert again.get_many(["a@x.com", "b@x.com", "c@x.com"]) == {  # dated when kept
        "a@x.com": MailboxResult(Mailbox.NO_SUCH_USER, "550 no", clock.now),
        "b@x.com": MailboxResult(Mailbox.GREYLISTED, "451 later", clock.now),
    }
    clock.now += 10  # a temporary answer lasts ttl_temporary, a lasting one ttl_good
    assert set(opened(clock).get_many(["a@x.com", "b@x.com"])) == {"a@x.com"}


def test_catch_all_and_remote_answers(opened: Open) -> None:
    cache = opened(Clock())
    cache.put_catch_all({"x.com": True, "y.com": False})
    assert cache.catch_all(["x.com", "y.com", "z.com"]) == {"x.com": True, "y.com": False}
    answer = RemoteAnswer(Verdict.VALID, 0.9, False, True)
    cache.put_remote_answer("a@x.com", "https://api", answer)
    cache.put_remote_answer("b@x.com", "https://api", RemoteAnswer(None, error="api_error"))
    assert cache.remote_answers(["a@x.com", "b@x.com"], "https://api") == {"a@x.com": answer}
    assert cache.remote_answers(["a@x.com"], "https://other") == {}


def test_the_quota_ledger_counts_and_remembers(opened: Open) -> None:
    cache = opened(Clock())
    for n in (3, 4):
        cache.add_quota_spent("https://api", "fp", 1_700_000_000, n)
    assert cache.quota_spent("https://api", "fp", 1_700_000_000) == 7
    assert cache.quota_spent("https://api", "fp", 1_800_000_000) == 0
    assert cache.quota_limit("https://api", "fp", 1_700_000_000) is None
    cache.set_quota_limit("https://api", "fp", 1_700_000_000, 500)
    assert opened(Clock()).quota_limit("https://api", "fp", 1_700_000_000) == 500


def test_forgetting_an_address(opened: Open) -> None:
    cache = opened(Clock())
    cache.put("a@x.com", MailboxResult(Mailbox.OK, "250 ok", 5.0))
    cache.put_remote_answer("a@x.com", "https://api", RemoteAnswer(Verdict.VALID, 0.9))
    cache.put("b@x.com", MailboxResult(Mailbox.OK, "250 ok", 5.0))
    assert cache.forget(["a@x.com"]) == 2  # type: ignore[attr-defined]
    assert set(cache.get_many(["a@x.com", "b@x.com"])) == {"b@x.com"}
    assert cache.remote_answers(["a@x.com"], "https://api") == {}


def test_an_old_cache_opened_by_several_at_once(tmp_path: Path) -> None:
    """A cache from before remote answers kept their time gains the column once, whoever
    opens it first, and its answers stay (counted as learned a whole TTL before expiring)."""
    path = tmp_path / "mailboxes.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(
            "CREATE TABLE remote_answers (key TEXT NOT NULL, api TEXT NOT NULL, verdict TEXT "
            "NOT NULL, score REAL NOT NULL, known INTEGER NOT NULL, suspected INTEGER NOT NULL, "
            "expires_at REAL NOT NULL, PRIMARY KEY (key, api)) WITHOUT ROWID"
        )
        db.execute(
            "INSERT INTO remote_answers VALUES ('a@x.com', 'https://api', 'Valid', 0.9, 0, 0, 2e9)"
        )
    failures = at_once(6, lambda: MailboxCache(path, CONFIG, Clock()).close())
    assert failures == []
    cache = MailboxCache(path, CONFIG, Clock())
    try:
        answer = cache.remote_answers(["a@x.com"], "https://api")["a@x.com"]
        assert (answer.verdict, answer.score) == (Verdict.VALID, 0.9)
    finally:
        cache.close()
