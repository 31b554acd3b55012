"""Contact files into the store: merges, rejects, columns."""

from __future__ import annotations

import sqlite3
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
    NO_MATCH,
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
        "Ada Penrose,,,,,,802-555-0111,,Brassgear Instruments,\n"
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


def test_a_row_without_a_name_joins_no_one(tmp_path: Path) -> None:
    rows = (
        "Ada,Penrose,1 Elm St,Quillmarsh,VT,00026,(802) 555-0111,ada@madeup-mail.net,,\n"
        ",,,,,,802-555-0111,,Brassgear Instruments,\n"
    )
    with ContactStore(tmp_path / "c.sqlite", CONFIG) as store:
        assert store.import_file(write_csv(tmp_path, "a.csv", rows), "a.csv").imported == 2
        # Whose number is it? The nameless row may be anyone's: the number answers no one.
        assert store.search("802-555-0111").outcome is AMBIGUOUS
        assert matched(store.search("ada@madeup-mail.net")).company == ""


# --------------------------------------------------------------------------- cause: merges


HOUSEHOLD = (
    # A landline shared by a household, and a family mailbox shared by two of them.
    "John,Carrow,7 Elm Rd,Copperwick,AZ,00048,(602) 555-0120,the.carrows@madeup-mail.net,,\n"
    "Jane,Carrow,7 Elm Rd,Copperwick,AZ,00048,(602) 555-0120,,,\n"
    "Jane,Carrow,,,,,602-555-0120,the.carrows@madeup-mail.net,Glasswing Optics,Analyst\n"
    "Maya,Orrin,7 Elm Rd,Copperwick,AZ,00048,602.555.0120,maya@notreal-inbox.org,,\n"
    # An office switchboard shared by colleagues.
    "Ravi,Teller,9 Mill St,Fernhollow,WA,00035,+1 206 555 0150,,Kestrel Dental,Clerk\n"
    "Ines,Marlow,9 Mill St,Fernhollow,WA,00035,(206) 555-0150 ext. 12,,Kestrel Dental,Nurse\n"
    # The same person twice: her number, her nickname, her name without its accents.
    "Robert,Quenby,3 Oak St,Marrowgate,OH,00015,(614) 555-0130,,,\n"
    "Bob,Quenby,,,,,+1 614 555 0130,bob.q@madeup-mail.net,,\n"
)


@pytest.fixture
def household(tmp_path: Path) -> ContactStore:
    store = ContactStore(tmp_path / "c.sqlite", CONFIG)
    report = store.import_file(write_csv(tmp_path, "h.csv", HOUSEHOLD), "h.csv")
    assert (report.imported, report.merged) == (6, 2)
    return store


def test_rows_of_different_people_never_become_one_record(household: ContactStore) -> None:
    # Jane's rows meet on the landline under her own name; John's record holds it too.
    jane = matched(household.search("Jane Carrow"))
    assert (jane.phone, jane.email) == ("+16025550120", "the.carrows@madeup-mail.net")
    assert (jane.address, jane.company) == ("7 Elm Rd, Copperwick, AZ 00048", "Glasswing Optics")
    assert matched(household.search("John Carrow Copperwick")).phone == "+16025550120"
    assert matched(household.search("Maya Orrin")).email == "maya@notreal-inbox.org"
    assert matched(household.search("Ravi Teller")).title == "Clerk"
    assert matched(household.search("Ines Marlow")).title == "Nurse"
    robert = matched(household.search("Robert Quenby"))  # the fuller name stays
    assert (robert.name, robert.email) == ("Robert Quenby", "bob.q@madeup-mail.net")
    household.close()


@pytest.mark.parametrize(
    "term",
    ["(602) 555-0120", "the.carrows@madeup-mail.net", "+1 206 555 0150", "Carrow"],
)
def test_a_shared_number_or_mailbox_answers_no_one(household: ContactStore, term: str) -> None:
    assert household.search(term).outcome in (AMBIGUOUS, NO_MATCH)
    household.close()


# --------------------------------------------------------------------------- cause: countries


def test_numbers_are_read_in_the_country_of_the_address(tmp_path: Path) -> None:
    # A Mexico City number written nationally, and a New Jersey number with the same digits.
    rows = (
        "Lucía,Mendoza Ruiz,Av. Reforma 12,Ciudad de México,CDMX,06000,México,55 5550 0123,,,\n"
        "Dale,Ferris,1 Oak St,Jersey City,NJ,07302,USA,(555) 550-0123,,,\n"
        "Corin,Hallett,4 Quarry Row,Nettlecombe,,ZZ99 1LN,United Kingdom,07700 900501,,,\n"
        # No country: the configured region (US) reads it, and 07700 is no US number.
        "Ida,Quill,,,,,,07700 900502,ida@madeup-mail.net,,\n"
    )
    path = tmp_path / "a.csv"
    header = "First Name,Last Name,Street,City,State,ZIP,Country,Phone,E-mail,Employer,Title\n"
    path.write_text(header + rows, encoding="utf-8")
    with ContactStore(tmp_path / "c.sqlite", CONFIG) as store:
        assert store.import_file(path, "a.csv").imported == 4
        assert matched(store.search("+52 55 5550 0123")).name == "Lucía Mendoza Ruiz"
        assert matched(store.search("+1 555 550 0123")).name == "Dale Ferris"
        # Written nationally the number is both: it answers neither.
        assert store.search("55 5550 0123").outcome is AMBIGUOUS
        assert matched(store.search("07700 900501")).name == "Corin Hallett"
        assert matched(store.search("Ida Quill")).phone == ""
        assert store.search("07700 900502").outcome is NO_MATCH


# --------------------------------------------------------------------------- upgrade


OLD_SCHEMA = """
CREATE TABLE secret (id INTEGER PRIMARY KEY CHECK (id = 1), value BLOB NOT NULL);
CREATE TABLE contacts (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, address TEXT NOT NULL, place TEXT NOT NULL,
    phone TEXT NOT NULL, email TEXT NOT NULL, email_key TEXT NOT NULL, company TEXT NOT NULL,
    title TEXT NOT NULL, source TEXT NOT NULL, imported_at REAL NOT NULL
);
CREATE VIRTUAL TABLE contacts_fts USING fts5 (
    name, place, company, content = 'contacts', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER contacts_fts_insert AFTER INSERT ON contacts BEGIN
    INSERT INTO contacts_fts (rowid, name, place, company)
    VALUES (new.id, new.name, new.place, new.company);
END;
CREATE TABLE suppressed (digest TEXT PRIMARY KEY, kind TEXT NOT NULL, at REAL NOT NULL)
    WITHOUT ROWID;
CREATE TABLE audit (at REAL NOT NULL, key_id TEXT NOT NULL, client_ip TEXT NOT NULL,
    kind TEXT NOT NULL, term_hmac TEXT NOT NULL, record_id INTEGER, outcome TEXT NOT NULL);
INSERT INTO contacts VALUES
    (1, 'Laura Rodríguez Díaz', '5 Elm St, Orlando, FL', 'Orlando', '+14075550100', '', '',
     'Bluefin Dental', '', 'old', 0),
    (2, 'John Michael Smith', 'Dallas, TX', 'Dallas', '', '', '', '', '', 'old', 0),
    (3, 'Michael Reyes', 'Austin, TX', 'Austin', '', '', '', '', '', 'old', 0);
"""


def test_a_store_of_the_earlier_schema_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
    with ContactStore(path, CONFIG) as store:
        assert matched(store.search("Laura Rodríguez Orlando")).phone == "+14075550100"
        assert store.search("Laura Díaz").outcome is NO_MATCH
        assert matched(store.search("John Smith Dallas")).name == "John Michael Smith"
        assert matched(store.search("+1 407 555 0100")).company == "Bluefin Dental"
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
        db.execute("INSERT INTO contacts_fts (contacts_fts) VALUES ('integrity-check')")
    with ContactStore(path, CONFIG) as store:  # opening again changes nothing
        assert matched(store.search("Michael Reyes")).address == "Austin, TX"


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
