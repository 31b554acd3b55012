"""Nightly runs that remember, end to end: the sandbox world changes between two runs of one
list (a mailbox closed, a domain gone, a catch-all that no longer is, a new mailbox, addresses
added and dropped) and the second run says exactly what changed; the changes file in every
format; the list's name; sandbox runs apart from real ones; a run not recorded; an erasure
taken out of the history; the history in PostgreSQL."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.core.history.keys import hashes_of
from pipeline.core.history.store import RunHistory
from pipeline.sandbox.files import SANDBOX_SETTINGS, SANDBOX_WORLD

GMAIL = ("127.0.0.3", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.9")
# What each address is in the sample world, and what the night's changes make of it.
TONIGHT = {
    "john.doe@gmail.com": ("Valid", "Invalid"),  # the mailbox is closed
    "info@acme-widgets.com": ("Valid", "Invalid"),  # the domain is gone
    "admin@globex-corp.com": ("Risky", "Valid"),  # no longer a catch-all; admin exists
    "dlopez@gmail.com": ("Invalid", "Valid"),  # a new mailbox
    "adams.a@gmail.com": ("Valid", "Valid"),
    "paul.green@gmai.com": ("Invalid", "Invalid"),  # no such domain, both nights
}
COLUMNS = ["address", "before", "after", "reason_before", "reason_after", "learned_at"]
DROPPED = "anthonymoore@gmail.com"  # in last night's list only
ADDED = "thomas.robinson+lists@outlook.com"  # in tonight's only


def night_two_world(path: Path) -> Path:
    world = json.loads(SANDBOX_WORLD.read_text())
    changed = copy.deepcopy(world)
    for host in GMAIL:
        boxes = changed["smtp"][host]["domains"]["gmail.com"]["mailboxes"]
        boxes.remove("john.doe")
        boxes.append("dlopez")
    del changed["zones"]["acme-widgets.com"]
    changed["smtp"]["127.0.0.14"]["domains"]["globex-corp.com"] = {"mailboxes": ["admin"]}
    path.write_text(json.dumps(changed))
    return path


def settings(tmp: Path, history: str) -> Path:
    """The sandbox's settings, the history in *history*."""
    config = tmp / "settings.toml"
    config.write_text(SANDBOX_SETTINGS.read_text() + f'\n[history]\ndb = "{history}"\n')
    return config


def write_list(path: Path, addresses: list[str]) -> Path:
    pl.DataFrame({"email": addresses, "n": list(range(len(addresses)))}).write_csv(path)
    return path


def clean(tmp: Path, source: Path, output: str, *extra: str) -> dict[str, Any]:
    code = main(
        [
            "clean",
            str(source),
            "-o",
            str(tmp / output),
            "--sandbox",
            "--verify",
            "smtp",
            "--helo",
            "probe.example.net",
            "--quiet",
            *extra,
        ]
    )
    assert code == 0
    summary: dict[str, Any] = json.loads(
        (tmp / output.replace(".parquet", ".summary.json")).read_text()
    )
    return summary


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Last night's list in the sample world, tonight's in the changed world: each night with
    caches of its own (every answer learned afresh), one history."""
    tmp = tmp_path_factory.mktemp("nights")
    config = settings(tmp, str(tmp / "history.sqlite"))
    last = write_list(tmp / "crm-2026-11-26.csv", [*TONIGHT, DROPPED])
    first = clean(
        tmp, last, "last.parquet", "--config", str(config), "--cache-dir", str(tmp / "c1")
    )
    assert first["list_name"] == "crm" and first["since_last_run"] is None
    tonight = write_list(tmp / "crm-2026-11-27.csv", [ADDED, *TONIGHT, "JOHN.DOE@gmail.com"])
    second = clean(
        tmp,
        tonight,
        "tonight.parquet",
        "--config",
        str(config),
        "--cache-dir",
        str(tmp / "c2"),
        "--world",
        str(night_two_world(tmp / "world2.json")),
        "--changes",
        str(tmp / "changes.csv"),
    )
    return tmp, second


def test_the_second_night_says_exactly_what_changed(
    two_nights: tuple[Path, dict[str, Any]],
) -> None:
    tmp, summary = two_nights
    since = summary["since_last_run"]
    assert since == {
        "previous_run_at": since["previous_run_at"],
        "new": 1,
        "gone": 1,
        "unchanged": 6,
        "transitions": {"Valid->Invalid": 2, "Invalid->Valid": 1, "Risky->Valid": 1},
    }
    assert list(since["transitions"]) == ["Valid->Invalid", "Invalid->Valid", "Risky->Valid"]
    output = pl.read_parquet(tmp / "tonight.parquet")
    verdicts = dict(
        output.filter(~pl.col("DUPLICATE")).select("input_email", "VERDICT").iter_rows()
    )
    assert {a: verdicts[a] for a in TONIGHT} == {a: after for a, (_, after) in TONIGHT.items()}


def test_the_changes_file_lists_the_new_and_the_changed(
    two_nights: tuple[Path, dict[str, Any]],
) -> None:
    tmp, summary = two_nights
    changes = pl.read_csv(tmp / "changes.csv", infer_schema=False).fill_null("")
    assert summary["files"]["changes"] == str(tmp / "changes.csv")
    assert changes.columns == COLUMNS
    found = {r["address"]: r for r in changes.iter_rows(named=True)}
    assert set(found) == {ADDED, *(a for a, (b, t) in TONIGHT.items() if b != t)}
    assert found[ADDED]["before"] == "" and found[ADDED]["after"] == "Valid"
    john = found["john.doe@gmail.com"]
    assert (john["before"], john["after"]) == ("Valid", "Invalid")
    assert "mailbox_ok" in john["reason_before"] and "no_such_user" in john["reason_after"]
    assert "no_domain" in found["info@acme-widgets.com"]["reason_after"]
    assert found["admin@globex-corp.com"]["reason_before"].startswith("catch_all")
    assert all(r["learned_at"].endswith("Z") for r in found.values())


def test_the_report_shows_the_changes(two_nights: tuple[Path, dict[str, Any]]) -> None:
    tmp, _ = two_nights
    page = (tmp / "tonight.report.html").read_text()
    assert 'data-figure="since_last_run.new" data-value="1"' in page
    assert 'data-label="Valid-&gt;Invalid" data-series="addresses" data-value="2"' in page


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl", ".xlsx"])
def test_the_changes_file_round_trips_in_its_format(tmp_path: Path, suffix: str) -> None:
    source = write_list(tmp_path / "list.csv", ["adams.a@gmail.com", "john.doe@gmail.com"])
    first = tmp_path / f"first{suffix}"
    clean(
        tmp_path, source, "one.parquet", "--cache-dir", str(tmp_path / "c"), "--changes", str(first)
    )
    header = read_changes(first)  # the list's first run: the header only
    assert header.is_empty() and header.columns == ([] if suffix == ".jsonl" else COLUMNS)
    more = write_list(tmp_path / "list.csv", ["adams.a@gmail.com", "new.one@gmail.com"])
    then = tmp_path / f"then{suffix}"
    clean(tmp_path, more, "two.parquet", "--cache-dir", str(tmp_path / "c"), "--changes", str(then))
    got = read_changes(then)
    assert got.columns == COLUMNS
    assert got.select("address", "before", "after", "reason_before").rows() == [
        ("new.one@gmail.com", "", "Invalid", ""),
    ]


def read_changes(path: Path) -> pl.DataFrame:
    """A changes file read back in its own format, every value as text."""
    if path.suffix == ".parquet":
        frame = pl.read_parquet(path)
    elif path.suffix == ".jsonl":
        frame = pl.read_ndjson(path) if path.stat().st_size else pl.DataFrame()
    elif path.suffix == ".xlsx":
        frame = _read_xlsx(path)
    else:
        frame = pl.read_csv(path, infer_schema=False)
    return frame.with_columns(pl.all().cast(pl.String).fill_null(""))


def _read_xlsx(path: Path) -> pl.DataFrame:
    from openpyxl import load_workbook

    sheet = load_workbook(path, read_only=True).active
    assert sheet is not None
    header, *rows = [
        [("" if v is None else str(v)) for v in row] for row in sheet.iter_rows(values_only=True)
    ]
    return pl.DataFrame(rows, schema=header, orient="row")


def plain(tmp: Path, source: Path, output: str, *extra: str, config: str = "") -> dict[str, Any]:
    """A domain-level run (no SMTP), in the sandbox unless *extra* says otherwise."""
    args = ["clean", str(source), "-o", str(tmp / output), "--quiet", *extra]
    if config:
        args += ["--config", config]
    assert main(args) == 0
    summary: dict[str, Any] = json.loads(
        (tmp / output.replace(".parquet", ".summary.json")).read_text()
    )
    return summary


def test_sandbox_runs_keep_a_history_apart_from_real_ones(tmp_path: Path, sample_dns: Any) -> None:
    source = write_list(tmp_path / "crm.csv", ["adams.a@gmail.com", "paul.green@gmai.com"])
    cache = ("--cache-dir", str(tmp_path / "cache"))
    assert plain(tmp_path, source, "s1.parquet", "--sandbox", *cache)["since_last_run"] is None
    assert plain(tmp_path, source, "s2.parquet", "--sandbox", *cache)["since_last_run"] is not None
    real = ("--resolver", sample_dns.address, *cache)
    fast = str(SANDBOX_SETTINGS)
    first_real = plain(tmp_path, source, "r1.parquet", *real, config=fast)
    assert first_real["list_name"] == "crm" and first_real["since_last_run"] is None
    again = plain(tmp_path, source, "r2.parquet", *real, config=fast)
    assert again["since_last_run"]["unchanged"] == 2
    assert sorted(p.name for p in (tmp_path / "cache").glob("*history.sqlite")) == [
        "history.sqlite",
        "sandbox-history.sqlite",
    ]


def test_list_name_names_the_list(tmp_path: Path) -> None:
    cache = ("--sandbox", "--cache-dir", str(tmp_path / "cache"))
    one = write_list(tmp_path / "export-a.csv", ["adams.a@gmail.com"])
    other = write_list(tmp_path / "something-else.csv", ["adams.a@gmail.com", "x@gmail.com"])
    plain(tmp_path, one, "a.parquet", *cache, "--list-name", "newsletter")
    second = plain(tmp_path, other, "b.parquet", *cache, "--list-name", "newsletter")
    assert second["list_name"] == "newsletter"
    assert (second["since_last_run"]["new"], second["since_last_run"]["unchanged"]) == (1, 1)


def test_a_run_not_recorded(tmp_path: Path) -> None:
    config = tmp_path / "off.toml"
    config.write_text(SANDBOX_SETTINGS.read_text() + "\n[history]\nrecord = false\n")
    source = write_list(tmp_path / "crm.csv", ["adams.a@gmail.com"])
    for output in ("one.parquet", "two.parquet"):
        summary = plain(
            tmp_path, source, output, "--sandbox", "--cache-dir", str(tmp_path / "cache"),
            "--changes", str(tmp_path / "changes.csv"), config=str(config),
        )  # fmt: skip
        assert summary["since_last_run"] is None and summary["history"]["run_id"] == ""
    assert (tmp_path / "changes.csv").read_text().splitlines() == [",".join(COLUMNS)]
    assert not list((tmp_path / "cache").glob("*history*"))


def test_changes_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_list(tmp_path / "crm.csv", ["adams.a@gmail.com"])
    for wrong in (str(tmp_path / "changes.txt"), str(tmp_path / "out.parquet"), "s3://b/c.csv"):
        code = main(
            ["clean", str(source), "-o", str(tmp_path / "out.parquet"), "--sandbox",
             "--cache-dir", str(tmp_path / "cache"), "--changes", wrong]
        )  # fmt: skip
        assert code == 2
        assert "--changes" in capsys.readouterr().err
    assert not (tmp_path / "out.parquet").exists()


def test_an_erasure_takes_the_address_out_of_the_history(tmp_path: Path) -> None:
    cache = ("--sandbox", "--cache-dir", str(tmp_path / "cache"))
    addresses = ["adams.a@gmail.com", "john.doe@gmail.com"]
    source = write_list(tmp_path / "crm.csv", addresses)
    plain(tmp_path, source, "one.parquet", *cache)
    history = tmp_path / "cache" / "sandbox-history.sqlite"
    with RunHistory(history) as runs:
        (run,) = runs.runs("crm", sandbox=True)
        assert set(runs.kept(run.run_id)["HASH"]) == set(hashes_of(addresses))
    assert main(["contacts", "erase", "--email", "John.Doe@gmail.com", *cache]) == 0
    with RunHistory(history) as runs:
        assert runs.kept(run.run_id)["HASH"].to_list() == hashes_of(["adams.a@gmail.com"])
    again = plain(tmp_path, source, "two.parquet", *cache)
    assert (again["since_last_run"]["new"], again["since_last_run"]["unchanged"]) == (1, 1)


def test_the_history_in_postgresql(tmp_path: Path, pg_url: str) -> None:
    config = settings(tmp_path, pg_url)
    cache = ("--sandbox", "--cache-dir", str(tmp_path / "cache"))
    source = write_list(tmp_path / "crm.csv", ["adams.a@gmail.com", "john.doe@gmail.com"])
    assert (
        plain(tmp_path, source, "one.parquet", *cache, config=str(config))["since_last_run"] is None
    )
    more = write_list(tmp_path / "crm.csv", ["adams.a@gmail.com", "new.one@gmail.com"])
    since = plain(tmp_path, more, "two.parquet", *cache, config=str(config))["since_last_run"]
    assert (since["new"], since["gone"], since["unchanged"]) == (1, 1, 1)
    with RunHistory(pg_url) as runs:
        assert [r.addresses for r in runs.runs("crm", sandbox=True)] == [2, 2]
    assert not list((tmp_path / "cache").glob("*history*"))
