"""The jobs' records, each rule once in a SQLite file and once in PostgreSQL: a caller's own
jobs only, one claim per job, units reserved and given back with the record, stale jobs queued
again."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from pipeline.service.accounts.store import ServiceStore
from pipeline.service.jobs.store import JobStore, parse_cursor
from pipeline.service.jobs.types import Job, JobOptions, JobState
from tests.conftest import StoreAt
from tests.service.conftest import NOON, Clock

MONTH = ("email-month", 1767225600, 100)  # policy, window start, limit


@pytest.fixture
def clock() -> Clock:
    return Clock(NOON)


@pytest.fixture
def store(store_at: StoreAt, clock: Clock) -> Iterator[JobStore]:
    opened = JobStore(store_at("service.sqlite"), clock)
    try:
        yield opened
    finally:
        opened.close()


def job(number: int, key_id: str = "k_1", created: float = NOON) -> Job:
    return Job(
        id=f"j_{number:022d}",
        key_id=key_id,
        plan="default",
        state=JobState.QUEUED,
        created_at=created,
        name="list.csv",
        stem="list",
        input_bytes=10,
        options=JobOptions(split=True),
        inspected={"format": "csv"},
        input_name="list.csv",
    )


def test_a_job_is_its_keys_only(store: JobStore) -> None:
    store.create(job(1))
    assert store.get(job(1).id, "k_1") == job(1)
    assert store.get(job(1).id, "k_2") is None
    assert store.get(job(1).id, None) == job(1)


def test_pages_are_newest_first_and_a_cursor_goes_on(store: JobStore) -> None:
    for n in range(5):
        store.create(job(n, created=NOON + n))
    store.create(job(9, key_id="k_2", created=NOON + 9))
    first = store.page("k_1", 2, None)
    assert [j.id for j in first.jobs] == [job(4).id, job(3).id]
    assert first.next_cursor is not None
    second = store.page("k_1", 2, parse_cursor(first.next_cursor))
    assert [j.id for j in second.jobs] == [job(2).id, job(1).id]
    last = store.page("k_1", 2, parse_cursor(second.next_cursor or ""))
    assert [j.id for j in last.jobs] == [job(0).id] and last.next_cursor is None
    assert parse_cursor("not a cursor") is None


def test_two_instances_never_claim_one_job(store: JobStore, store_at: StoreAt) -> None:
    for n in range(20):
        store.create(job(n))
    other = JobStore(store_at("service.sqlite"))
    claimed: dict[str, list[str]] = {"a": [], "b": []}

    def claim(into: list[str], by: JobStore, owner: str) -> None:
        while (found := by.claim(owner)) is not None:
            into.append(found.id)

    try:
        threads = [
            threading.Thread(target=claim, args=(claimed["a"], store, "a")),
            threading.Thread(target=claim, args=(claimed["b"], other, "b")),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        other.close()
    both = claimed["a"] + claimed["b"]
    assert sorted(both) == sorted(job(n).id for n in range(20))  # each exactly once


def test_units_are_reserved_with_the_job_and_given_back_unless_done(
    store: JobStore, store_at: StoreAt
) -> None:
    for n in (1, 2, 3):
        store.create(job(n))
    first, second, third = (store.claim("me") for _ in range(3))
    assert first and second and third
    assert store.reserve(first, "me", 60, MONTH) == (True, 60)
    assert store.reserve(second, "me", 50, MONTH) == (False, 60)  # all or none
    assert store.reserve(third, "me", 40, MONTH) == (True, 100)
    assert store.get(second.id, None).units.needed == 50  # type: ignore[union-attr]
    assert store.finish(first, "me", JobState.DONE, {"rows_in": 1})
    assert store.finish(third, "me", JobState.FAILED, None, {"code": "x"})
    assert not store.finish(third, "someone else", JobState.DONE)
    with ServiceStore(store_at("service.sqlite")) as accounts:
        assert accounts.used("key:k_1", "email-month", MONTH[1]) == 60
    failed = store.get(third.id, None)
    assert failed is not None and failed.units.returned == 40 and failed.units.charged == 0


def test_a_stale_job_is_queued_again_or_cancelled_with_its_units(
    store: JobStore, store_at: StoreAt, clock: Clock
) -> None:
    store.create(job(1))
    store.create(job(2))
    running = store.claim("gone")
    asked = store.claim("gone")
    assert running and asked
    store.reserve(asked, "gone", 30, MONTH)
    store.cancel(asked.id, "k_1")  # the instance that runs it will never read the flag
    assert store.sweep(lease=10) == []
    clock.advance(11)
    assert sorted(store.sweep(lease=10)) == sorted([running.id, asked.id])
    assert store.get(running.id, None).state is JobState.QUEUED  # type: ignore[union-attr]
    cancelled = store.get(asked.id, None)
    assert cancelled is not None and cancelled.state is JobState.CANCELLED
    with ServiceStore(store_at("service.sqlite")) as accounts:
        assert accounts.used("key:k_1", "email-month", MONTH[1]) == 0


def test_the_links_secret_is_made_once(store: JobStore, store_at: StoreAt) -> None:
    other = JobStore(store_at("service.sqlite"))
    try:
        assert store.secret() == other.secret() and len(store.secret()) == 32
    finally:
        other.close()
