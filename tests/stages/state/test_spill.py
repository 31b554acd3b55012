"""The spill: work columns set aside between the passes come back as they went, compressed or
not, and the disk's free space decides which; a short list's read batches are kept whole for
the second pass, a longer one's not at all."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline.stages.state.spill import Compression, ReadOnce, Spill, compression_for


def work_columns(rows: int) -> pl.DataFrame:
    """A batch's work columns as normalizing leaves them: text (some of it not ASCII), nulls,
    flags."""
    return pl.DataFrame(
        {
            "EMAIL": [f"person{i}@exämple{i % 7}.com" if i % 11 else "" for i in range(rows)],
            "DOMAIN": [f"exämple{i % 7}.com" if i % 11 else "" for i in range(rows)],
            "SYNTAX": ["ok" if i % 11 else "empty" for i in range(rows)],
            "ROLE": [i % 5 == 0 for i in range(rows)],
            "CONSENT": [None if i % 3 else "unsubscribed" for i in range(rows)],
        },
        schema_overrides={"CONSENT": pl.String},
    )


def rows_for(compression: Compression) -> int:
    """A list's rows for which a spill chooses *compression*: one row fits any disk plain; the
    spill of a trillion rows fits none."""
    return 1 if compression == "uncompressed" else 10**12


@pytest.mark.parametrize("compression", ["lz4", "uncompressed"])
def test_a_batch_on_disk_comes_back_as_it_went(tmp_path: Path, compression: Compression) -> None:
    first = work_columns(5_000)
    spill = Spill(tmp_path, keep_bytes=0, rows=rows_for(compression))  # nothing in memory
    batches = [first, work_columns(3), work_columns(0)]
    for index, work in enumerate(batches):
        spill.put(index, work)
    assert spill._compression == compression
    assert len(list(tmp_path.glob("*.arrow"))) == 2  # the empty batch costs no memory
    for index, work in enumerate(batches):
        back = spill.work(index)
        assert back.schema == work.schema
        assert back.equals(work)
        spill.drop(index)
    assert list(tmp_path.glob("*.arrow")) == []


def test_lz4_spill_files_are_smaller(tmp_path: Path) -> None:
    sizes = {}
    work = work_columns(20_000)
    for compression in ("lz4", "uncompressed"):
        folder = tmp_path / compression
        folder.mkdir()
        Spill(folder, keep_bytes=0, rows=rows_for(compression)).put(0, work)
        sizes[compression] = sum(p.stat().st_size for p in folder.iterdir())
    assert sizes["lz4"] * 2 < sizes["uncompressed"]


def test_what_fits_the_budget_stays_in_memory(tmp_path: Path) -> None:
    spill = Spill(tmp_path, keep_bytes=10**9)
    work = work_columns(1_000)
    spill.put(0, work)
    assert list(tmp_path.iterdir()) == []
    assert spill.work(0) is work


def test_the_free_space_decides_the_compression(tmp_path: Path) -> None:
    work = work_columns(1_000)
    free = shutil.disk_usage(tmp_path).free
    per_row = work.estimated_size() / work.height
    # A plain spill takes about twice the frames' size; three times that must be free.
    fits = int(free / (2 * 3 * per_row))
    assert compression_for(tmp_path, work, fits // 2) == "uncompressed"
    assert compression_for(tmp_path, work, fits * 2) == "lz4"
    assert compression_for(tmp_path, work, 0) == "uncompressed"  # the batch itself, at least


def test_read_batches_that_all_fit_come_back_in_order() -> None:
    batches = [work_columns(100 + i) for i in range(5)]
    once = ReadOnce(sum(int(b.estimated_size()) for b in batches))
    for batch in batches:
        once.add(batch)
    assert once.whole
    assert [b.height for b in once.take()] == [100, 101, 102, 103, 104]
    assert not once.whole  # taken: nothing is held any more


def test_one_read_batch_over_the_budget_lets_go_of_all() -> None:
    batches = [work_columns(100) for _ in range(4)]
    once = ReadOnce(int(batches[0].estimated_size()) * 3)
    for batch in batches[:3]:
        once.add(batch)
    assert once.whole
    once.add(batches[3])
    assert not once.whole
    once.add(batches[0])  # later batches are not kept either
    assert not once.whole and list(once.take()) == []
