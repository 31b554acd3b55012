"""A run's decided rows against the list's last run: one row per distinct address, the counts,
and the changes file's rows, exactly."""

from __future__ import annotations

from collections import Counter

import polars as pl

from pipeline.core.history.compare import (
    CHANGE_COLUMNS,
    Previous,
    compare,
    kept_of,
    previous_table,
    remembered,
)
from pipeline.core.history.types import Changes, PastRun

SCHEMA = {
    "KEY": pl.String,
    "DUPLICATE": pl.Boolean,
    "EMAIL": pl.String,
    "VERDICT": pl.String,
    "REASON": pl.String,
    "SCORE": pl.Float64,
    "MAILBOX_AT": pl.Float64,
}
AT = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def work(*rows: tuple[str, bool, str, str, float | None]) -> pl.DataFrame:
    """Decided rows: (address, duplicate, VERDICT, REASON, when the mail server answered)."""
    return pl.DataFrame(
        [(a.lower(), dup, a, v, r, 0.5, t) for a, dup, v, r, t in rows], schema=SCHEMA, orient="row"
    )


def previous(*rows: tuple[str, bool, str, str, float | None]) -> Previous:
    kept = kept_of(remembered(work(*rows)))
    run = PastRun("r0", "crm", False, AT - 86400, AT - 86000, kept.height, "d", "1")
    return Previous(run, previous_table(kept).sort("HASH"))


def test_one_row_per_distinct_address_its_first() -> None:
    rows = remembered(
        work(
            ("Ann@x.org", False, "Valid", "mailbox_ok", AT),
            ("ann@x.org", True, "Valid", "mailbox_ok", AT),
            ("", False, "Invalid", "empty", None),
        )
    )
    assert rows.get_column("EMAIL").to_list() == ["Ann@x.org"]


def test_counts_and_changes_against_the_last_run() -> None:
    last = previous(
        ("ann@x.org", False, "Valid", "mailbox_ok", None),
        ("bob@x.org", False, "Valid", "mailbox_ok", None),
        ("cat@x.org", False, "Risky", "catch_all", None),
        ("dan@x.org", False, "Invalid", "no_such_user", None),  # gone tonight
    )
    tonight = remembered(
        work(
            ("ann@x.org", False, "Valid", "mailbox_ok", AT),
            ("bob@x.org", False, "Invalid", "no_such_user", AT),
            ("cat@x.org", False, "Valid", "mailbox_ok", AT + 60),
            ("eve@x.org", False, "Valid", "mailbox_ok", None),
        )
    )
    counted, rows = compare(tonight, last, AT)
    assert counted == Changes(
        AT - 86400,
        4,
        new=1,
        unchanged=3,
        transitions=Counter({"Valid->Invalid": 1, "Risky->Valid": 1}),
    )
    assert counted.gone == 1
    assert rows.schema == pl.Schema(CHANGE_COLUMNS)
    assert rows.rows() == [
        ("bob@x.org", "Valid", "Invalid", "mailbox_ok", "no_such_user", "2027-01-15T08:00:00Z"),
        ("cat@x.org", "Risky", "Valid", "catch_all", "mailbox_ok", "2027-01-15T08:01:00Z"),
        ("eve@x.org", "", "Valid", "", "mailbox_ok", "2027-01-15T08:00:00Z"),
    ]


def test_a_lists_first_run_counts_nothing_and_lists_nothing() -> None:
    tonight = remembered(work(("ann@x.org", False, "Valid", "mailbox_ok", AT)))
    counted, rows = compare(tonight, None, AT)
    assert counted is None and rows.is_empty() and list(rows.columns) == list(CHANGE_COLUMNS)


def test_parts_add_up() -> None:
    whole = Changes(AT, 10)
    for part in (Changes(AT, 10, 1, 4, Counter({"Valid->Risky": 2})), Changes(AT, 10, 2, 3)):
        whole.merge(part)
    assert (whole.new, whole.unchanged, whole.gone) == (3, 7, 3)
    assert whole.as_dict("t") == {
        "previous_run_at": "t",
        "new": 3,
        "gone": 3,
        "unchanged": 7,
        "transitions": {"Valid->Risky": 2},
    }


def test_a_last_run_read_without_its_reasons_counts_the_same_and_lists_nothing() -> None:
    rows = (
        ("ann@x.org", False, "Valid", "mailbox_ok", None),
        ("bob@x.org", False, "Valid", "mailbox_ok", None),
    )
    tonight = remembered(
        work(
            ("bob@x.org", False, "Invalid", "no_such_user", AT),
            ("eve@x.org", False, "Valid", "mailbox_ok", None),
        )
    )
    full = previous(*rows)
    narrow = Previous(full.run, full.kept.drop("_REASON_BEFORE"))
    counted, listed = compare(tonight, full, AT)
    counted_narrow, listed_narrow = compare(tonight, narrow, AT)
    assert counted_narrow == counted and listed.height == 2
    assert listed_narrow.is_empty() and listed_narrow.schema == pl.Schema(CHANGE_COLUMNS)
