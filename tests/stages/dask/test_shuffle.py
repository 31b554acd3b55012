"""The narrow duplicate shuffle of a Dask run, in one process: parts that keep their rows get
back exactly the local engine's DUPLICATE and CONSENT, whatever the parts, the buckets and the
groups the exchange sends their flags back in (its tasks run as they are submitted)."""

from __future__ import annotations

import itertools
import random
from typing import Any

import polars as pl
import pytest

from pipeline.stages.base import Batch
from pipeline.stages.dask import shuffle
from pipeline.stages.dask.shuffle import (
    ROW,
    Exchange,
    counts_of,
    flags_of,
    key_pieces,
    mark_part,
    settle_bucket,
)
from pipeline.stages.steps import held_keys, with_held


def a_list(rows: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    keys = [rng.choice(["", *(f"p{i}@gmail.com" for i in range(rows // 4))]) for _ in range(rows)]
    reasons = [rng.choice([None] * 8 + ["unsubscribed", "cleaned"]) for _ in range(rows)]
    return pl.DataFrame(
        {"KEY": keys, "CONSENT": reasons, ROW: pl.Series(range(rows), dtype=pl.UInt64)}
    )


def now(function: Any, *args: Any, **_: Any) -> Any:
    """A task run as it is submitted: its arguments are already the results."""
    return function(*args)


@pytest.mark.parametrize(
    ("cuts", "buckets", "seed", "group"),
    [
        ([0, 1000], 1, 1, 32),
        ([0, 3, 400, 401, 1000], 3, 2, 2),
        ([0, 250, 500, 750, 1000], 7, 3, 3),
        ([0, 100, 200, 300, 400, 500, 600, 700, 1000], 4, 4, 1),
    ],
)
def test_the_shuffle_marks_as_the_local_engine(
    cuts: list[int], buckets: int, seed: int, group: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shuffle, "BACK_GROUP", group)
    work = a_list(cuts[-1], seed)
    parts = [
        Batch(pl.DataFrame({"n": range(b - a)}), work.slice(a, b - a))
        for a, b in itertools.pairwise(cuts)
    ]
    pieces = [key_pieces(part, p, buckets) for p, part in enumerate(parts)]
    here = Exchange(now, workers=1)
    settled = [settle_bucket(*column) for column in here.to_buckets(pieces, buckets)]
    flags = here.to_parts(here.picked(settled, len(parts), flags_of), len(parts))
    marked = [mark_part(part, f) for part, f in zip(parts, flags, strict=True)]
    got = pl.concat([m.work for m in marked])
    assert got.get_column(ROW).to_list() == list(range(cuts[-1]))  # the parts' own rows, in order
    duplicate = (pl.col("KEY") != "") & ~pl.col("KEY").is_first_distinct()
    expected = with_held(work, held_keys(work)).with_columns(duplicate.alias("DUPLICATE"))
    assert got.select(expected.columns).equals(expected)
    distinct = sum(counts_of(s)[0] for s in settled)
    duplicates = sum(counts_of(s)[1] for s in settled)
    assert (distinct, duplicates) == (
        work.filter(pl.col("KEY") != "").get_column("KEY").n_unique(),
        int(expected.get_column("DUPLICATE").sum()),
    )


def test_the_pieces_carry_each_address_as_its_hash() -> None:
    """What crosses the network is 16 bytes a KEY, never the address."""
    work = a_list(400, 5)
    part = Batch(pl.DataFrame({"n": range(400)}), work)
    pieces = key_pieces(part, 0, 3)
    hashed = pl.Struct({"h1": pl.UInt64, "h2": pl.UInt64})
    assert all(p.schema["KEY"] == hashed for p in pieces)
    assert sum(p.height for p in pieces) == work.filter(pl.col("KEY") != "").height
