"""Lists in and out as people have them, through `listclean clean` with either engine: a
Salesforce report with title rows, an Outlook contacts export and a HubSpot export with more
than one address column, --split with repeated addresses, the summary's sentence, and
`listclean verify` in words."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.cli.outcome import print_summary
from pipeline.stages.summary import RunSummary
from tests.exports import hubspot_contacts, outlook_contacts, salesforce_report

ENGINES = ["local", "dask"]


def clean(
    tmp: Path, source: Path, output: str, *extra: str, engine: str = "local"
) -> dict[str, Any]:
    args = ["clean", str(source), "-o", str(tmp / output), "--sandbox", "--quiet"]
    args += ["--cache-dir", str(tmp / "cache"), *extra]
    if engine == "dask":
        args += ["--engine", "dask", "--dask-workers", "1"]
    assert main(args) == 0
    stem = output.rsplit(".", 1)[0]
    summary: dict[str, Any] = json.loads((tmp / f"{stem}.summary.json").read_text())
    return summary


@pytest.mark.parametrize("engine", ENGINES)
def test_a_salesforce_report_is_cleaned_below_its_title(tmp_path: Path, engine: str) -> None:
    source = tmp_path / "report.csv"
    emails = salesforce_report(source, rows=30)
    summary = clean(tmp_path, source, "out.csv", engine=engine)
    assert summary["header_row"] == 5
    assert summary["rows_out"] == 30 and summary["rows_in"] == 30 + 8
    assert summary["rejects_by_reason"] == {"footer": 3, "empty_row": 2, "title_row": 3}
    frame = pl.read_csv(tmp_path / "out.csv", infer_schema=False)
    assert frame.get_column("EMAIL").to_list() == emails
    rejects = pl.read_csv(tmp_path / "out.rejects.csv", infer_schema=False)
    assert rejects.get_column("line").to_list()[:4] == ["1", "2", "3", "4"]
    again = clean(tmp_path, source, "named.csv", "--header-row", "5", engine=engine)
    assert again["rows_out"] == 30


OUTLOOK = [
    ("Ann Lee", "ann@gmail.com", "ann.lee@acme-widgets.com", ""),
    ("Bo Li", "bo@yahoo.com", "", "bo@gmial.com"),
    ("Cy Do", "", "cy@@acme-widgets.com", ""),
    ("Ann Lee", "ANN@gmail.com", "", ""),  # the same person again: a duplicate row
]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_address_column_of_an_outlook_export(tmp_path: Path, engine: str) -> None:
    source = tmp_path / "contacts.csv"
    outlook_contacts(source, OUTLOOK)
    plain = clean(tmp_path, source, "plain.parquet", engine=engine)
    assert plain["email_column"] == "E-mail Address"
    assert plain["other_address_columns"] == ["E-mail 2 Address", "E-mail 3 Address"]
    assert any("--email-column 'E-mail 2 Address'" in w for w in plain["warnings"])
    flags = ["--email-column", "E-mail Address", "--email-column", "E-mail 2 Address"]
    flags += ["--email-column", "E-mail 3 Address"]
    summary = clean(tmp_path, source, "all.parquet", *flags, engine=engine)
    assert summary["further_email_columns"] == ["E-mail 2 Address", "E-mail 3 Address"]
    assert summary["other_address_columns"] == []
    frame = pl.read_parquet(tmp_path / "all.parquet")
    assert frame.height == len(OUTLOOK) == summary["rows_in"]  # rows in = rows out
    second = frame.select(pl.col("^E-mail 2 Address_.*$")).rows()
    assert second == [
        ("Valid", "", ""),
        ("", "", ""),  # an empty cell: nothing to check
        ("Invalid", "syntax_invalid", ""),
        ("", "", ""),
    ]
    third = frame.get_column("E-mail 3 Address_SUGGESTION").to_list()
    assert third == ["", "bo@gmail.com", "", ""]
    # DUPLICATE and SAFE_TO_SEND stay the list's own column's.
    assert frame.get_column("DUPLICATE").to_list() == [False, False, False, True]
    assert frame.get_column("SAFE_TO_SEND").to_list()[3] is False


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cell_of_several_addresses_keeps_its_worst(tmp_path: Path, engine: str) -> None:
    source = tmp_path / "hubspot.csv"
    hubspot_contacts(
        source,
        [
            ("Ann Lee", "ann@gmail.com", "ann.lee@gmial.com;ann@yahoo.com"),
            ("Bo Li", "bo@yahoo.com", ""),
            ("Cy Do", "cy@acme-widgets.com", "cy2@gmail.com, bad@@x.com"),
        ],
    )
    column = "Additional email addresses"
    summary = clean(
        tmp_path, source, "out.csv", "--email-column", "Email", "--email-column", column,
        engine=engine,
    )  # fmt: skip
    assert summary["rows_out"] == 3
    frame = pl.read_csv(tmp_path / "out.csv", infer_schema=False).fill_null("")
    fields = frame.select(f"{column}_VERDICT", f"{column}_REASON", f"{column}_SUGGESTION")
    assert fields.rows() == [
        ("Risky", "disposable;typo_suspected", "ann.lee@gmail.com; ann@yahoo.com"),
        ("", "", ""),
        ("Invalid", "syntax_invalid;no_domain", ""),  # bad@@x.com, the worst of the two
    ]


def test_split_files_hold_one_row_per_address(tmp_path: Path) -> None:
    source = tmp_path / "list.csv"
    rows = ["a@gmail.com", "b@yahoo.com", "A@gmail.com", "", "a@gmail.com", "x@@y", ""]
    source.write_text("name,email\n" + "".join(f"n{i},{e}\n" for i, e in enumerate(rows)))
    summary = clean(tmp_path, source, "out.csv", "--split")
    full = pl.read_csv(tmp_path / "out.csv", infer_schema=False)
    assert full.height == len(rows)
    valid = pl.read_csv(tmp_path / "out.valid.csv", infer_schema=False)
    assert valid.get_column("name").to_list() == ["n0", "n1"]  # each address's first row
    invalid = pl.read_csv(tmp_path / "out.invalid.csv", infer_schema=False)
    assert invalid.get_column("name").to_list() == ["n3", "n5", "n6"]  # no address: each kept
    assert summary["duplicates"] == 2 and summary["empty_rows"] == 2
    assert summary["distinct_addresses"] + 2 + 2 == summary["rows_out"]
    # The sentence: unique addresses, in rows, with the duplicate and empty ones told.
    out = io.StringIO()
    print_summary(_summary_of(tmp_path, source), out)
    assert "3 in 7 rows (2 duplicate rows, 2 without an address)" in " ".join(
        out.getvalue().split()
    )


def _summary_of(tmp: Path, source: Path) -> RunSummary:
    from pipeline.api import clean as api_clean

    return api_clean(source, cache_dir=tmp / "cache", offline=True).summary


def test_verify_says_why_in_words(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    common = ["--offline", "--cache-dir", str(tmp_path)]
    assert main(["verify", "gmail.com", *common]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert (
        record["VERDICT"] == "Invalid"
        and record["DETAIL"] == "An email address must have an @-sign"
    )
    assert "not an email address" in captured.err  # the reason in words
    assert "listclean verify gmail.com --domain" in captured.err  # the hint
    assert main(["verify", "gmail.com", "--fail-on-invalid", *common]) == 4
    capsys.readouterr()
    assert main(["verify", "gmail.com", "--domain", "--fail-on-invalid", *common]) in (0, 4)
    assert "has no @" not in capsys.readouterr().err  # asked as a domain: no hint
