"""A run tells the truth when it is stopped or its disk fills: SIGINT and SIGTERM at any stage,
a full disk at the report, a full disk under the work folder.

Each fault is placed exactly, from inside the real command (:mod:`tests.hostile.launcher`'s
audit hooks): a signal sent to itself when a given file is opened for writing, renamed or a
module is imported; ``ENOSPC`` for a given file. No sleeps: the same moment every time.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import polars as pl
import pytest

from pipeline.sandbox.files import SANDBOX_SETTINGS
from tests.hostile.cases import Run, csv_text
from tests.hostile.checks import outputs
from tests.hostile.runner import Outcome, execute, snapshot

FIRST = csv_text("email", ("ann@example.com", "bob@example.org"))
SECOND = csv_text("email", ("carl@example.net", "dora@example.com", "bad@@x"))
FILES = outputs("out.parquet")
CODES = {"SIGINT": 130, "SIGTERM": 143}


def _earlier_run(where: Path, cache: Path) -> dict[str, object]:
    """A first, complete run; then the list changes, so that a second run's files would
    differ from these in every byte that matters."""
    where.mkdir()
    (where / "list.csv").write_text(FIRST)
    assert execute(Run("list.csv"), where, cache).code == 0
    (where / "list.csv").write_text(SECOND)
    return dict(snapshot(where))


def _last_line(outcome: Outcome) -> str:
    return outcome.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_before_the_commit_point_publishes_nothing(tmp_path: Path, name: str) -> None:
    """Stopped while the run stages its report (every row decided and written under temporary
    names: the moment when asyncio's own SIGINT handling used to let the run finish)."""
    where, cache = tmp_path / "case", tmp_path / "cache"
    before = _earlier_run(where, cache)
    run = Run("list.csv", faults=("--signal-at", f"open:.out.report.html.*.tmp:{name}"))
    outcome = execute(run, where, cache)
    assert outcome.code == CODES[name], outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert snapshot(where) == before  # the earlier files byte for byte, no temporary file
    last = _last_line(outcome)
    assert f"stopped by {name} before the commit point: no output was written" in last


def test_a_signal_to_a_dask_run_publishes_nothing(tmp_path: Path) -> None:
    """The Dask engine's workers wrote the output's parts and joined them into the file
    (under temporary names beside it); SIGTERM on the driver then cancels the run's tasks,
    and neither the file, the parts nor the shards of the list are left behind."""
    where, cache = tmp_path / "case", tmp_path / "cache"
    before = _earlier_run(where, cache)
    args = ("-o", "out.parquet", "--engine", "dask", "--dask-workers", "1")
    faults = ("--signal-at", "open:.out.report.html.*.tmp:SIGTERM")
    outcome = execute(Run("list.csv", args, faults=faults, timeout=60.0), where, cache)
    assert outcome.code == CODES["SIGTERM"], outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert snapshot(where) == before  # the earlier files byte for byte, no temporary file
    assert "before the commit point: no output was written" in _last_line(outcome)


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_while_starting_is_one_line(tmp_path: Path, name: str) -> None:
    where, cache = tmp_path / "case", tmp_path / "cache"
    before = _earlier_run(where, cache)
    outcome = execute(
        Run("list.csv", faults=("--signal-at", f"import:polars:{name}")), where, cache
    )
    assert outcome.code == CODES[name], outcome.stderr
    assert outcome.stderr.strip().splitlines() == [
        f"listclean: error: stopped by {name} while starting; nothing was done."
    ]
    assert snapshot(where) == before


def test_a_signal_at_the_commit_point_waits_for_every_file(tmp_path: Path) -> None:
    """Once the first file is put in place the others follow: never half a publication."""
    where, cache = tmp_path / "case", tmp_path / "cache"
    before = _earlier_run(where, cache)
    outcome = execute(Run("list.csv", faults=("--signal-at", "rename:.*.tmp:SIGINT")), where, cache)
    assert outcome.code == 130, outcome.stderr
    after = snapshot(where)
    assert sorted(after) == sorted(["list.csv", *FILES])
    assert all(after[name] != before[name] for name in FILES if name != "out.rejects.csv")
    emails = pl.read_parquet(where / "out.parquet").get_column("EMAIL").to_list()
    assert "carl@example.net" in emails  # the second list's answers
    assert "after the commit point: every file was written" in _last_line(outcome)


def test_the_stop_line_is_json_in_a_json_log(tmp_path: Path) -> None:
    where, cache = tmp_path / "case", tmp_path / "cache"
    _earlier_run(where, cache)
    faults = ("--signal-at", "open:.out.report.html.*.tmp:SIGTERM")
    run = Run("list.csv", ("-o", "out.parquet", "--log-format", "json"), faults=faults)
    outcome = execute(run, where, cache)
    records = [json.loads(line) for line in outcome.stderr.strip().splitlines()]
    assert records[-1]["event"] == "interrupted"
    assert (records[-1]["signal"], records[-1]["exit_code"]) == ("SIGTERM", 143)
    assert records[-1]["written"] == []
    assert outcome.code == 143


def test_a_stopped_verify_run_keeps_its_work_folder_and_says_how_to_resume(
    tmp_path: Path,
) -> None:
    where, cache = tmp_path / "case", tmp_path / "cache"
    where.mkdir()
    addresses = ("ashleycarter@fastmail.com", "nobody@fastmail.com")
    (where / "list.csv").write_text(csv_text("email", addresses))
    args = ("-o", "out.parquet", "--verify", "smtp", "--config", str(SANDBOX_SETTINGS))
    faults = ("--signal-at", "open:.out.report.html.*.tmp:SIGINT")
    outcome = execute(Run("list.csv", args, faults=faults), where, cache, ("--sandbox",))
    assert outcome.code == 130, outcome.stderr
    work = where / "out.parquet.work"
    assert (work / "run.sqlite").exists()
    assert f"The work folder {work} keeps the run's place" in _last_line(outcome)
    assert "run the same command again to resume" in _last_line(outcome)
    assert sorted(p.name for p in where.iterdir()) == ["list.csv", "out.parquet.work"]

    again = execute(Run("list.csv", args), where, cache, ("--sandbox",))
    assert again.code == 0, again.stderr
    assert sorted(p.name for p in where.iterdir()) == sorted(["list.csv", *FILES])


def test_a_run_that_needs_no_work_folder_removes_it(tmp_path: Path) -> None:
    where, cache = tmp_path / "case", tmp_path / "cache"
    _earlier_run(where, cache)
    faults = ("--signal-at", "open:.out.report.html.*.tmp:SIGINT")
    outcome = execute(Run("list.csv", faults=faults), where, cache)
    assert outcome.code == 130
    assert not (where / "out.parquet.work").exists()
    assert "work folder" not in _last_line(outcome)


@pytest.mark.parametrize("name", ["out.report.html", "out.summary.json", "out.rejects.csv"])
def test_a_full_disk_at_any_file_replaces_nothing(tmp_path: Path, name: str) -> None:
    where, cache = tmp_path / "case", tmp_path / "cache"
    before = _earlier_run(where, cache)
    faults = ("--no-space-for", f".{name}.*.tmp")
    outcome = execute(Run("list.csv", faults=faults), where, cache)
    assert outcome.code == 2, outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert snapshot(where) == before
    assert f"Cannot write {name}: No space left on device. Nothing was replaced." in (
        outcome.stderr
    )


def test_a_full_disk_under_the_work_folder_names_it(tmp_path: Path) -> None:
    """RLIMIT_FSIZE stands in for a full disk (EFBIG as ENOSPC): the batches set aside
    between the passes go over it first (64 MiB of memory keeps 16 MiB of them)."""
    where, cache = tmp_path / "case", tmp_path / "cache"
    before = _earlier_run(where, cache)
    rows = [f"someone.{i:07d}.{'x' * 40}@example{i % 50}.com" for i in range(260_000)]
    (where / "list.csv").write_text(csv_text("email", tuple(rows)))
    before = dict(snapshot(where))
    run = Run("list.csv", ("-o", "out.parquet", "--memory", "64"), file_size_limit=4 << 20)
    outcome = execute(run, where, cache)
    assert outcome.code == 2, outcome.stderr
    assert "Traceback" not in outcome.stderr
    line = _last_line(outcome)
    assert line.startswith("listclean: error: Cannot write the run's work files in out.parquet.")
    assert ": File too large. Nothing was replaced." in line
    assert "--work-dir" in line
    assert snapshot(where) == before


def test_the_exit_codes_are_the_shells() -> None:
    assert {name: 128 + signal.Signals[name] for name in CODES} == CODES


def _list_of(rows: int) -> str:
    """A list whose every data line has the same length (reversing it keeps its size)."""
    return csv_text("email", tuple(f"person{i:06d}@example{i % 7}.com" for i in range(rows)))


@pytest.mark.parametrize("how", ["rewrite", "truncate", "append"])
def test_an_input_changed_between_the_passes_is_refused(tmp_path: Path, how: str) -> None:
    """Changed in place after the first pass and before the second (a CSV output's file is
    opened then): never rows paired with another version's answers, never a traceback."""
    where, cache = tmp_path / "case", tmp_path / "cache"
    where.mkdir()
    (where / "list.csv").write_text(_list_of(5_000))
    faults = ("--change-at", f".out.csv.*.tmp:list.csv:{how}")
    outcome = execute(Run("list.csv", ("-o", "out.csv"), faults=faults), where, cache)
    assert outcome.code == 2, outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert "The input list.csv changed while it was read" in _last_line(outcome)
    assert "nothing was written" in _last_line(outcome)
    assert sorted(p.name for p in where.iterdir()) == ["list.csv"]


def test_an_input_changed_before_publishing_is_refused(tmp_path: Path) -> None:
    """Changed after the last read, while the run stages its report: the summary's hash and
    row counts would describe another file."""
    where, cache = tmp_path / "case", tmp_path / "cache"
    before = _earlier_run(where, cache)
    (where / "list.csv").write_text(_list_of(50))
    before = dict(snapshot(where))
    faults = ("--change-at", ".out.report.html.*.tmp:list.csv:append")
    outcome = execute(Run("list.csv", faults=faults), where, cache)
    assert outcome.code == 2, outcome.stderr
    assert "changed while it was read (its size went from" in _last_line(outcome)
    assert {name: snapshot(where)[name] for name in FILES} == {n: before[n] for n in FILES}
