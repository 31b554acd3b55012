"""The exchange between a Dask run's parts and its buckets, in one process (each task runs as
it is submitted): every bucket gets every part's piece of it, in input order; every part gets
its item from every bucket, in bucket order; the groups of the way back spread over the
workers; and that way's tasks grow with parts times buckets divided by the group."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.stages.dask import shuffle
from pipeline.stages.dask.shuffle import Exchange, pieces_of


class Counted:
    """A submitter that runs each task at once and counts them."""

    def __init__(self) -> None:
        self.tasks = 0

    def __call__(self, function: Any, *args: Any, **_: Any) -> Any:
        self.tasks += 1
        return function(*args)


@pytest.mark.parametrize(("parts", "buckets"), [(0, 1), (1, 1), (5, 3), (33, 2), (70, 9)])
@pytest.mark.parametrize(("group", "workers"), [(1, 1), (4, 1), (32, 1), (32, 3)])
def test_each_bucket_gets_every_part_s_piece_in_order(
    parts: int, buckets: int, group: int, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shuffle, "BACK_GROUP", group)
    here = Exchange(Counted(), workers)
    sources = [[f"p{p}b{b}" for b in range(buckets)] for p in range(parts)]
    columns = here.to_buckets(sources, buckets)
    assert [pieces_of(column) for column in columns] == [
        [f"p{p}b{b}" for p in range(parts)] for b in range(buckets)
    ]
    answers = [f"answer{b}" for b in range(buckets)]
    shares = here.to_parts(here.picked(answers, parts, lambda a, p: f"{a}:p{p}"), parts)
    assert shares == [[f"answer{b}:p{p}" for b in range(buckets)] for p in range(parts)]


@pytest.mark.parametrize(
    ("parts", "workers", "groups"), [(10, 2, 5), (30, 2, 8), (78, 2, 10), (390, 2, 49)]
)
def test_the_groups_spread_over_the_workers(
    parts: int, workers: int, groups: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With groups of up to 8 parts: about four groups a worker while the parts allow (each
    group's tasks run where its answers are), else groups of at most 8 parts."""
    made = Exchange(Counted(), workers).groups_of(parts, 8)
    assert len(made) == groups
    assert [p for group in made for p in group] == list(range(parts))


@pytest.mark.parametrize("back", [1, 8])
def test_the_tasks_grow_with_parts_times_buckets_divided_by_the_group(
    back: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shuffle, "BACK_GROUP", back)
    submit = Counted()
    here = Exchange(submit, workers=2)
    parts, buckets = 390, 25  # 50 million rows of the bench: 128,000-row parts, 2M-row buckets
    sources = [[None] * buckets for _ in range(parts)]
    here.to_buckets(sources, buckets)
    assert submit.tasks == parts * buckets  # 9,750: each bucket takes each part's piece
    submit.tasks = 0
    here.to_parts(here.picked([None] * buckets, parts, lambda a, p: a), parts)
    groups = -(-parts // back)
    assert submit.tasks == buckets * groups + groups + parts  # 1,664 in groups of 8
