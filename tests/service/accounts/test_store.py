"""ServiceStore: API keys and quota counters, each rule once in a SQLite file and once in a
PostgreSQL database; what only a file can show (its bytes, its path) in a file."""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.errors import StoreError, UsageError
from pipeline.service.accounts.store import ServiceStore
from tests.conftest import StoreAt
from tests.service.conftest import NOON, Clock


@pytest.fixture
def clock() -> Clock:
    return Clock(NOON)


@pytest.fixture
def store(store_at: StoreAt, clock: Clock) -> Iterator[ServiceStore]:
    with ServiceStore(store_at("service.sqlite"), clock) as opened:
        yield opened


def test_consume_is_exact_at_the_limit(store: ServiceStore) -> None:
    taken = [store.consume("key:k_1", "email-month", 0, 3) for _ in range(5)]
    assert taken == [(True, 1), (True, 2), (True, 3), (False, 3), (False, 3)]
    assert store.used("key:k_1", "email-month", 0) == 3


def test_a_lower_limit_than_used_takes_nothing(store: ServiceStore) -> None:
    for _ in range(3):
        store.consume("key:k_1", "email-month", 0, 5)
    # The plan shrank to 2 (a downgrade mid-month): nothing more, and the count stays as it was.
    assert store.consume("key:k_1", "email-month", 0, 2) == (False, 3)
    assert store.used("key:k_1", "email-month", 0) == 3


def test_a_zero_limit_takes_nothing(store: ServiceStore) -> None:
    assert store.consume("ip:192.0.2.1", "email-day", 0, 0) == (False, 0)
    assert store.used("ip:192.0.2.1", "email-day", 0) == 0


def test_units_are_taken_all_or_none(store: ServiceStore) -> None:
    """A bulk job's reservation: several units in one statement, within the limit, or none."""
    assert store.consume_units("key:k_1", "email-month", 0, 60, 100) == (True, 60)
    assert store.consume("key:k_1", "email-month", 0, 100) == (True, 61)
    assert store.consume_units("key:k_1", "email-month", 0, 40, 100) == (False, 61)
    assert store.consume_units("key:k_1", "email-month", 0, 39, 100) == (True, 100)
    assert store.consume_units("key:k_2", "email-month", 0, 101, 100) == (False, 0)
    assert store.consume_units("key:k_2", "email-month", 0, 0, 100) == (True, 0)
    store.refund_units("key:k_1", "email-month", 0, 30)
    assert store.used("key:k_1", "email-month", 0) == 70
    store.refund_units("key:k_1", "email-month", 0, 500)  # never below zero
    assert store.used("key:k_1", "email-month", 0) == 0


def test_counters_are_per_subject_policy_and_window(store: ServiceStore) -> None:
    cells = [
        ("key:k_1", "email-month", 100),
        ("key:k_2", "email-month", 100),
        ("key:k_1", "find-month", 100),
        ("key:k_1", "email-month", 200),
        ("ip:192.0.2.1", "email-day", 100),
    ]
    for count, (subject, policy, window) in enumerate(cells, start=1):
        for _ in range(count):
            assert store.consume(subject, policy, window, 1000)[0]
    assert [store.used(*cell) for cell in cells] == [1, 2, 3, 4, 5]
    assert store.used("key:k_3", "email-month", 100) == 0
    assert store.used("key:k_1", "email-month", 300) == 0


def test_purge_forgets_only_windows_that_started_before(store: ServiceStore) -> None:
    for window in (100, 200, 300):
        store.consume("key:k_1", "email-month", window, 10)
    store.purge_usage(before=200)
    assert [store.used("key:k_1", "email-month", w) for w in (100, 200, 300)] == [0, 1, 1]


def test_counts_are_durable_across_connections(store_at: StoreAt) -> None:
    path = store_at("service.sqlite")
    with ServiceStore(path) as first:
        first.consume("key:k_1", "email-month", 0, 10)
        first.consume("key:k_1", "email-month", 0, 10)
    with ServiceStore(path) as second:
        assert second.consume("key:k_1", "email-month", 0, 10) == (True, 3)


def test_create_and_find_keys(store: ServiceStore, clock: Clock) -> None:
    key, secret = store.create_key("starter", "acme")
    assert re.fullmatch(r"k_[0-9a-f]{8}", key.key_id)
    assert secret.startswith("lc_")
    assert len(secret) >= 3 + 43  # 32 random bytes, base64url
    assert (key.plan, key.label, key.created_at, key.revoked_at, key.active) == (
        "starter",
        "acme",
        NOON,
        None,
        True,
    )
    assert store.find_key(secret) == key
    assert store.find_key(secret + "x") is None
    assert store.find_key("") is None
    other, other_secret = store.create_key("default")
    assert other_secret != secret
    assert other.key_id != key.key_id
    assert store.find_key(other_secret) == other


def test_list_keys_in_creation_order(store: ServiceStore, clock: Clock) -> None:
    first, _ = store.create_key("default", "first")
    clock.advance(10)
    second, _ = store.create_key("growth", "second")
    assert store.list_keys() == [first, second]


def test_revoked_keys_are_found_with_revoked_at(store: ServiceStore, clock: Clock) -> None:
    key, secret = store.create_key("default")
    clock.advance(60)
    revoked = store.revoke_key(key.key_id)
    assert revoked.revoked_at == NOON + 60
    assert not revoked.active
    found = store.find_key(secret)
    assert found is not None
    assert found == revoked
    assert (found.key_id, found.plan, found.created_at) == (key.key_id, "default", NOON)
    # Revoking again changes nothing: the first revocation time stays.
    clock.advance(60)
    assert store.revoke_key(key.key_id).revoked_at == NOON + 60
    assert store.list_keys() == [revoked]


def test_revoking_an_unknown_id_is_a_usage_error(store: ServiceStore) -> None:
    with pytest.raises(UsageError, match=r"There is no API key with id 'k_nope'") as caught:
        store.revoke_key("k_nope")
    assert caught.value.exit_code == 2
    assert "`listclean keys list` shows the ids" in str(caught.value)


def test_secrets_are_never_stored_in_clear(tmp_path: Path) -> None:
    path = tmp_path / "service.sqlite"
    with ServiceStore(path) as store:
        made = [store.create_key(plan, f"label-{plan}") for plan in ("default", "starter")]
        # While the store is open the rows may sit in the WAL: read every file there is.
        files = [p for p in tmp_path.iterdir() if p.name.startswith("service.sqlite")]
        on_disk = b"".join(p.read_bytes() for p in files)
        for _, secret in made:
            assert secret.encode() not in on_disk
            assert secret.removeprefix("lc_").encode() not in on_disk
    on_disk = path.read_bytes()  # after close: checkpointed into the main file
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT * FROM api_keys ORDER BY created_at").fetchall()
    assert len(rows) == 2
    for (key, secret), row in zip(made, rows, strict=True):
        assert secret.encode() not in on_disk
        assert all(secret not in str(cell) for cell in row)
        assert row[0] == key.key_id
        assert row[1] == hashlib.sha256(secret.encode()).hexdigest()


def test_an_unusable_path_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"Cannot open the service database at .*--db"):
        ServiceStore(tmp_path)  # a directory, not a file
