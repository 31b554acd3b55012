"""A run tells the truth when it is stopped or its disk fills: SIGINT and SIGTERM at any stage,
a full disk at the report, a full disk under the work folder.

Each fault is placed exactly, from inside the real command (:mod:`tests.hostile.launcher`'s
audit hooks): a signal sent to itself when a given file is opened for writing, renamed or a
module is imported; ``ENOSPC`` for a given file. No sleeps: the same moment every time.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import types
from pathlib import Path

import polars as pl
import pytest

from pipeline.sandbox.files import SANDBOX_SETTINGS
from pipeline.stages.signals import Interrupted, interruption
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


# Modules the clean command imports as it starts, in the order it does: reading its arguments
# (argparse, the parser's declarations, the settings' classes), then its own module, polars and
# pyarrow; each with a signal.
STARTING = (
    ("argparse", "SIGINT"),
    ("pipeline.cli.commands", "SIGTERM"),
    ("pipeline.core.config.tables", "SIGINT"),
    ("pipeline.cli.lists", "SIGTERM"),
    ("polars", "SIGINT"),
    ("polars", "SIGTERM"),
    ("pyarrow", "SIGINT"),
)


@pytest.mark.parametrize(("module", "name"), STARTING)
def test_a_signal_at_any_import_of_the_start_is_one_line(
    tmp_path: Path, module: str, name: str
) -> None:
    """The signal is sent as *module* is imported: however far the start has come, the command
    says so in one line."""
    where, cache = tmp_path / "case", tmp_path / "cache"
    before = _earlier_run(where, cache)
    outcome = execute(
        Run("list.csv", faults=("--signal-at", f"import:{module}:{name}")), where, cache
    )
    assert outcome.code == CODES[name], outcome.stderr
    assert outcome.stderr.strip().splitlines() == [
        f"listclean: error: stopped by {name} while starting; nothing was done."
    ]
    assert snapshot(where) == before


class _SignalOnNaming:
    """A class attribute that sends *signum* to the process as its class is made: the moment
    Python wraps what a handler raises in a RuntimeError (``__set_name__``)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __set_name__(self, owner: type, name: str) -> None:
        signal.raise_signal(self.signum)


def _class_made_with(signum: int) -> type:
    class Made:
        attribute = _SignalOnNaming(signum)

    return Made


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_while_a_class_is_made_at_the_start_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """The command's module makes a class as it is imported (a dataclass, say) when the signal
    comes: the start ends first, then the command stops as for any signal while starting."""
    from pipeline.cli import commands, main

    def lists() -> object:
        _class_made_with(signal.Signals[name])
        raise AssertionError("the start goes on to its end before the signal is raised")

    monkeypatch.setattr(commands, "_lists", lists)
    with pytest.raises(AssertionError, match="goes on to its end"):
        main(["clean", "list.csv", "--offline"])

    def lists_made() -> object:
        _class_made_with(signal.Signals[name])
        return types.SimpleNamespace(command_clean=lambda args: 0)

    monkeypatch.setattr(commands, "_lists", lists_made)
    assert main(["clean", "list.csv", "--offline"]) == CODES[name]
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"listclean: error: stopped by {name} while starting; nothing was done."
    )


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_while_a_class_is_made_in_the_run_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """Python hides the signal in a RuntimeError raised from it; the command still says it was
    stopped, with the signal's exit code."""
    from pipeline.cli import commands, main

    def run(args: object) -> int:
        _class_made_with(signal.Signals[name])
        return 0

    monkeypatch.setattr(commands, "_lists", lambda: types.SimpleNamespace(command_clean=run))
    assert main(["clean", "list.csv", "--offline"]) == CODES[name]
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"listclean: error: stopped by {name}."


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_after_the_commit_point_says_every_file_was_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:
    """Once the files are in place the command may still be at work (the history kept, the
    summary printed): a signal then says what was written, not that nothing was."""
    from pipeline.cli import commands, main
    from pipeline.stages.write.publish import Publication

    out = tmp_path / "out.csv"

    def run(args: object) -> int:
        with Publication() as publication:
            publication.write_text(out, "email\n")
            publication.commit()
        signal.raise_signal(signal.Signals[name])
        raise AssertionError("the signal is raised on the spot")

    monkeypatch.setattr(commands, "_lists", lambda: types.SimpleNamespace(command_clean=run))
    assert main(["clean", "list.csv", "--offline"]) == CODES[name]
    assert out.read_text() == "email\n"
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"listclean: error: stopped by {name} after the commit point: every file was written "
        f"({out})."
    )


EXITING = """
import atexit, os, signal, sys
from pipeline.cli import command
atexit.register(os.kill, os.getpid(), signal.{name})
sys.argv = ["listclean", *{argv!r}]
command()
"""


@pytest.mark.parametrize(
    ("name", "argv", "code"),
    [
        ("SIGTERM", ["clean", "list.csv", "-o", "out.parquet", "--offline", "--quiet"], 0),
        ("SIGINT", ["clean", "missing.csv", "-o", "out.parquet", "--offline"], 2),
        ("SIGTERM", ["--version"], 0),
    ],
)
def test_a_signal_as_the_program_ends_keeps_its_exit_code(
    tmp_path: Path, name: str, argv: list[str], code: int
) -> None:
    """The command is done and has said so; a signal in the interpreter's last steps (sent here
    by an exit hook) ends the process at once with the command's own code, not as killed."""
    (tmp_path / "list.csv").write_text(FIRST)
    script = EXITING.format(
        name=name,
        argv=[*argv, "--cache-dir", str(tmp_path / "cache")] if argv[0] == "clean" else argv,
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    if argv[0] == "--version":
        assert done.stdout.startswith("listclean ")


def test_the_signal_behind_an_error_is_found() -> None:
    stop = Interrupted(signal.SIGTERM)
    try:
        try:
            raise stop
        except Interrupted as exc:
            raise RuntimeError("Error calling __set_name__") from exc
    except RuntimeError as wrapped:
        assert interruption(wrapped) is stop
    assert interruption(stop) is stop
    assert interruption(RuntimeError("no signal")) is None
    try:
        try:
            raise stop
        except Interrupted:  # an error while handling it, not raised from it
            raise RuntimeError("cleaning up failed") from None
    except RuntimeError as unrelated:
        assert interruption(unrelated) is None


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
