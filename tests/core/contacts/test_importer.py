"""Contact files into the store: merges, rejects, columns."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline.core.contacts.store import ContactStore
from pipeline.core.contacts.types import ContactImport
from pipeline.core.errors import InputError
from tests.core.contacts.common import (
    AMBIGUOUS,
    CONFIG,
    DAY,
    SAMPLE,
    Clock,
    matched,
    write_csv,
)

# --------------------------------------------------------------------------- import


def test_sample_import_counts_merges_and_rejects(sample_db: tuple[Path, ContactImport]) -> None:
    report = sample_db[1]
    assert (report.read, report.imported, report.merged) == (3016, 3010, 3)
    assert report.read == report.imported + report.merged + len(report.rejected)
    assert sorted(report.rejected) == [
        ("contacts.csv line 1512", "no name, no valid email and no valid phone"),
        (
            "contacts.csv line 1513",
            "no name, no valid email and no valid phone (email: An email address must have an "
            "@-sign)",
        ),
        ("contacts.csv line 1517", "row has 12 fields but the header has 11"),
    ]


def test_duplicates_merge_newer_values_win(store: ContactStore) -> None:
    marisol = matched(store.search("MARISOL.QUENBY@madeup-mail.net"))
    assert (marisol.email, marisol.title) == ("marisol.quenby@madeup-mail.net", "Head Archivist")
    emrys = matched(store.search("+1 (614) 555-0177"))
    assert emrys.email == "emrys.c@notreal-inbox.org"  # filled in by the later row
    assert emrys.address == "5 Saddler Ln, Wrenhaven, WI 00059, USA"  # kept: the later row had none
    assert matched(store.search("emrys.c@notreal-inbox.org")).record_id == emrys.record_id


def test_invalid_email_and_phone_are_stored_empty(store: ContactStore) -> None:
    assert matched(store.search("Hollis Penhaligon")).as_spec() == {
        "name": "Hollis Penhaligon",
        "address": "3 Cobble St, Pebblestone, NM 00071, USA",
        "phone": "",
        "email": "",
        "employment": {"company": "", "title": ""},
    }


def test_reimport_merges_everything(store: ContactStore) -> None:
    report = store.import_file(SAMPLE, "again.csv")
    assert (report.imported, report.merged, len(report.rejected)) == (0, 3013, 3)
    assert matched(store.search("Ilse Marchbank")).title == "Engineer"


def test_merge_rules_across_files(tmp_path: Path) -> None:
    first = write_csv(
        tmp_path,
        "a.csv",
        "Ada,Penrose,1 Elm St,Quillmarsh,VT,00026,(802) 555-0111,ada@madeup-mail.net,"
        "Glasswing Optics,Analyst\n",
    )
    second = write_csv(
        tmp_path,
        "b.csv",
        ",,,,,,802-555-0111,,Brassgear Instruments,\n"
        "Ada Penrose,,,,,,,ADA@madeup-mail.net,,Lead Analyst\n",
    )
    # Neither email nor phone: the same name at the same address is the same person.
    third = write_csv(tmp_path, "c.csv", "ADA,penrose,1 Elm St,Quillmarsh,VT,00026,,,,\n")
    clock = Clock()
    with ContactStore(tmp_path / "c.sqlite", CONFIG, clock=clock) as store:
        assert store.import_file(first, "a.csv") == ContactImport(1, 1, 0, [])
        clock.now += DAY
        assert store.import_file(second, "b.csv") == ContactImport(2, 0, 2, [])
        ada = matched(store.search("ada@madeup-mail.net"))
        assert store.import_file(third, "c.csv") == ContactImport(1, 0, 1, [])
        assert matched(store.search("Ada Penrose")).name == "ADA penrose"
    # A new employer comes with its own title (none given), the later row sets the title again.
    assert (ada.name, ada.company, ada.title) == (
        "Ada Penrose",
        "Brassgear Instruments",
        "Lead Analyst",
    )
    assert ada.address == "1 Elm St, Quillmarsh, VT 00026"


def test_parquet_with_other_column_names(tmp_path: Path) -> None:
    path = tmp_path / "people.parquet"
    pl.DataFrame(
        {
            "Name": ["Corin Hallett", "Corin Hallett", None],
            "Address": ["4 Quarry Row, Nettlecombe Parva", "9 Heron Way, Brindlemoor", None],
            "Mobile": ["+44 7700 900501", "(218) 555-0150", None],
            "Email Address": ["corin@notreal-inbox.org", None, None],
            "Organization": ["Wheelwright Bicycles", None, "Mossbank Dairy Cooperative"],
            "Position": ["Mechanic", None, None],
        }
    ).write_parquet(path)
    with ContactStore(tmp_path / "c.sqlite", CONFIG) as store:
        report = store.import_file(path, "people.parquet")
        assert (report.read, report.imported, report.rejected) == (
            3,
            2,
            [("people.parquet row 3", "no name, no valid email and no valid phone")],
        )
        assert store.search("Corin Hallett").outcome is AMBIGUOUS
        # Without a city column the whole address narrows the search.
        corin = matched(store.search("Corin Hallett Nettlecombe"))
    assert corin.as_spec() == {
        "name": "Corin Hallett",
        "address": "4 Quarry Row, Nettlecombe Parva",
        "phone": "+447700900501",
        "email": "corin@notreal-inbox.org",
        "employment": {"company": "Wheelwright Bicycles", "title": "Mechanic"},
    }


def test_a_file_without_person_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("company,title\nAcme,Clerk\n", encoding="utf-8")
    with (
        ContactStore(tmp_path / "c.sqlite", CONFIG) as store,
        pytest.raises(InputError, match="'company'"),
    ):
        store.import_file(path, "x.csv")
