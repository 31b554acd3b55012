"""The share-out's plan on a cluster with answers due again: from the key buckets' tallies
alone, the driver reaches the addresses the local engine's order reaches (the never answered
first, then the due ones, domain by domain, the oldest first), and a due answer the budget
does not reach is shown with its age, as the local engine shows it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.core.config import BouncesConfig, CacheConfig, VendorConfig, VerifyConfig
from pipeline.core.db.buckets import Shelf
from pipeline.core.mailboxes.cache import MailboxBuckets
from pipeline.core.mailboxes.step import allocate, cut, probe_order, refresh_order
from pipeline.core.mailboxes.types import Budget, Mailbox, MailboxResult
from pipeline.stages.dask.checks.plan import (
    Method,
    as_targets,
    fixed,
    rank,
    settle,
    tally,
    targets_of,
)
from pipeline.stages.dask.checks.spread import _Method, _refresh, _runs
from pipeline.stages.dask.shuffle import ROW
from pipeline.stages.dask.stores import Stores

DAY = 86400.0
NOW = time.time()  # the stores' clock on the workers: the real one
VERIFY = VerifyConfig(ttl_good=int(30 * DAY), ttl_floor=1.0)

# (address, days since its answer was learned; None: never answered, 0: fresh)
ADDRESSES = [
    ("a1@big.org", None),
    ("a2@big.org", 40),
    ("a3@big.org", 35),
    ("b1@small.org", 50),
    ("a4@big.org", None),
    ("b2@small.org", None),
    ("a5@big.org", 0),
    ("c1@other.org", 45),
    ("c2@other.org", 60),
    ("a6@big.org", 38),
]


class _Done:
    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self) -> Any:
        return self._value


class _Here:
    """A run's place on the cluster whose tasks run at once, here."""

    size = 1
    topic = "test"

    def __init__(self, stores: Stores) -> None:
        self.stores = stores

    def submit(self, function: Any, *args: Any) -> _Done:
        return _Done(function(*(a.result() if isinstance(a, _Done) else a for a in args)))

    def gather(self, futures: list[_Done]) -> list[Any]:
        return [f.result() for f in futures]


def _rows() -> pl.DataFrame:
    n = len(ADDRESSES)
    keys = [a for a, _ in ADDRESSES]
    return pl.DataFrame(
        {
            "KEY": keys,
            "EMAIL": keys,
            "DOMAIN": [a.split("@")[1] for a in keys],
            "DNS_STATUS": ["mx"] * n,
            "MX": [f"mx.{a.split('@')[1]}" for a in keys],
            "SYNTAX": ["ok"] * n,
            ROW: list(range(n)),
            "_good": [True] * n,
            "LEDGER_KNOWN": [False] * n,
            "LEDGER_DELIVERED": [False] * n,
        }
    )


def _stores(tmp_path: Path) -> Stores:
    shelf = Shelf(str(tmp_path / "shelf"))
    for address, days in ADDRESSES:
        if days is None:
            continue
        learned = NOW - days * DAY

        def clock(at: float = learned) -> float:
            return at

        MailboxBuckets(shelf, VERIFY, clock).put(address, MailboxResult(Mailbox.OK, "250 ok"))
    MailboxBuckets(shelf, VERIFY).put_catch_all({"big.org": False, "small.org": False})
    return Stores(
        "run", shelf, "", "", "", "", False, CacheConfig(), VERIFY, VendorConfig(), BouncesConfig()
    )


def _local_order(budget: int) -> tuple[list[str], list[str]]:
    """The local engine's reached and skipped addresses at *budget*, from the same answers."""
    rows = _rows().with_columns(
        pl.lit(False).alias("DUPLICATE"),
        pl.lit(False).alias("DISPOSABLE"),
        pl.lit("").alias("SUGGESTED_DOMAIN"),
    )
    learned = {a: NOW - d * DAY for a, d in ADDRESSES if d}
    fresh = [a for a, d in ADDRESSES if d == 0]
    targets, _ = refresh_order(probe_order(rows), fresh, learned)
    known = {"big.org", "small.org"}
    reached, skipped = allocate(targets, Budget(budget), known)
    return [t.key for t in reached], [t.key for t in skipped]


@pytest.mark.parametrize("budget", [2, 4, 6, 9, 20])
def test_the_driver_reaches_what_the_local_order_reaches(tmp_path: Path, budget: int) -> None:
    stores = _stores(tmp_path)
    rows = _rows()
    method = Method("smtp", "smtp")
    here = _Here(stores)
    # Two key buckets, each with some of every domain (one group of one part's piece).
    grid = [[[rows.filter(pl.col(ROW) % 2 == b)]] for b in range(2)]
    planned = _Method(here, None, method, grid)  # type: ignore[arg-type]
    settled = [s.result() for s in planned.settled]
    ranked = rank(method, stores, *(tally(s) for s in settled))
    known = set(ranked.filter("_known").get_column("DOMAIN").to_list())
    # The catch-all probe of other.org (not known) costs one more, as in the local engine.
    taken = cut(_runs(ranked), budget, known)
    reach = planned._reach(ranked, [taken], {})
    pieces = tuple(targets_of(s, reach, 1)[0] for s in settled)
    reached = [t.key for t in as_targets(pieces)[1]]
    expected, skipped = _local_order(budget)
    assert reached == expected
    refresh = _refresh(ranked, taken, Budget(budget))
    due = [a for a, d in ADDRESSES if d and d > 30]
    assert refresh.due == len(due) and refresh.refreshed == len(set(due) & set(reached))
    shown = pl.concat([fixed(s, reach, method) for s in settled])
    for key in skipped:
        reply = shown.filter(pl.col("KEY") == key).get_column("MAILBOX_REPLY").item()
        if key in due:  # kept, with its age
            assert "due again, and this run's budget did not refresh it" in reply
        else:
            assert reply == "the run's RCPT budget is spent"


def test_a_bucket_settled_again_counts_this_run_s_answers_as_open(tmp_path: Path) -> None:
    """A bucket settled again after a lost worker plans the targets it planned the first
    time: the answers the run's owners committed since the driver planned are still open (the
    owner run again finds them answered), while the answers of earlier runs stay answered."""
    stores = _stores(tmp_path)
    rows = _rows()
    method = Method("smtp", "smtp")
    first = settle(method, stores, time.time(), [rows])
    planned = time.time()
    learned = [a for a, d in ADDRESSES if d is None]  # this run's owners answer these
    for address in learned:
        MailboxBuckets(stores.shelf, VERIFY).put(address, MailboxResult(Mailbox.OK, "250 ok"))
    again = settle(method, stores, planned, [rows])
    assert again.rows.equals(first.rows) and again.cached.equals(first.cached)
    later = settle(method, stores, time.time() + 1, [rows])  # a later run: they are answered
    answered = set(later.cached.get_column("KEY").to_list())
    assert set(learned) <= answered and not set(learned) & set(
        first.cached.get_column("KEY").to_list()
    )
