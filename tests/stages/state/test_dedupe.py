"""Out-of-core duplicate marking: always the in-memory rule, whatever the partitioning."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest

from pipeline.stages.state.dedupe import (
    DOMAIN_LEVEL,
    KEY_LEVEL,
    DedupeStats,
    DuplicateMarker,
    Hasher,
    partition_of,
    repeated_rows,
)


def in_memory_rule(keys: pl.Series) -> pl.Series:
    """The rule of the whole-list engine: a non-empty KEY seen at an earlier row."""
    key = keys.fill_null("")
    return (key != "") & ~key.is_first_distinct()


def random_keys(count: int, pool: int, seed: int) -> pl.Series:
    """Keys drawn from a small pool (many repeats), with empty and null keys among them.

    Near-twins (other case, a trailing dot, a non-ASCII letter) must stay different addresses.
    """
    rng = random.Random(seed)
    bases = [f"user{i}@domain{i % 37}.example" for i in range(pool)]
    bases += ["Ann@x.example", "ann@x.example", "ann@x.example.", "änn@x.example"]
    values: list[str | None] = []
    for _ in range(count):
        draw = rng.random()
        values.append(None if draw < 0.03 else "" if draw < 0.08 else rng.choice(bases))
    return pl.Series("KEY", values, dtype=pl.String)


def mark(
    keys: pl.Series, batches: Sequence[int], work_dir: Path, **options: object
) -> tuple[DedupeStats, pl.Series]:
    """Feed *keys* in batches of the given sizes; read the flags back batch by batch."""
    assert sum(batches) == len(keys)
    with DuplicateMarker(work_dir, **options) as marker:  # type: ignore[arg-type]
        offset = 0
        for size in batches:
            marker.add(keys.slice(offset, size))
            offset += size
        stats = marker.finish()
        parts, offset = [], 0
        for size in batches:
            parts.append(marker.flags(offset, size))
            offset += size
    return stats, pl.concat(parts) if parts else pl.Series(dtype=pl.Boolean)


def expected_stats(keys: pl.Series) -> DedupeStats:
    keyed = keys.fill_null("").filter(keys.fill_null("") != "")
    duplicates = int(in_memory_rule(keys).sum())
    return DedupeStats(rows=len(keys), distinct=keyed.n_unique(), duplicates=duplicates)


def uneven_batches(total: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    sizes = [0]  # an empty batch first
    while sum(sizes) < total:
        sizes.append(min(rng.choice((0, 1, 17, 500, 4096, 9000)), total - sum(sizes)))
    return [*sizes, 0]


@pytest.mark.parametrize(
    ("partitions", "max_partition_rows"),
    [(1, 10**9), (7, 10**9), (64, 10**9), (4, 300), (1, 1000)],
    ids=["one-partition", "seven", "many", "split-small-files", "one-partition-split"],
)
def test_marks_exactly_what_the_in_memory_rule_marks(
    tmp_path: Path, partitions: int, max_partition_rows: int
) -> None:
    keys = random_keys(40_000, pool=6_000, seed=partitions)
    stats, flags = mark(
        keys,
        uneven_batches(len(keys), seed=1),
        tmp_path,
        partitions=partitions,
        max_partition_rows=max_partition_rows,
    )
    assert flags.to_list() == in_memory_rule(keys).to_list()
    assert stats == expected_stats(keys)
    assert stats.duplicates > 10_000  # the case is not trivial


@pytest.mark.parametrize(("rows", "batch"), [(2_000, 1), (40_000, 999), (40_000, 40_000)])
def test_batch_size_does_not_matter(tmp_path: Path, rows: int, batch: int) -> None:
    keys = random_keys(rows, pool=rows // 2, seed=2)
    sizes = [min(batch, len(keys) - start) for start in range(0, len(keys), batch)]
    _, flags = mark(keys, sizes, tmp_path, partitions=16)
    assert flags.to_list() == in_memory_rule(keys).to_list()


@pytest.mark.parametrize("compression", ["lz4", "zstd"])
def test_compressed_spill_files(tmp_path: Path, compression: str) -> None:
    keys = random_keys(20_000, pool=5_000, seed=7)
    _, flags = mark(
        keys,
        [7_000, 13_000],
        tmp_path,
        partitions=8,
        max_partition_rows=900,
        compression=compression,
    )
    assert flags.to_list() == in_memory_rule(keys).to_list()


def constant(values: pl.Series, seed: int) -> pl.Series:
    return pl.repeat(0, len(values), dtype=pl.UInt64, eager=True)


def by_length(values: pl.Series, seed: int) -> pl.Series:
    return values.str.len_bytes().cast(pl.UInt64)


@pytest.mark.parametrize("hasher", [constant, by_length], ids=["constant", "length"])
@pytest.mark.parametrize("max_partition_rows", [10**9, 100])
def test_hash_collisions_never_make_a_duplicate(
    tmp_path: Path, hasher: Hasher, max_partition_rows: int
) -> None:
    # Every key collides with many others: only the exact comparison of the strings separates
    # them (and with small files the splitting gives up at its last level, still exact).
    keys = random_keys(5_000, pool=2_000, seed=3)
    stats, flags = mark(
        keys,
        [1_000, 0, 4_000],
        tmp_path,
        partitions=8,
        max_partition_rows=max_partition_rows,
        hasher=hasher,
    )
    assert flags.to_list() == in_memory_rule(keys).to_list()
    assert stats == expected_stats(keys)


def test_colliding_twins_are_told_apart() -> None:
    frame = pl.DataFrame(
        {
            "ROW": pl.Series([5, 1, 3, 2, 4, 0], dtype=pl.UInt64),
            "KEY": ["b@x", "a@x", "a@x", "b@x", "c@x", "b@x"],
        }
    )
    assert sorted(repeated_rows(frame, constant).to_list()) == [2, 3, 5]
    assert sorted(repeated_rows(frame).to_list()) == [2, 3, 5]


def test_one_address_repeated_across_many_files(tmp_path: Path) -> None:
    # A single address as most of the list: splitting cannot spread it, the folding of
    # repeats inside each chunk shrinks it instead.
    keys = pl.Series("KEY", ["same@x.example"] * 30_000 + ["other@x.example", ""] * 500)
    stats, flags = mark(keys, [10_000, 21_000], tmp_path, partitions=2, max_partition_rows=1_000)
    assert flags.to_list() == in_memory_rule(keys).to_list()
    assert stats == DedupeStats(rows=31_000, distinct=2, duplicates=30_498)


def test_partitioned_run_with_global_row_numbers(tmp_path: Path) -> None:
    """A partitioned run: the list split by DOMAIN, each part marked alone, rows shuffled."""
    keys = random_keys(30_000, pool=3_000, seed=4)
    frame = pl.DataFrame({"ROW": pl.int_range(0, len(keys), dtype=pl.UInt64, eager=True)})
    frame = frame.with_columns(KEY=keys.fill_null(""))
    frame = frame.with_columns(DOMAIN=pl.col("KEY").str.extract(r"@([^@]*)$").fill_null(""))
    frame = frame.with_columns(partition_of(frame.get_column("DOMAIN"), 5, level=DOMAIN_LEVEL))
    flags = pl.repeat(False, len(keys), dtype=pl.Boolean, eager=True)
    for index, part in enumerate(frame.partition_by("PARTITION")):
        part = part.sample(fraction=1.0, shuffle=True, seed=index)
        with DuplicateMarker(tmp_path, partitions=3, max_partition_rows=700) as marker:
            for chunk in part.iter_slices(2_500):
                marker.add(chunk.get_column("KEY"), rows=chunk.get_column("ROW"))
            marker.finish()
            found = marker.flags_at(part.get_column("ROW"))
        flags = flags.scatter(part.get_column("ROW").filter(found), True)
    assert flags.to_list() == in_memory_rule(keys).to_list()


def test_partition_function_is_stable_and_spreads_evenly() -> None:
    values = pl.Series([f"user{i}@domain{i % 997}.example" for i in range(64_000)])
    first = partition_of(values, 16, level=KEY_LEVEL)
    assert first.dtype == pl.UInt32
    assert first.equals(partition_of(values.clone(), 16, level=KEY_LEVEL))
    counts = first.value_counts().get_column("count")
    assert counts.len() == 16 and counts.min() > 3_500 and counts.max() < 4_500  # type: ignore[operator]
    # Keys that share a domain partition still spread over the next level's partitions.
    domains = values.str.extract(r"@(.*)$")
    inside = values.filter(partition_of(domains, 4, level=DOMAIN_LEVEL) == 0)
    assert partition_of(inside, 4, level=KEY_LEVEL).n_unique() == 4


def test_only_its_own_files_are_created_and_all_are_removed(tmp_path: Path) -> None:
    keep = tmp_path / "run.sqlite"
    keep.write_text("the run's own state")
    other = DuplicateMarker(tmp_path, partitions=4)  # a second marker in the same directory
    before = sorted(p.name for p in tmp_path.iterdir())
    marker = DuplicateMarker(tmp_path, partitions=4)
    marker.add(random_keys(5_000, pool=500, seed=5))
    spilled = [p for p in tmp_path.rglob("*.arrow")]
    assert spilled and all(p.parent.parent.name.startswith("dedupe-") for p in spilled)
    marker.finish()
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert marker.flags(0, 5_000).sum() > 0  # flags outlive the files
    other.close()
    assert [p.name for p in tmp_path.iterdir()] == [keep.name]


def test_an_abandoned_marker_removes_its_files(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), DuplicateMarker(tmp_path) as marker:
        marker.add(random_keys(1_000, pool=100, seed=6))
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_misuse_is_refused(tmp_path: Path) -> None:
    marker = DuplicateMarker(tmp_path, partitions=2)
    marker.add(pl.Series(["a@x", "a@x"]))
    with pytest.raises(RuntimeError, match="finish"):
        marker.flags(0, 2)
    with pytest.raises(ValueError, match="2 keys but 1 row"):
        marker.add(pl.Series(["a@x", "b@x"]), rows=pl.Series([7]))
    assert marker.finish() == DedupeStats(rows=2, distinct=1, duplicates=1)
    with pytest.raises(RuntimeError, match="after finish"):
        marker.add(pl.Series(["b@x"]))
    with pytest.raises(ValueError, match="outside the 2 rows"):
        marker.flags(1, 2)
    with pytest.raises(ValueError, match="partitions"):
        DuplicateMarker(tmp_path, partitions=0)


def test_an_empty_list(tmp_path: Path) -> None:
    stats, flags = mark(pl.Series("KEY", [], dtype=pl.String), [0, 0], tmp_path)
    assert stats == DedupeStats(rows=0, distinct=0, duplicates=0)
    assert flags.len() == 0
    assert list(tmp_path.iterdir()) == []
