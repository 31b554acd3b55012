"""The run history, on a SQLite file and on PostgreSQL: runs staged, kept, found as a list's
last run, swept when they never finished, pruned past the retention, and erased address by
address."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.core.history.compare import remembered
from pipeline.core.history.keys import HASH, hashes_of
from pipeline.core.history.store import RunHistory
from pipeline.core.history.types import KEPT, RunStart
from tests.conftest import StoreAt

DAY = 86400.0


class Clock:
    def __init__(self, at: float = 1_800_000_000.0) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def decided(*rows: tuple[str, str, str, float]) -> pl.DataFrame:
    keys = [r[0] for r in rows]
    work = pl.DataFrame(
        {
            "KEY": keys,
            "DUPLICATE": [False] * len(rows),
            "EMAIL": keys,
            "VERDICT": [r[1] for r in rows],
            "REASON": [r[2] for r in rows],
            "SCORE": [r[3] for r in rows],
            "MAILBOX_AT": [None] * len(rows),
        },
        schema={
            "KEY": pl.String,
            "DUPLICATE": pl.Boolean,
            "EMAIL": pl.String,
            "VERDICT": pl.String,
            "REASON": pl.String,
            "SCORE": pl.Float64,
            "MAILBOX_AT": pl.Float64,
        },
    )
    return remembered(work).select(list(KEPT))


def start(run_id: str, at: float, name: str = "crm", sandbox: bool = False) -> RunStart:
    return RunStart(run_id, name, sandbox, at, "digest", "1.0")


ANN = ("ann@example.org", "Valid", "mailbox_ok", 0.97)
BOB = ("bob@example.org", "Invalid", "no_such_user", 0.01)


def test_a_kept_run_is_the_lists_last_and_keeps_its_addresses(store_at: StoreAt) -> None:
    clock = Clock()
    with RunHistory(store_at("history.sqlite"), 0, clock) as history:
        history.begin(start("r1", clock.at))
        history.add_part("r1", 0, decided(ANN))
        history.add_part("r1", 1, decided(BOB))
        assert history.last("crm", False) is None  # staged: nobody's last run yet
        assert history.finish("r1", 2, {"rows_in": 2})
        last = history.last("crm", False)
        assert last is not None and (last.run_id, last.addresses) == ("r1", 2)
        assert last.counts == {"rows_in": 2}
        kept = history.kept("r1")
        assert kept.get_column(HASH).to_list() == hashes_of([ANN[0], BOB[0]])
        assert kept.get_column("VERDICT").to_list() == ["Valid", "Invalid"]
        assert kept.get_column("SCORE").to_list() == [0.97, 0.01]
        previous = history.previous(start("r2", clock.at + DAY))
        assert previous is not None and previous.kept.height == 2
        assert history.last("crm", True) is None  # a sandbox run has a history of its own
        assert history.last("other", False) is None


def test_a_part_added_twice_replaces_the_first(store_at: StoreAt) -> None:
    with RunHistory(store_at("history.sqlite")) as history:
        history.begin(start("r1", 1.0))
        history.add_part("r1", 0, decided(ANN))
        history.add_part("r1", 0, decided(ANN))  # a Dask task run again
        history.finish("r1", 1, {})
        assert history.kept("r1").height == 1


def test_a_run_begun_twice_is_one_run(store_at: StoreAt) -> None:
    """The task that stages a Dask run's history runs again when its worker is lost."""
    with RunHistory(store_at("history.sqlite")) as history:
        history.begin(start("r1", 1.0))
        history.add_part("r1", 0, decided(ANN))
        history.begin(start("r1", 1.0))  # run again: its part stays
        history.finish("r1", 1, {})
        assert [r.run_id for r in history.runs("crm")] == ["r1"]
        assert history.kept("r1").height == 1


def test_a_run_that_never_finished_is_swept_by_the_next_that_does(store_at: StoreAt) -> None:
    clock = Clock()
    with RunHistory(store_at("history.sqlite"), 0, clock) as history:
        history.begin(start("killed", clock.at))
        history.add_part("killed", 0, decided(ANN))
        clock.at += 3600
        history.begin(start("next", clock.at))
        assert history.previous(start("next", clock.at)) is None  # a killed run is no last run
        history.finish("next", 0, {})
        assert history.kept("killed").is_empty()
        assert [r.run_id for r in history.runs("crm")] == ["next"]


def test_a_failed_run_is_discarded(store_at: StoreAt) -> None:
    with RunHistory(store_at("history.sqlite")) as history:
        history.begin(start("failed", 1.0))
        history.add_part("failed", 0, decided(ANN))
        history.discard("failed")
        assert history.kept("failed").is_empty()
        assert not history.finish("failed", 1, {})  # nothing left to keep


def test_runs_past_the_retention_go_when_a_run_finishes(store_at: StoreAt) -> None:
    clock = Clock()
    with RunHistory(store_at("history.sqlite"), 30, clock) as history:
        for day, run_id in enumerate(("d0", "d20", "d40")):
            clock.at = 1_800_000_000.0 + day * 20 * DAY
            history.begin(start(run_id, clock.at))
            history.add_part(run_id, 0, decided(ANN))
            history.finish(run_id, 1, {})
        assert [r.run_id for r in history.runs("crm")] == ["d20", "d40"]
        assert history.kept("d0").is_empty()


def test_an_erasure_takes_the_address_out_of_every_run(store_at: StoreAt) -> None:
    with RunHistory(store_at("history.sqlite")) as history:
        for at, run_id in ((1.0, "r1"), (2.0, "r2")):
            history.begin(start(run_id, at))
            history.add_part(run_id, 0, decided(ANN, BOB))
            history.finish(run_id, 2, {})
        assert history.forget(["ann@example.org", "nobody@example.org"]) == 2
        for run_id in ("r1", "r2"):
            kept = history.kept(run_id)
            assert kept.get_column(HASH).to_list() == hashes_of([BOB[0]])
        assert [r.addresses for r in history.runs("crm")] == [1, 1]
        assert history.forget(["ann@example.org"]) == 0


@pytest.mark.parametrize("rows", [0, 1, 50_000])
def test_parts_of_any_size_come_back_whole(store_at: StoreAt, rows: int) -> None:
    keys = [f"p{i}@example.org" for i in range(rows)]
    frame = decided(*((k, "Risky", "catch_all;role", 0.5) for k in keys))
    with RunHistory(store_at("history.sqlite")) as history:
        history.begin(start("r1", 1.0))
        history.add_part("r1", 0, frame)
        history.finish("r1", rows, {})
        assert history.kept("r1").equals(frame)


@pytest.mark.parametrize("reasons", [True, False], ids=["with reasons", "without"])
def test_the_last_run_is_read_back_sorted_by_hash_part_by_part(
    store_at: StoreAt, reasons: bool
) -> None:
    """Parts of several sizes, their hashes spread over the whole range: the table a
    comparison holds is every address once, sorted by hash, with REASON only when asked."""
    sizes = [3, 0, 1_000, 17, 2_500]
    with RunHistory(store_at("history.sqlite")) as history:
        history.begin(start("r1", 1.0))
        every = []
        for part, size in enumerate(sizes):
            keys = [f"p{part}-{i}@example.org" for i in range(size)]
            frame = decided(
                *((k, ("Valid", "Risky")[i % 2], f"r{i % 3}", 0.5) for i, k in enumerate(keys))
            )
            history.add_part("r1", part, frame)
            every.append(frame)
        history.finish("r1", sum(sizes), {})
        previous = history.previous(start("r2", 2.0), reasons=reasons)
    assert previous is not None
    table = previous.kept
    expected = pl.concat(every).sort(HASH)
    assert table.get_column(HASH).to_list() == expected.get_column(HASH).to_list()
    assert (
        table.get_column("_BEFORE").cast(pl.String).to_list()
        == expected.get_column("VERDICT").to_list()
    )
    assert ("_REASON_BEFORE" in table.columns) is reasons
    if reasons:
        assert (
            table.get_column("_REASON_BEFORE").cast(pl.String).to_list()
            == expected.get_column("REASON").to_list()
        )
