"""The shapes lists arrive in, built at run time: compressed and zipped CSV (Mailchimp's
export), Excel workbooks, a German Excel CSV (cp1252, ``;``, ``;;;;`` rows), a Salesforce report
with its footer; the email column found by its header in many languages, or by its values."""

from __future__ import annotations

import bz2
import datetime as dt
import gzip
import json
import zipfile
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
import xlsxwriter

from pipeline.cli import main
from pipeline.core.errors import InputError
from pipeline.core.schema import SOURCE_COLUMN
from pipeline.stages.read.email_column import by_name
from pipeline.stages.read.reader import Choice, read_list

CSV = "Email Address,First Name\nann@gmail.com,Ann\nbob@yahoo.com,Bob\n"


@pytest.mark.parametrize(
    "header",
    [
        "E-mail 1 - Value",
        "Work Email",
        "Primary Email",
        "Email 1",
        "E-Mail-Adresse",
        "Courriel",
        "Adresse e-mail",
        "Correo electrónico",
        "CORREO_ELECTRONICO",
        "E-postadress",
        "メールアドレス",
    ],
)
def test_the_email_column_is_found_by_many_names(header: str) -> None:
    found = by_name(["Name", "Phone", header, "Notes"])
    assert found is not None and found.name == header and found.rule == "name"


def test_a_plain_email_header_wins_over_others() -> None:
    found = by_name(["HasOptedOutOfEmail", "Work Email", "Email", "E-mail 2 - Value"])
    assert found is not None and found.name == "Email"


def test_by_content_when_no_header_names_it(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    rows = [f"P{i},user{i}@example.org,note" for i in range(8)] + ["P8,n/a,x", "P9,,x"]
    path.write_text("Person,Contact,Notes\n" + "\n".join(rows) + "\n")
    reader = read_list(path, tmp_path).reader
    assert (reader.email.name, reader.email.rule) == ("Contact", "content")
    assert "89% of its 9 non-empty values" in reader.email.why


def test_by_content_needs_four_in_five(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    rows = [f"user{i}@example.org" for i in range(7)] + ["n/a", "unknown"]  # 78%
    path.write_text("Contact\n" + "\n".join(rows) + "\n")
    with pytest.raises(InputError, match="no column holds addresses"):
        read_list(path, tmp_path)


def test_two_columns_of_addresses_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    path.write_text("Name,Home,Office\nAnn,ann@gmail.com,ann@acme.com\n")
    with pytest.raises(InputError, match=r"several columns hold addresses: 'Home', 'Office'"):
        read_list(path, tmp_path)
    assert main(["clean", str(path), "--offline", "--quiet", "-o", str(tmp_path / "o.csv")]) == 2


@pytest.mark.parametrize(
    ("name", "packed", "compression"),
    [
        ("list.csv.gz", gzip.compress(CSV.encode(), mtime=0), "gzip"),
        ("list.csv.bz2", bz2.compress(CSV.encode()), "bzip2"),
        ("list.csv.zst", pa.compress(CSV.encode(), "zstd", asbytes=True), "zstd"),
        ("list.parquet.gz", None, "gzip"),  # a compressed Parquet file is read as Parquet
    ],
)
def test_compressed_lists(
    tmp_path: Path, name: str, packed: bytes | None, compression: str
) -> None:
    if packed is None:
        pl.read_csv(CSV.encode()).write_parquet(tmp_path / "plain.parquet")
        packed = gzip.compress((tmp_path / "plain.parquet").read_bytes())
    (tmp_path / name).write_bytes(packed)
    spill = tmp_path / "spill"
    spill.mkdir()
    result = read_list(tmp_path / name, spill)
    assert result.frame.get_column("Email Address").to_list() == ["ann@gmail.com", "bob@yahoo.com"]
    assert result.reader.info.compression == compression


def test_a_cut_gzip_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "list.csv.gz").write_bytes(gzip.compress(CSV.encode() * 50)[:-20])
    with pytest.raises(InputError, match=r"Cannot decompress .* \(gzip\)"):
        read_list(tmp_path / "list.csv.gz", tmp_path)


def _mailchimp(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("subscribed_members_export_9f.csv", CSV)
        archive.writestr(
            "unsubscribed_members_export_9f.csv",
            "Email Address,First Name,UNSUB_TIME\ncat@outlook.com,Cat,2024-05-06\n"
            'dan@x.org,"Dan\n',  # a quote that never closes: this member needs the exact reader
        )
        archive.writestr("cleaned_members_export_9f.csv", "Email Address,CLEAN_TIME\n;;;;\n")
        archive.writestr("__MACOSX/._cleaned_members_export_9f.csv", b"\x00\x05")


def test_a_mailchimp_zip_is_read_member_by_member(tmp_path: Path) -> None:
    _mailchimp(tmp_path / "export.zip")
    result = read_list(tmp_path / "export.zip", tmp_path)
    assert result.frame.columns == [
        "Email Address",
        "First Name",
        "UNSUB_TIME",
        "CLEAN_TIME",
        SOURCE_COLUMN,
    ]
    assert result.frame.select("Email Address", SOURCE_COLUMN).rows() == [
        ("ann@gmail.com", "subscribed_members_export_9f.csv"),
        ("bob@yahoo.com", "subscribed_members_export_9f.csv"),
        ("cat@outlook.com", "unsubscribed_members_export_9f.csv"),
    ]
    assert result.rejects.columns == ["line", "reason", "raw", "file"]
    assert result.rejects.select("line", "reason", "file").rows() == [
        (3, "a quote opened here is never closed", "unsubscribed_members_export_9f.csv"),
        (2, "empty_row", "cleaned_members_export_9f.csv"),
    ]
    assert result.reader.info.members == (
        "subscribed_members_export_9f.csv",
        "unsubscribed_members_export_9f.csv",
        "cleaned_members_export_9f.csv",
    )


def test_one_member_of_a_zip(tmp_path: Path) -> None:
    _mailchimp(tmp_path / "export.zip")
    choice = Choice(member="UNSUBSCRIBED_members_export_9f.csv")
    result = read_list(tmp_path / "export.zip", tmp_path, choice=choice)
    assert result.frame.get_column(SOURCE_COLUMN).unique().to_list() == [
        "unsubscribed_members_export_9f.csv"
    ]


def test_a_member_without_the_email_column_is_refused(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "two.zip", "w") as archive:
        archive.writestr("a.csv", CSV)
        archive.writestr("b.csv", "Name\nAnn\n")
    with pytest.raises(InputError, match=r"member 'b.csv' .* no column 'Email Address'"):
        read_list(tmp_path / "two.zip", tmp_path)


def test_an_excel_workbook(tmp_path: Path) -> None:
    book = xlsxwriter.Workbook(tmp_path / "contacts.xlsx")
    book.add_worksheet("Notes").write(0, 0, "not this one")
    sheet = book.add_worksheet("Kontakte")
    rows = [
        ["Name", "E-Mail-Adresse", "Telefon", "Seit", "Aktiv"],
        ["Jürgen", "juergen@web.de", 4915112345678, dt.date(2024, 3, 1), True],
        ["Zoë", "zoe@gmx.de", 2.5, None, False],
        [],
        ["Summe", None, None, None, None],  # a report's total line, no address: a footer
        [],
        [],  # trailing empty rows are the sheet's padding, not records
    ]
    date = book.add_format({"num_format": "yyyy-mm-dd"})
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            if isinstance(value, dt.date):
                sheet.write_datetime(r, c, dt.datetime.combine(value, dt.time()), date)
            elif value is not None:
                sheet.write(r, c, value)
    book.close()
    result = read_list(tmp_path / "contacts.xlsx", tmp_path, choice=Choice(sheet="kontakte"))
    # Each column keeps its cells' type (a column of whole numbers and 2.5 holds numbers).
    assert result.frame.rows() == [
        ("Jürgen", "juergen@web.de", 4915112345678.0, dt.date(2024, 3, 1), True),
        ("Zoë", "zoe@gmx.de", 2.5, None, False),
    ]
    assert result.rejects.select("line", "reason").rows() == [(4, "empty_row"), (5, "footer")]
    assert result.reader.info.sheet == "Kontakte"


def clean(tmp: Path, source: Path, *extra: str) -> dict[str, object]:
    out = tmp / "out.csv"
    args = ["clean", str(source), "-o", str(out), "--offline", "--quiet"]
    assert main([*args, "--cache-dir", str(tmp / "cache"), *extra]) == 0
    summary: dict[str, object] = json.loads((tmp / "out.summary.json").read_text())
    return summary


def test_a_german_excel_csv(tmp_path: Path) -> None:
    """cp1252, ``;``, a BOM-less header in German and Excel's ``;;;;`` padding rows."""
    text = "Name;E-Mail-Adresse;Straße;Ort\r\nJürgen;juergen@web.de;Hauptstraße 1;Köln\r\n"
    text += ";;;\r\n;;;;\r\n"
    (tmp_path / "kunden.csv").write_bytes(text.encode("cp1252"))
    summary = clean(tmp_path, tmp_path / "kunden.csv")
    assert summary["encoding"] == "cp1252" and summary["delimiter"] == ";"
    assert summary["email_column"] == "E-Mail-Adresse" and summary["email_column_rule"] == "name"
    assert (summary["rows_in"], summary["rows_out"], summary["rows_rejected"]) == (3, 1, 2)
    rejects = pl.read_csv(tmp_path / "out.rejects.csv", infer_schema=False)
    assert rejects.get_column("reason").to_list() == ["empty_row", "empty_row"]
    assert pl.read_csv(tmp_path / "out.csv").item(0, "Straße") == "Hauptstraße 1"


def test_a_salesforce_report(tmp_path: Path) -> None:
    report = (
        '\ufeff"First Name","Last Name","Email","Account Name"\r\n'
        '"Ann","Lee","ann@gmail.com","Acme"\r\n'
        '"Bob","Roe","","Copyright Agency"\r\n'
        '"Grand Totals (2 records)"\r\n""\r\n'
        '"Confidential Information - Do Not Distribute"\r\n'
        '"Copyright (c) 2000-2024 salesforce.com, inc. All rights reserved."\r\n'
    )
    (tmp_path / "report.csv").write_text(report, encoding="utf-8")
    summary = clean(tmp_path, tmp_path / "report.csv")
    assert (summary["rows_in"], summary["rows_out"], summary["rows_rejected"]) == (6, 2, 4)
    assert summary["verdicts"] == {"Risky": 1, "Invalid": 1}  # Bob: a record with no address
    rejects = pl.read_csv(tmp_path / "out.rejects.csv", infer_schema=False)
    assert rejects.select("line", "reason").rows() == [
        ("4", "footer"),
        ("5", "empty_row"),
        ("6", "footer"),
        ("7", "footer"),
    ]
