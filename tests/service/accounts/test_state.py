"""The state as the running service reaches it: on the loop with a turn's writes sharing one
commit (a SQLite file), or awaited in batches from a worker thread (PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

from pipeline.service.accounts.state import LocalState, SharedState, open_live
from pipeline.service.accounts.store import ServiceStore
from tests.conftest import StoreAt
from tests.service.conftest import NOON, Clock


def committed(path: Path) -> list[tuple[str, int]]:
    """The counters another connection sees (the last committed state of the file)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT subject, used FROM usage ORDER BY subject").fetchall()


def test_a_turns_writes_share_one_commit_made_on_the_next_turn(tmp_path: Path) -> None:
    path = tmp_path / "service.sqlite"

    async def scenario() -> list[object]:
        state = await open_live(path, Clock(NOON))
        assert isinstance(state, LocalState)
        seen: list[object] = []
        try:
            taken = [await state.consume(f"key:k_{i}", "email-month", 0, 5) for i in (1, 1, 2)]
            seen += [taken, committed(path)]  # nothing committed during the turn
            await asyncio.sleep(0)  # the next turn: its commit ran
            seen.append(committed(path))
            await state.consume("key:k_3", "email-month", 0, 5)
            await state.refund("key:k_2", "email-month", 0)
            seen.append(committed(path))  # a refund commits at once, with the turn's writes
        finally:
            await state.close()  # commits what is still open
        seen.append(committed(path))
        return seen

    taken, during, after, refunded, closed = asyncio.run(scenario())
    assert taken == [(True, 1), (True, 2), (True, 1)]
    assert during == []
    assert after == [("key:k_1", 2), ("key:k_2", 1)]
    assert refunded == [("key:k_1", 2), ("key:k_2", 0), ("key:k_3", 1)]
    assert closed == refunded


def test_the_live_state_counts_and_refuses_as_the_store_does(store_at: StoreAt) -> None:
    where = store_at("service.sqlite")
    with ServiceStore(where) as store:
        key, secret = store.create_key("default")

    async def scenario() -> list[object]:
        state = await open_live(where)
        assert isinstance(state, SharedState if isinstance(where, str) else LocalState)
        try:
            found = await state.find_key(secret)
            taken = [await state.consume("key:k_1", "find-month", 100, 2) for _ in range(3)]
            await state.refund("key:k_1", "find-month", 100)
            used = [await state.used("key:k_1", "find-month", 100)]
            used.append(state.used_now("key:k_1", "find-month", 100))
            await asyncio.sleep(0)  # the turn's commit, which the file's other writers wait for
            with ServiceStore(where) as other:  # `listclean keys revoke`, beside the service
                other.revoke_key(key.key_id)
            revoked = await state.find_key(secret)
            await state.ping()
            return [found, taken, used, revoked]
        finally:
            await state.close()

    found, taken, used, revoked = asyncio.run(scenario())
    assert found == key
    assert taken == [(True, 1), (True, 2), (False, 2)]
    assert used == [1, 1]
    assert revoked is not None and not revoked.active


def test_a_turns_takes_of_one_counter_after_the_first_are_counted_in_memory(
    tmp_path: Path,
) -> None:
    """The turn holds the write lock: its first take reads the counter, the others count in
    memory by the same rule, and the commit writes the sum with one statement."""
    path = tmp_path / "service.sqlite"
    statements: list[str] = []

    async def scenario() -> list[object]:
        state = await open_live(path, Clock(NOON))
        assert isinstance(state, LocalState)
        state.store.db.run(lambda db: db.set_trace_callback(statements.append))
        try:
            first = [await state.consume("key:k_1", "email-month", 0, 4) for _ in range(3)]
            seen: list[object] = [first, await state.used("key:k_1", "email-month", 0)]
            await asyncio.sleep(0)  # the commit
            seen.append(committed(path))
            # The next turn reads the committed count again, and stops at the limit.
            seen.append([await state.consume("key:k_1", "email-month", 0, 4) for _ in range(3)])
            seen.append(state.used_now("key:k_1", "email-month", 0))
            await asyncio.sleep(0)
            seen.append(committed(path))
            return seen
        finally:
            await state.close()

    first, used, after_first, second, used_now, after_second = asyncio.run(scenario())
    assert first == [(True, 1), (True, 2), (True, 3)]
    assert used == 3
    assert after_first == [("key:k_1", 3)]
    assert second == [(True, 4), (False, 4), (False, 4)]
    assert used_now == 4
    assert after_second == [("key:k_1", 4)]
    upserts = [s for s in statements if s.startswith("INSERT INTO usage")]
    assert len(upserts) == 2  # one a turn, not one a take


def test_a_key_revoked_before_the_turns_lock_is_refused_within_that_turn(tmp_path: Path) -> None:
    path = tmp_path / "service.sqlite"
    with ServiceStore(path) as store:
        key, secret = store.create_key("default")

    async def scenario() -> list[object]:
        state = await open_live(path, Clock(NOON))
        try:
            before = await state.find_key(secret)  # remembered
            with ServiceStore(path) as other:  # revoked while no transaction of ours is open
                other.revoke_key(key.key_id)
            await state.consume(f"key:{key.key_id}", "email-month", 0, 5)  # takes the lock
            within = await state.find_key(secret)  # the same turn: the lock's check saw it
            return [before, within]
        finally:
            await state.close()

    before, within = asyncio.run(scenario())
    assert before is not None and before.active
    assert within is not None and not within.active


def test_counts_that_cannot_be_written_roll_the_turn_back(tmp_path: Path) -> None:
    path = tmp_path / "service.sqlite"

    async def scenario() -> list[object]:
        state = await open_live(path, Clock(NOON))
        assert isinstance(state, LocalState)
        try:
            for _ in range(2):
                await state.consume("key:k_1", "email-month", 0, 5)

            def broken(*_: object) -> None:
                raise sqlite3.OperationalError("disk I/O error")

            state.store.add_used = broken  # type: ignore[method-assign]
            with contextlib.suppress(sqlite3.OperationalError):
                state.commit()
            del state.store.add_used
            seen: list[object] = [committed(path)]  # the turn's first take rolled back too
            seen.append(await state.consume("key:k_1", "email-month", 0, 5))  # usable again
            await asyncio.sleep(0)
            seen.append(committed(path))
            return seen
        finally:
            await state.close()

    rolled_back, taken, after = asyncio.run(scenario())
    assert rolled_back == []
    assert taken == (True, 1)
    assert after == [("key:k_1", 1)]
