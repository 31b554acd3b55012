"""The address step's rules on domains: the share-out of the budget over runs of one domain
(the same addresses as one target at a time), and what each reached domain may spend."""

from __future__ import annotations

import random

import pytest

from pipeline.core.domains.dns import DnsStatus
from pipeline.core.mailboxes.step import allocate, allowances, cut, runs_of
from pipeline.core.mailboxes.types import Budget, Target


def one_at_a_time(targets: list[Target], left: int | None, known: set[str]) -> int:
    """The share-out as a walk over the targets: how many the budget reaches."""
    if left is None:
        return len(targets)
    counted = set(known)
    for i, target in enumerate(targets):
        cost = 1 + (target.domain not in counted)
        if cost > left:
            return i
        left -= cost
        counted.add(target.domain)
    return len(targets)


def targets_of(domains: list[str]) -> list[Target]:
    return [Target(f"u{i}@{d}", f"u{i}@{d}", d, DnsStatus.MX) for i, d in enumerate(domains)]


@pytest.mark.parametrize("seed", range(200))
def test_the_cut_over_runs_reaches_what_a_walk_over_targets_reaches(seed: int) -> None:
    rng = random.Random(seed)
    domains = [f"d{rng.randrange(6)}.example" for _ in range(rng.randrange(0, 40))]
    domains.sort(key=lambda d: rng.random() if seed % 3 == 0 else d)  # runs, or scattered
    targets = targets_of(domains)
    known = {d for d in set(domains) if rng.random() < 0.3}
    left = None if seed % 17 == 0 else rng.randrange(0, 50)
    reached, skipped = allocate(targets, Budget(left), known)
    assert len(reached) == one_at_a_time(targets, left, known)
    assert reached + skipped == targets


def test_a_run_of_none_is_skipped_without_ending_the_cut() -> None:
    runs = [("a.example", 2), ("cached.example", 0), ("b.example", 3)]
    assert cut(runs, 7, set()) == [2, 0, 3]
    assert cut(runs, 6, set()) == [2, 0, 2]
    assert cut(runs, 4, {"b.example"}) == [2, 0, 1]


def test_allowances_give_each_domain_its_cost_and_a_share_of_the_rest() -> None:
    reached = runs_of(targets_of(["a.example"] * 4 + ["b.example"] * 2))
    assert reached == [("a.example", 4), ("b.example", 2)]
    assert allowances(reached, None, set()) is None
    assert allowances(reached, 8, set()) == {"a.example": 5, "b.example": 3}
    assert allowances(reached, 8, {"b.example"}) == {"a.example": 6, "b.example": 2}
    # 7 more to share over costs 5 and 3: 4 and 2 by proportion, the one left to the first.
    assert allowances(reached, 15, set()) == {"a.example": 10, "b.example": 5}
    assert sum(allowances(reached, 15, set()).values()) == 15  # type: ignore[union-attr]
