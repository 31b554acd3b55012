"""The bounce ledger end to end: import, list, and its flags in `clean`, `verify` and the API."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.sandbox.files import SANDBOX_SETTINGS
from tests.conftest import REPO, SAMPLE_CSV

FAST = str(SANDBOX_SETTINGS)
BOUNCES = [str(REPO / "sample_data" / "bounces.csv"), str(REPO / "sample_data" / "bounces.mbox")]


def common(tmp_path: Path) -> list[str]:
    return ["--sandbox", "--cache-dir", str(tmp_path / "cache")]


@pytest.fixture
def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["bounces", "import", *BOUNCES, *common(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "bounces.csv: 32 events read, 32 added" in out
    assert "1 rejected" in out and "not a delivery status notification" in out
    return tmp_path


def test_importing_twice_adds_nothing(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bounces", "import", *BOUNCES, *common(imported)]) == 0
    out = capsys.readouterr().out
    assert "0 added" in out and "32 already known" in out


def test_list_shows_an_address_in_any_spelling(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bounces", "list", "--email", " DLopez@GMAIL.com ", *common(imported)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) >= 2 and all("dlopez@gmail.com" in line.lower() for line in lines[1:])


def test_clean_reads_the_ledger(imported: Path) -> None:
    out_path = imported / "out.parquet"
    args = ["clean", str(SAMPLE_CSV), "-o", str(out_path), "--config", FAST, "--quiet"]
    assert main([*args, *common(imported)]) == 0
    out = pl.read_parquet(out_path)

    def row(raw: str) -> dict[str, object]:
        return out.filter(pl.col("Email Address") == raw).row(0, named=True)

    known = row("dlopez@gmail.com")
    assert (known["HAS_KNOWN_BOUNCES"], known["VERDICT"]) == (True, "Invalid")
    assert "known_bounce" in str(known["REASON"])
    cleared = row("lmartinez@outlook.com")  # hard bounce, then delivered
    assert (cleared["HAS_KNOWN_BOUNCES"], cleared["VERDICT"]) == (False, "Valid")
    soft = row("olga.patel@hotmail.com")  # four soft bounces
    assert (soft["HAS_SUSPECTED_BOUNCES"], soft["VERDICT"]) == (True, "Risky")
    clean_row = row("thomas.robinson+lists@outlook.com")
    assert (clean_row["HAS_KNOWN_BOUNCES"], clean_row["HAS_SUSPECTED_BOUNCES"]) == (False, False)


def test_verify_reads_the_ledger(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "dlopez@gmail.com", "--config", FAST, *common(imported)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["HAS_KNOWN_BOUNCES"] is True and record["VERDICT"] == "Invalid"


def test_a_mailbox_accepted_after_the_bounce_lifts_the_invalid(imported: Path) -> None:
    # jonas.jones2004@initech.io bounced hard in the sample; the sandbox mail server accepts it now.
    out_path = imported / "smtp.parquet"
    args = ["clean", str(SAMPLE_CSV), "-o", str(out_path), "--config", FAST, "--quiet"]
    assert main([*args, "--verify", "smtp", "--helo", "probe.example.net", *common(imported)]) == 0
    row = pl.read_parquet(out_path).filter(pl.col("Email Address") == "jonas.jones2004@initech.io")
    record = row.row(0, named=True)
    assert record["HAS_KNOWN_BOUNCES"] is True  # history stays
    assert record["VERDICT"] == "Valid" and "known_bounce" not in str(record["REASON"])


def test_an_unreadable_bounce_file_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "b.csv").write_text("name,phone\nAnn,1\n")
    assert main(["bounces", "import", str(tmp_path / "b.csv"), *common(tmp_path)]) == 2
    assert "name" in capsys.readouterr().err
