"""The paid-answer store, in a SQLite file, in PostgreSQL and in bucket tables alike: answers
kept with their TTL (short for an undecided one), failures never kept, bulk jobs kept from their
creation until collected, and an erasure that reaches the answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.config import VendorConfig
from pipeline.core.db.buckets import Shelf
from pipeline.core.mailboxes.vendors.store import PaidAnswers, PaidBuckets
from pipeline.core.mailboxes.vendors.types import Job, VendorAnswer, not_answered
from pipeline.core.verdict import Reason

CONFIG = VendorConfig(ttl=1000, ttl_unknown=10)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


Open = Callable[..., Any]


@pytest.fixture(params=["sqlite", "postgresql", "buckets"])
def paid(request: pytest.FixtureRequest, tmp_path: Path) -> Open:
    """Opens the store in one of its forms, the same one each time."""
    if request.param == "buckets":
        shelf = Shelf(str(tmp_path / "shared"))
        return lambda config, *clock: PaidBuckets(shelf, config, *clock)
    where = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    return lambda config, *clock: PaidAnswers(where or tmp_path / "paid.sqlite", config, *clock)


def test_answers_are_kept_and_expire(paid: Open) -> None:
    clock = Clock()
    with paid(CONFIG, clock) as store:
        store.put("a@x.com", VendorAnswer(Reason.API_VERIFIED, "valid", "zerobounce"))
        store.put("b@x.com", VendorAnswer(Reason.VENDOR_UNKNOWN, "unknown", "kickbox", False))
        store.put("c@x.com", not_answered("kickbox", Reason.NOT_VERIFIED_CREDITS, "empty"))
        store.put("d@x.com", not_answered("kickbox", Reason.API_ERROR, "HTTP 500"))
        found = store.answers(["a@x.com", "b@x.com", "c@x.com", "d@x.com", "e@x.com"])
        assert {k: (a.reason, a.vendor, a.billed) for k, a in found.items()} == {
            "a@x.com": (Reason.API_VERIFIED, "zerobounce", True),
            "b@x.com": (Reason.VENDOR_UNKNOWN, "kickbox", False),
        }
        assert found["a@x.com"].detail == "zerobounce: valid"
        clock.now += 11  # past ttl_unknown: the unknown is asked again, the answer is not
        assert list(store.answers(["a@x.com", "b@x.com"])) == ["a@x.com"]
        clock.now += 1000
        assert store.answers(["a@x.com"]) == {}


def test_a_later_answer_replaces_the_earlier(paid: Open) -> None:
    with paid(CONFIG) as store:
        store.put("a@x.com", VendorAnswer(Reason.GREYLISTED, "unknown/greylisted", "zerobounce"))
        store.put("a@x.com", VendorAnswer(Reason.NO_SUCH_USER, "invalid", "neverbounce"))
        assert store.answers(["a@x.com"])["a@x.com"].reason is Reason.NO_SUCH_USER


def test_jobs_are_open_until_collected(paid: Open) -> None:
    job = Job("neverbounce", "fp1", "1001", (("a@x.com", "A@x.com"), ("b@x.com", "b@x.com")), 1.0)
    with paid(CONFIG) as store:
        store.add_job(job)
        store.add_job(job)  # a second commit of the same job adds nothing
        assert store.open_jobs("neverbounce", "fp1") == [job]
        assert store.open_jobs("neverbounce", "another key") == []
        assert store.open_jobs("kickbox", "fp1") == []
    with paid(CONFIG) as reopened:  # a later run finds it
        assert reopened.open_jobs("neverbounce", "fp1") == [job]
        reopened.close_job(job, "collected")
        assert reopened.open_jobs("neverbounce", "fp1") == []


def test_forget_deletes_the_answers(paid: Open) -> None:
    with paid(CONFIG) as store:
        for key in ("a@x.com", "b@x.com"):
            store.put(key, VendorAnswer(Reason.API_VERIFIED, "valid", "bouncer"))
        assert store.forget(["a@x.com", "z@x.com"]) == 1
        assert list(store.answers(["a@x.com", "b@x.com"])) == ["b@x.com"]
