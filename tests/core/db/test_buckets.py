"""The bucketed table on shared storage: a local folder, and a real S3 server (moto's) on
loopback; latest answers win, counters add up, tombstones hold, expired rows go, and a bucket of
many segments is joined into one without losing a row written meanwhile."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from pipeline.core.config import StorageConfig
from pipeline.core.db.buckets import BUCKETS, BucketTable, Shelf, bucket_of
from pipeline.stages.objects import filesystem
from tests.stages.test_objects import BUCKET, s3, s3_endpoint  # noqa: F401 (fixtures)

VALUES = {"status": pl.String, "expires_at": pl.Float64}


def answers(shelf: Shelf, now: float = 1_000.0) -> BucketTable:
    return BucketTable(shelf, "answers", ("domain",), VALUES, clock=lambda: now)


def rows(**found: tuple[str, float]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "domain": list(found),
            "status": [s for s, _ in found.values()],
            "expires_at": [e for _, e in found.values()],
        }
    )


@pytest.fixture(params=["local", "s3"])
def shelf(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Shelf]:
    if request.param == "local":
        yield Shelf(str(tmp_path / "shared"))
        return
    endpoint: str = request.getfixturevalue("s3_endpoint")
    request.getfixturevalue("s3")
    yield Shelf(f"s3://{BUCKET}/caches", filesystem("s3://x", StorageConfig(endpoint)))


def test_the_latest_answer_wins_and_expired_ones_go(shelf: Shelf) -> None:
    table = answers(shelf)
    table.put(rows(**{"a.com": ("mx", 2_000.0), "b.com": ("no_domain", 2_000.0)}))
    table.put(rows(**{"a.com": ("servfail", 1_500.0), "c.com": ("mx", 900.0)}))
    found = table.get(["a.com", "b.com", "c.com", "d.com"]).sort("domain")
    assert found.rows() == [("a.com", "servfail", 1_500.0), ("b.com", "no_domain", 2_000.0)]
    assert answers(shelf, now=1_600.0).get(["a.com"]).is_empty()  # a.com's latest expired
    assert sorted(table.rows().get_column("domain")) == ["a.com", "b.com"]


def test_counters_add_up_and_tombstones_hold(shelf: Shelf) -> None:
    spent = BucketTable(shelf, "spent", ("api", "window"), {"n": pl.Int64}, combine="sum")
    for n in (3, 4):
        spent.put(pl.DataFrame({"api": ["x"], "window": ["2026-11"], "n": [n]}))
    assert spent.get(["x"]).rows() == [("x", "2026-11", 7)]
    table = answers(shelf)
    table.put(rows(**{"a.com": ("mx", 2_000.0), "b.com": ("mx", 2_000.0)}))
    table.delete(["a.com"])
    assert table.get(["a.com", "b.com"]).get_column("domain").to_list() == ["b.com"]
    table.put(rows(**{"a.com": ("mx", 2_000.0)}))  # learned again after it was forgotten
    assert table.get(["a.com"]).height == 1


def segments(shelf: Shelf) -> dict[str, int]:
    """The table's segments per folder (a bucket's, or the mixed ones)."""
    table = shelf / "answers"
    return {name: len((table / name).names()) for name in table.names()}


def test_many_segments_are_moved_and_joined(shelf: Shelf) -> None:
    table = answers(shelf)
    same = next(f"s{i}.example" for i in range(100) if bucket_of([f"s{i}.example"]) == [0])
    for i in range(20):  # rows of several buckets: one mixed segment each
        table.put(rows(**{same: (f"s{i}", 2_000.0), f"d{i}.example": ("mx", 2_000.0)}))
    assert segments(shelf)["mixed"] == 20
    first = table.rows().sort("domain")
    assert "mixed" not in segments(shelf) or segments(shelf)["mixed"] == 0
    assert first.height == 21
    assert first.filter(pl.col("domain") == same)["status"].item() == "s19"
    for i in range(20):  # rows of one bucket: in its folder
        table.put(rows(**{same: (f"t{i}", 2_000.0)}))
    assert segments(shelf)["00"] >= 20
    assert table.get([same])["status"].item() == "t19"
    assert segments(shelf)["00"] == 1  # joined by the reader
    assert table.rows().height == 21


def _writer(root: str, worker: int) -> None:
    table = BucketTable(Shelf(root), "answers", ("domain",), VALUES, clock=lambda: 1_000.0)
    for i in range(30):
        table.put(rows(**{f"w{worker}-{i}.example": ("mx", 2_000.0)}))
        table.rows([bucket_of([f"w{worker}-{i}.example"])[0]])  # readers join as they go


def test_writers_and_joiners_in_several_processes_lose_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "shared")
    spawn = multiprocessing.get_context("spawn")
    workers = [spawn.Process(target=_writer, args=(root, w)) for w in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    assert answers(Shelf(root)).rows().height == 90
    assert len(list((tmp_path / "shared" / "answers").iterdir())) <= BUCKETS + 1  # and mixed
