"""Bounce tables (CSV, Parquet) become events: columns, kinds, dates, rejects."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import polars as pl
import pytest

from pipeline.core.bounces.reports import read_bounce_file
from pipeline.core.bounces.types import BounceKind
from pipeline.core.errors import InputError
from tests.core.bounces.common import (
    DELIVERED,
    HARD,
    MTIME,
    SOFT,
    utc,
    write,
)

# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.csv", "email,type,date,reason\nAnn@Gmail.com,hard,2026-10-01T12:00:00Z,gone\n"),
        ("b.csv", "E-Mail;Kind;Timestamp;Diagnostic\nAnn@Gmail.com;hard;1790856000;gone\n"),
        (
            "c.csv",
            "Recipient\tBounce Type\tTime\tMessage\nAnn@Gmail.com\thard\t2026-10-01 12:00\tgone\n",
        ),
        (
            "d.csv",
            "ADDRESS|bounce_type|Bounced_At|REASON\nAnn@Gmail.com|hard|2026-10-01T14:00+02:00|gone\n",
        ),
        (
            "e.csv",
            "\ufeffEmail Address,Status,date,reason\n"
            "Ann@Gmail.com,5.1.1,2026-10-01T12:00:00Z,gone\n",
        ),
        ("f.csv", "id,email,code,date,reason\n7,Ann@Gmail.com,550,2026-10-01T12:00:00Z,gone\n"),
        ("g.csv", "email,smtp_status,date,reason\nAnn@Gmail.com,550,2026-10-01T12:00:00Z,gone\n"),
        (
            "h.txt",
            'email,type,date,reason\nAnn@Gmail.com,hard,"Thu, 1 Oct 2026 12:00:00 +0000",gone\n',
        ),
    ],
)
def test_table_columns_are_found_by_any_spelling(tmp_path: Path, name: str, text: str) -> None:
    events, rejected = read_bounce_file(write(tmp_path, name, text))
    assert rejected == []
    [found] = events
    assert (found.email, found.key, found.domain) == ("Ann@Gmail.com", "ann@gmail.com", "gmail.com")
    assert (found.kind, found.at, found.reason, found.source) == (
        HARD,
        utc("2026-10-01T12:00"),
        "gone",
        name,
    )
    assert found.status == ("5.1.1" if "5.1.1" in text else "")


@pytest.mark.parametrize(
    ("kind", "status", "expected"),
    [
        ("hard", "", (HARD, "")),
        ("Permanent", "", (HARD, "")),
        ("HardBounce", "", (HARD, "")),
        ("soft", "", (SOFT, "")),
        ("transient", "", (SOFT, "")),
        ("Soft bounce", "", (SOFT, "")),
        ("delivered", "", (DELIVERED, "")),
        ("success", "", (DELIVERED, "")),
        ("", "5.1.1", (HARD, "5.1.1")),
        ("", "smtp; 550-5.1.1 user unknown", (HARD, "5.1.1")),
        ("", "4.2.2", (SOFT, "4.2.2")),
        ("", "2.0.0", (DELIVERED, "2.0.0")),
        ("", "550", (HARD, "")),
        ("", "554 rejected", (HARD, "")),
        ("", "451", (SOFT, "")),
        ("", "421 try again later", (SOFT, "")),
        ("", "250 ok", (DELIVERED, "")),
        ("soft", "5.2.2", (SOFT, "5.2.2")),  # an explicit type wins over the status class
        ("hard", "n/a", (HARD, "")),
        ("bogus", "5.1.1", "unknown bounce type 'bogus'"),
        ("", "999", "status '999' is no SMTP status code"),
        ("", "5.1", "status '5.1' is no SMTP status code"),
        ("", "", "neither a bounce type nor an SMTP status"),
    ],
)
def test_kind_from_type_or_status(
    tmp_path: Path, kind: str, status: str, expected: tuple[BounceKind, str] | str
) -> None:
    path = write(tmp_path, "b.csv", f'email,type,status\nann@gmail.com,{kind},"{status}"\n')
    events, rejected = read_bounce_file(path)
    if isinstance(expected, str):
        assert events == []
        assert len(rejected) == 1
        assert rejected[0][0] == "b.csv line 2"
        assert expected in rejected[0][1]
    else:
        assert rejected == []
        assert [(e.kind, e.status) for e in events] == [expected]


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("2026-10-01T12:00:00Z", utc("2026-10-01T12:00")),
        ("2026-10-01T14:00:00+02:00", utc("2026-10-01T12:00")),
        ("2026-10-01 12:00:00", utc("2026-10-01T12:00")),  # no zone: UTC
        ("2026-10-01", utc("2026-10-01T00:00")),
        ("1790856000", utc("2026-10-01T12:00")),
        ("1790856000.5", utc("2026-10-01T12:00") + 0.5),
        ("Thu, 01 Oct 2026 12:00:00 GMT", utc("2026-10-01T12:00")),
        ("", MTIME),  # no date: the file's modification time
        ("  ", MTIME),
    ],
)
def test_dates(tmp_path: Path, cell: str, expected: float) -> None:
    events, rejected = read_bounce_file(
        write(tmp_path, "b.csv", f'email,type,date\na@b.com,hard,"{cell}"\n')
    )
    assert rejected == []
    assert [e.at for e in events] == [expected]


def test_bad_rows_are_rejected_with_their_line_and_reason(tmp_path: Path) -> None:
    text = (
        "email,type,date,reason\n"
        "good@gmail.com,hard,2026-10-01,ok\n"
        "no-at-sign.com,hard,2026-10-01,x\n"
        ",hard,2026-10-01,x\n"
        "\n"
        "x@localhost,hard,2026-10-01,x\n"
        "late@gmail.com,hard,last tuesday,x\n"
        "wide@gmail.com,hard,2026-10-01,x,extra\n"
        '"multi@gmail.com",soft,2026-10-02,"line one\nline two"\n'
        "odd@gmail.com,maybe,2026-10-01,x\n"
    )
    events, rejected = read_bounce_file(write(tmp_path, "b.csv", text))
    assert [(e.key, e.reason) for e in events] == [
        ("good@gmail.com", "ok"),
        ("multi@gmail.com", "line one line two"),
    ]
    assert [where for where, _ in rejected] == [
        "b.csv line 8",
        "b.csv line 3",
        "b.csv line 4",
        "b.csv line 6",
        "b.csv line 7",
        "b.csv line 11",
    ]
    reasons = dict(rejected)
    assert "row has 5 fields but the header has 4" in reasons["b.csv line 8"]
    assert "no address in 'no-at-sign.com'" in reasons["b.csv line 3"]
    assert "empty" in reasons["b.csv line 4"]
    assert "special-use" in reasons["b.csv line 6"]
    assert "unreadable date 'last tuesday'" in reasons["b.csv line 7"]
    assert "unknown bounce type 'maybe'" in reasons["b.csv line 11"]


def test_a_table_without_type_or_status_rejects_every_row(tmp_path: Path) -> None:
    events, rejected = read_bounce_file(
        write(tmp_path, "b.csv", "email,date\na@b.com,\nc@d.com,\n")
    )
    assert events == []
    assert [why for _, why in rejected] == [
        "the file has no type or status column: hard or soft?"
    ] * 2


def test_windows_1252_is_read(tmp_path: Path) -> None:
    text = "email;type;reason\nfrancois@orange.fr;soft;bo\u00eete pleine\n"
    events, _ = read_bounce_file(write(tmp_path, "b.csv", text, encoding="cp1252"))
    assert [e.reason for e in events] == ["bo\u00eete pleine"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,name\n1,Ann\n", "Its columns are: 'id', 'name'"),
        ("", r"is empty: there is no header row"),
        ("\n\n", r"Its columns are: \(none\)"),
    ],
)
def test_a_table_without_an_email_column_is_an_input_error(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        read_bounce_file(write(tmp_path, "b.csv", text))


@pytest.mark.parametrize("name", ["absent.csv", "absent.mbox"])
def test_a_missing_file_is_an_input_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(InputError, match="Cannot read the bounce file"):
        read_bounce_file(tmp_path / name)


def test_parquet_with_typed_columns(tmp_path: Path) -> None:
    path = tmp_path / "b.parquet"
    pl.DataFrame(
        {
            "Recipient": ["Ann@Gmail.com", "bob@yahoo.com", "broken", "eve@aol.com", None],
            "SMTP_Status": [550, 421, 550, 250, 550],
            "Timestamp": [dt.datetime(2026, 10, 1, 12), None, None, None, None],
        }
    ).write_parquet(path)
    os.utime(path, (MTIME, MTIME))
    events, rejected = read_bounce_file(path)
    assert [(e.key, e.kind, e.at) for e in events] == [
        ("ann@gmail.com", HARD, utc("2026-10-01T12:00")),
        ("bob@yahoo.com", SOFT, MTIME),
        ("eve@aol.com", DELIVERED, MTIME),
    ]
    assert [where for where, _ in rejected] == ["b.parquet row 3", "b.parquet row 5"]


def test_a_broken_parquet_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="as Parquet"):
        read_bounce_file(write(tmp_path, "b.parquet", "PAR1 not really"))
