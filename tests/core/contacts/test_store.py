"""The contact store: term kinds, matching, merging, opt-out, erasure and the audit log."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from pipeline.core.config import ContactsConfig
from pipeline.core.contacts.store import (
    Contact,
    ContactImport,
    ContactStore,
    Lookup,
    Outcome,
    TermKind,
    classify_term,
)
from pipeline.core.errors import ConfigError, InputError, UsageError
from tests.conftest import REPO

SAMPLE = REPO / "sample_data" / "contacts.csv"
CONFIG = ContactsConfig()
NOW = 1_790_000_000.0
DAY = 86400.0
HEADER = "First Name,Last Name,Street,City,State,ZIP,Phone,E-mail,Employer,Job Title\n"

MATCH, NO_MATCH = Outcome.MATCH, Outcome.NO_MATCH
AMBIGUOUS, SUPPRESSED = Outcome.AMBIGUOUS, Outcome.SUPPRESSED


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ContactImport]:
    path = tmp_path_factory.mktemp("contacts") / "contacts.sqlite"
    with ContactStore(path, CONFIG, clock=Clock()) as store:
        report = store.import_file(SAMPLE, SAMPLE.name)
    return path, report


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(
    sample_db: tuple[Path, ContactImport], tmp_path: Path, clock: Clock
) -> Iterator[ContactStore]:
    """A store holding the sample file, of this test's own."""
    path = tmp_path / "contacts.sqlite"
    shutil.copy(sample_db[0], path)
    with ContactStore(path, CONFIG, clock=clock) as opened:
        yield opened


def write_csv(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def matched(lookup: Lookup) -> Contact:
    assert lookup.outcome is MATCH, lookup
    assert lookup.contact is not None
    return lookup.contact


# --------------------------------------------------------------------------- terms


@pytest.mark.parametrize(
    ("term", "region", "kind", "value"),
    [
        (" Jane.Roe@MadeUp-Mail.NET ", "US", TermKind.EMAIL, "jane.roe@madeup-mail.net"),
        ("(217) 555-0143", "US", TermKind.PHONE, "+12175550143"),
        ("217.555.0143", "US", TermKind.PHONE, "+12175550143"),
        ("+44 7700 900123", "US", TermKind.PHONE, "+447700900123"),
        ("07700 900123", "GB", TermKind.PHONE, "+447700900123"),
        ("07700 900123", "US", TermKind.NAME, "07700 900123"),  # too long for a US number
        ("555-0143", "US", TermKind.NAME, "555 0143"),  # no area code: possible only locally
        ("1-800-FLOWERS", "US", TermKind.NAME, "1 800 flowers"),  # vanity numbers are text
        ("12 Elm Street", "US", TermKind.NAME, "12 elm street"),
        ("jane@", "US", TermKind.NAME, "jane"),  # an @ alone does not make an address
        ("jane@example.com", "US", TermKind.NAME, "jane example com"),  # reserved domain
        ("Dr. Jane  ROE", "US", TermKind.NAME, "jane roe"),
        ("Zoë Åberlund", "US", TermKind.NAME, "zoe aberlund"),
        ("   ", "US", TermKind.NAME, ""),
    ],
)
def test_classify_term(term: str, region: str, kind: TermKind, value: str) -> None:
    assert classify_term(term, region) == (kind, value)


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


# --------------------------------------------------------------------------- search


def test_exact_email_and_phone_match(store: ContactStore) -> None:
    by_email = store.search("Jordan.Ellery@Quillfeather.MadeUp-Biz.net")
    assert (by_email.kind, by_email.confidence) == (TermKind.EMAIL, 1.0)
    by_phone = store.search("217-555-0101")
    assert by_phone.kind is TermKind.PHONE
    assert matched(by_phone) == matched(by_email)
    assert matched(by_phone).as_spec() == {
        "name": "Jordan Ellery",
        "address": "41 Heron St, Glimmerford, IL 00011, USA",
        "phone": "+12175550101",
        "email": "jordan.ellery@quillfeather.madeup-biz.net",
        "employment": {"company": "Quillfeather Paper Co", "title": "Paper Chemist"},
    }
    assert store.search("nobody@madeup-mail.net") == Lookup(TermKind.EMAIL, NO_MATCH, None, 0.0)
    assert store.search("(303) 555-0100").outcome is NO_MATCH


@pytest.mark.parametrize(
    ("term", "outcome", "email"),
    [
        # Two people of the same name in the same town: only the employer tells them apart.
        ("Jordan Ellery", AMBIGUOUS, None),
        ("Jordan Ellery Glimmerford", AMBIGUOUS, None),
        ("Jordan Ellery Quillfeather", MATCH, "jordan.ellery@quillfeather.madeup-biz.net"),
        ("ellery, jordan (Dunwhistle Freight)", MATCH, "jellery@notreal-inbox.org"),
        # The same name in two towns: the town tells them apart.
        ("Rosalind Vantreece", AMBIGUOUS, None),
        ("Rosalind Vantreece Marrowgate", MATCH, "rosalind.v@madeup-mail.net"),
        ("Ms Rosalind Vantreese, Marrowgate OH", MATCH, "rosalind.v@madeup-mail.net"),  # typo
        ("Rosalind Vantreece Springfield", NO_MATCH, None),  # neither lives there
        ("Zoe Aberlund", MATCH, "zoe.aberlund@fictional-post.net"),
        ("Tobias Wrenfield", MATCH, ""),  # middle name left out
        ("Jordan", NO_MATCH, None),  # a first name alone is nobody
        ("Glimmerford", NO_MATCH, None),  # a town alone is nobody
        ("Quillfeather Paper Co", NO_MATCH, None),
    ],
)
def test_name_search(store: ContactStore, term: str, outcome: Outcome, email: str | None) -> None:
    lookup = store.search(term)
    assert (lookup.kind, lookup.outcome) == (TermKind.NAME, outcome), lookup
    if email is not None:
        assert matched(lookup).email == email
        assert lookup.confidence >= CONFIG.min_confidence
    if outcome is NO_MATCH:
        assert lookup.confidence < CONFIG.min_confidence


def test_thresholds_come_from_the_config(tmp_path: Path) -> None:
    rows = (
        "Ada,Penrose,1 Elm St,Quillmarsh,VT,00026,,ada@madeup-mail.net,,\n"
        "Ada Penrose,Tolliver,5 Elm St,Quillmarsh,VT,00026,,apt@madeup-mail.net,,\n"
    )
    path = write_csv(tmp_path, "a.csv", rows)
    with ContactStore(tmp_path / "c.sqlite", CONFIG) as store:
        store.import_file(path, "a.csv")
        lookup = store.search("Ada Penrose")
        assert matched(lookup).email == "ada@madeup-mail.net"
        assert store.search("Ada Penrse").confidence == pytest.approx(0.952, abs=0.001)
    # Ada Penrose Tolliver scores 0.71 for "Ada Penrose": a wide margin makes that a rival.
    with ContactStore(tmp_path / "c.sqlite", ContactsConfig(ambiguity_margin=0.3)) as store:
        assert store.search("Ada Penrose").outcome is AMBIGUOUS
    with ContactStore(tmp_path / "c.sqlite", ContactsConfig(min_confidence=0.96)) as store:
        assert store.search("Ada Penrse").outcome is NO_MATCH


# --------------------------------------------------------------------------- opt-out


def test_suppress_by_email_hides_the_person_from_every_search(store: ContactStore) -> None:
    assert store.suppress(email="Rosalind.V@madeup-mail.net") == 1
    assert store.search("rosalind.v@madeup-mail.net") == Lookup(
        TermKind.EMAIL, SUPPRESSED, None, 0.0
    )
    assert store.search("+16145550103").outcome is SUPPRESSED  # her phone
    assert store.search("Rosalind Vantreece Marrowgate").outcome is SUPPRESSED
    assert store.search("Rosalind Vantreece").outcome in (SUPPRESSED, AMBIGUOUS)
    other = matched(store.search("Rosalind Vantreece Thistlecombe"))
    assert other.phone == "+14125550104"


def test_suppress_by_phone(store: ContactStore) -> None:
    assert store.suppress(phone="+1 217 555 0101") == 1
    assert store.search("jordan.ellery@quillfeather.madeup-biz.net").outcome is SUPPRESSED
    assert store.search("Jordan Ellery Quillfeather").outcome is SUPPRESSED
    # The other Jordan Ellery is still found, but a term that fits both still answers nothing.
    assert matched(store.search("Jordan Ellery Dunwhistle")).email == "jellery@notreal-inbox.org"
    assert store.search("Jordan Ellery Glimmerford").outcome in (SUPPRESSED, AMBIGUOUS)


def test_reimport_does_not_resurrect(store: ContactStore) -> None:
    store.suppress(email="zoe.aberlund@fictional-post.net")
    report = store.import_file(SAMPLE, "again.csv")
    assert ("contacts.csv line 1509", "the person opted out (suppressed)") in report.rejected
    assert store.search("Zoe Aberlund").outcome is SUPPRESSED
    assert store.search("+1 206 555 0105").outcome is SUPPRESSED


def test_suppression_before_the_record_exists(tmp_path: Path) -> None:
    row = "Una,Greaves,2 Mill St,Copperwick,AZ,00046,(602) 555-0160,una@madeup-mail.net,,\n"
    with ContactStore(tmp_path / "c.sqlite", CONFIG) as store:
        assert store.suppress(phone="602 555 0160") == 0
        report = store.import_file(write_csv(tmp_path, "a.csv", row), "a.csv")
        assert (report.imported, report.rejected) == (
            0,
            [("a.csv line 2", "the person opted out (suppressed)")],
        )
        assert store.search("una@madeup-mail.net").outcome is NO_MATCH
        assert store.search("(602) 555-0160").outcome is SUPPRESSED


def test_suppression_keeps_only_keyed_digests_and_survives_reopening(
    store: ContactStore, clock: Clock
) -> None:
    store.suppress(email="ilse.marchbank@fictional-post.net")
    path = store.path
    store.close()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT digest, kind FROM suppressed").fetchall()
    assert sorted(kind for _, kind in rows) == ["email", "person", "phone"]
    for digest, _ in rows:
        assert len(digest) == 64 and set(digest) <= set("0123456789abcdef")
        assert "ilse" not in digest and "7700900998" not in digest
    with ContactStore(path, CONFIG, clock=clock) as reopened:
        assert reopened.search("Ilse Marchbank").outcome is SUPPRESSED


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "by email, by phone"),
        ({"email": "nobody"}, "not an email"),
        ({"phone": "12"}, "not a phone"),
    ],
)
def test_suppress_needs_a_valid_identifier(
    store: ContactStore, kwargs: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        store.suppress(**kwargs)


def test_erase_deletes_the_records_and_their_index_rows(store: ContactStore) -> None:
    assert store.erase(email="zoe.aberlund@fictional-post.net") == 1
    assert store.search("Zoe Aberlund").outcome is NO_MATCH  # nothing left to find
    assert store.search("zoe.aberlund@fictional-post.net").outcome is SUPPRESSED
    assert store.erase(email="zoe.aberlund@fictional-post.net") == 0
    report = store.import_file(SAMPLE, "again.csv")
    assert ("contacts.csv line 1509", "the person opted out (suppressed)") in report.rejected
    assert store.search("Zoe Aberlund").outcome is NO_MATCH
    path = store.path
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute(
            "SELECT COUNT(*) FROM contacts WHERE name LIKE 'Zo%berlund'"
        ).fetchone() == (0,)
        hits = db.execute("SELECT rowid FROM contacts_fts WHERE contacts_fts MATCH 'aberlund'")
        assert hits.fetchall() == []
        db.execute("INSERT INTO contacts_fts (contacts_fts) VALUES ('integrity-check')")


# --------------------------------------------------------------------------- audit


def test_audit_keeps_an_hmac_of_the_term_never_the_term(store: ContactStore) -> None:
    term = "Jordan.Ellery@quillfeather.madeup-biz.net"
    lookup = store.search(term)
    store.audit(key_id="key_7", client_ip="203.0.113.9", term=term, lookup=lookup)
    miss = store.search("Jordan Ellery")
    store.audit(key_id="", client_ip="198.51.100.4", term="Jordan Ellery", lookup=miss)
    store.audit(key_id="key_7", client_ip="203.0.113.9", term=term.lower(), lookup=lookup)
    first, second, third = store.audit_records()
    assert first == {
        "at": NOW,
        "key_id": "key_7",
        "client_ip": "",  # a key identifies the caller; the address is not kept
        "kind": "email",
        "term_hmac": first["term_hmac"],
        "record_id": matched(lookup).record_id,
        "outcome": "match",
    }
    assert second["key_id"] == "anonymous" and second["client_ip"] == "198.51.100.4"
    assert (second["record_id"], second["outcome"]) == (None, "ambiguous")
    assert third["term_hmac"] == first["term_hmac"]  # the normalized term: same address, same HMAC
    for record in (first, second):
        digest = str(record["term_hmac"])
        assert len(digest) == 64 and "jordan" not in digest.lower()


def test_purge_audit_after_the_retention_period(store: ContactStore, clock: Clock) -> None:
    lookup = store.search("Zoe Aberlund")
    store.audit(key_id="k", client_ip="", term="Zoe Aberlund", lookup=lookup)
    clock.now += (CONFIG.retention_days - 1) * DAY
    store.audit(key_id="k", client_ip="", term="Zoe Aberlund", lookup=lookup)
    assert store.purge_audit() == 0
    clock.now += 2 * DAY
    assert store.purge_audit() == 1
    assert [r["at"] for r in store.audit_records()] == [NOW + (CONFIG.retention_days - 1) * DAY]
    assert store.audit_records(since=clock.now) == []


# --------------------------------------------------------------------------- config


def test_unknown_region_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"contacts\.region"):
        ContactStore(tmp_path / "c.sqlite", ContactsConfig(region="XX"))


def test_contacts_store_location(tmp_path: Path) -> None:
    from pipeline.core.sqlite import store_beside

    cache = tmp_path / "domains.sqlite"
    assert store_beside(cache, "contacts", ContactsConfig().db) == tmp_path / "contacts.sqlite"
    assert store_beside(cache, "contacts", ContactsConfig(db="/x/y.sqlite").db) == Path(
        "/x/y.sqlite"
    )
    sandbox = tmp_path / "sandbox-domains.sqlite"
    assert store_beside(sandbox, "contacts") == tmp_path / "sandbox-contacts.sqlite"
