"""A run on several cores: batches worked on a pool of threads come back in the list's order,
no more at once than asked, errors raised in their turn; and a run of many batches gives the
same output, summary, changes and history on one core as on two or three, with a bounce
ledger shared by the threads."""

from __future__ import annotations

import json
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.core.config import Config, RunConfig
from pipeline.stages.runner import _in_turn, cores_of, in_order
from tests.stages.test_streaming import ROWS, comparable, messy_list


def test_work_comes_back_in_order_and_no_more_at_once_than_asked() -> None:
    rng = random.Random(3)
    pauses = [rng.uniform(0, 0.004) for _ in range(60)]
    busy, most_seen, lock = 0, 0, threading.Lock()

    def work(i: int) -> int:
        nonlocal busy, most_seen
        with lock:
            busy += 1
            most_seen = max(most_seen, busy)
        time.sleep(pauses[i])
        with lock:
            busy -= 1
        return i * i

    with ThreadPoolExecutor(4) as pool:
        got = list(in_order(pool, work, range(60), 3))
    assert got == [(i, i * i) for i in range(60)]
    assert 1 <= most_seen <= 3


def test_an_error_is_raised_in_its_items_turn_and_what_has_not_begun_is_cancelled() -> None:
    started: list[int] = []

    def work(i: int) -> int:
        started.append(i)
        if i == 5:
            raise ValueError("batch 5 is bad")
        time.sleep(0.001)
        return i

    seen = []
    with ThreadPoolExecutor(2) as pool, pytest.raises(ValueError, match="batch 5"):
        for i, _ in in_order(pool, work, range(1000), 2):
            seen.append(i)
    assert seen == [0, 1, 2, 3, 4]
    assert max(started) < 10  # the items after were never taken, let alone worked on


def test_work_in_turn_keeps_the_order_and_raises_at_the_next_turn() -> None:
    for cores in (1, 2):
        done: list[int] = []
        with _in_turn(cores) as turn:
            for i in range(20):
                turn(done.append, i)
        assert done == list(range(20))

    def fails(i: int) -> None:
        raise OSError(f"disk full at {i}")

    with pytest.raises(OSError, match="disk full at 0"), _in_turn(2) as turn:
        turn(fails, 0)
        turn(fails, 1)


def night(tmp: Path, source: Path, name: str, cores: int, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("LISTCLEAN_RUN_CORES", str(cores))
    out = tmp / f"{name}-{cores}.parquet"
    args = ["clean", str(source), "-o", str(out), "--offline", "--quiet", "--memory", "64"]
    args += ["--cache-dir", str(tmp / f"cache-{cores}"), "--list-name", "crm"]
    args += ["--changes", str(tmp / f"{name}-{cores}.changes.csv")]
    assert main(args) == 0
    summary: dict = json.loads((tmp / f"{name}-{cores}.summary.json").read_text())
    return summary


def test_many_batches_on_one_two_or_three_cores_give_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "list.csv"
    emails = messy_list(source)
    # Hard bounces for some of the list's addresses: the ledger is asked from every thread.
    bounced = sorted({e.strip().lower() for e in emails[:4000] if "@" in e})[:300]
    sent = tmp_path / "bounces.csv"
    lines = ["recipient,bounce_type,smtp_status,bounced_at,diagnostic"]
    lines += [f"{e},hard,5.1.1,2026-11-01T00:00:00Z," for e in bounced]
    sent.write_text("\n".join(lines) + "\n")
    results = {}
    for cores in (1, 2, 3):
        cache = ["--cache-dir", str(tmp_path / f"cache-{cores}")]
        assert main(["bounces", "import", str(sent), *cache]) == 0
        night(tmp_path, source, "first", cores, monkeypatch)
        # The second night's list drops a tenth of the rows: the history has changes to tell.
        second = tmp_path / "second.csv"
        pl.read_csv(source, infer_schema=False).filter(pl.int_range(pl.len()) % 10 != 3).write_csv(
            second
        )
        results[cores] = night(tmp_path, second, "second", cores, monkeypatch)
    one = pl.read_parquet(tmp_path / "second-1.parquet")
    assert one.height == ROWS - ROWS // 10
    assert one.get_column("HAS_KNOWN_BOUNCES").sum() > 0
    assert results[1]["since_last_run"] is not None
    for cores in (2, 3):
        assert comparable(results[cores]) == comparable(results[1])
        since = [dict(results[c]["since_last_run"]) for c in (1, cores)]
        for each in since:
            each.pop("previous_run_at")  # when each core count's own first night ran
        assert since[0] == since[1]
        assert pl.read_parquet(tmp_path / f"second-{cores}.parquet").equals(one)
        changes = [(tmp_path / f"second-{c}.changes.csv").read_text() for c in (1, cores)]
        assert changes[0] == changes[1]


def with_cores(cores: int) -> Any:
    """What cores_of reads of an engine: its settings."""
    return SimpleNamespace(config=Config(run=RunConfig(cores=cores)))


def test_the_cores_a_run_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cores_of(with_cores(3)) == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {5}, raising=False)
    assert cores_of(with_cores(0)) == 1  # a job pinned to one core keeps to it
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert cores_of(with_cores(0)) == 6  # where the system tells no affinity
