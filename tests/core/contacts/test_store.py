"""The store: search answers, opt-out and erasure, the audit log, configuration."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from pipeline.core.config import ContactsConfig
from pipeline.core.contacts.store import SEARCH_ROWS, ContactStore
from pipeline.core.contacts.types import Lookup, Outcome, TermKind
from pipeline.core.errors import ConfigError, UsageError
from tests.conftest import StoreAt
from tests.core.contacts.common import (
    AMBIGUOUS,
    CONFIG,
    DAY,
    MATCH,
    NO_MATCH,
    NOW,
    SAMPLE,
    SUPPRESSED,
    Clock,
    matched,
    write_csv,
)

# --------------------------------------------------------------------------- search


def test_exact_email_and_phone_match(store: ContactStore) -> None:
    by_email = store.search("Jordan.Ellery@Quillfeather.MadeUp-Biz.net")
    assert by_email.kind is TermKind.EMAIL
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
    assert store.search("nobody@madeup-mail.net") == Lookup(TermKind.EMAIL, NO_MATCH, None)
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
        ("Ms Rosalind Vantreece, Marrowgate OH", MATCH, "rosalind.v@madeup-mail.net"),
        ("Ms Rosalind Vantreese, Marrowgate OH", NO_MATCH, None),  # one letter: another name
        ("Rosalind Vantreece Springfield", NO_MATCH, None),  # neither lives there
        ("Zoe Aberlund", MATCH, "zoe.aberlund@fictional-post.net"),
        ("Tobias Wrenfield", MATCH, ""),  # middle name left out
        ("Jordan", NO_MATCH, None),  # a first name alone is nobody
        ("Glimmerford", NO_MATCH, None),  # a town alone is nobody
        # More records hold it than a search reads (SEARCH_ROWS): too broad to name anyone.
        ("Quillfeather Paper Co", AMBIGUOUS, None),
    ],
)
def test_name_search(store: ContactStore, term: str, outcome: Outcome, email: str | None) -> None:
    lookup = store.search(term)
    assert (lookup.kind, lookup.outcome) == (TermKind.NAME, outcome), lookup
    if email is not None:
        assert matched(lookup).email == email


# --------------------------------------------------------------------------- cause: truncation


def test_every_namesake_counts_not_the_first_fifty(tmp_path: Path) -> None:
    # Fifty-five Danas on Park Avenue come first in the full-text index; the two Dana Parks
    # come after them. A decision among the first fifty candidates saw only one Dana Park.
    streets = "".join(
        f"Dana,Whitfield{chr(97 + n % 26)}{chr(97 + n // 26)},{n} Park Ave,Springfield,IL,"
        f"00{n:03d},,,,\n"
        for n in range(55)
    )
    parks = (
        "Dana,Park,1 Elm St,Marrowgate,OH,00015,(614) 555-0101,,,\n"
        "Dana,Park,2 Oak St,Copperwick,AZ,00048,(602) 555-0102,,,\n"
    )
    smiths = "".join(f"John,Smith,{n} Elm St,Town{n},TX,00{n:03d},,,,\n" for n in range(60))
    joshua = "Joshua,Smith,1 Pine St,Fernhollow,WA,00035,(206) 555-0103,,,\n"
    path = write_csv(tmp_path, "a.csv", streets + parks + smiths + joshua)
    with ContactStore(tmp_path / "c.sqlite", CONFIG) as store:
        assert store.import_file(path, "a.csv").imported == 55 + 2 + 60 + 1
        assert store.search("Dana Park").outcome is AMBIGUOUS
        assert matched(store.search("Dana Park Marrowgate")).phone == "+16145550101"
        assert store.search("John Smith").outcome is AMBIGUOUS
        assert matched(store.search("John Smith Town59")).address.startswith("59 Elm St")
        assert matched(store.search("Joshua Smith")).phone == "+12065550103"
        assert store.search("Josha Smith").outcome is NO_MATCH  # not Joshua, not John
        assert store.search("Jhon Smith").outcome is NO_MATCH  # not one of sixty


# --------------------------------------------------------------------------- cause: timing


def work(store: ContactStore, term: str) -> tuple[Outcome, list[str]]:
    """The outcome of a search and the statements it ran, their values blanked. FTS5's own
    statements on its tables are left out: they are the index reading itself."""
    seen: list[str] = []
    store._db._db.set_trace_callback(seen.append)
    try:
        outcome = store.search(term).outcome
    finally:
        store._db._db.set_trace_callback(None)
    own = [s for s in seen if not s.startswith("--") and "'main'." not in s]
    # Values blanked: the texts, and the numbers (a page's size, where its padding starts).
    blank = [re.sub(r"'(?:[^']|'')*'", "?", s) for s in own]
    return outcome, [re.sub(r"\b\d+\b", "?", s) for s in blank]


SHARED = (
    "John,Carrow,7 Elm Rd,Copperwick,AZ,00048,(602) 555-0120,the.carrows@madeup-mail.net,,\n"
    "Jane,Carrow,7 Elm Rd,Copperwick,AZ,00048,(602) 555-0120,the.carrows@madeup-mail.net,,\n"
)


@pytest.mark.parametrize(
    ("kind", "terms"),
    [
        (
            TermKind.EMAIL,
            {
                MATCH: "jordan.ellery@quillfeather.madeup-biz.net",
                NO_MATCH: "nobody@madeup-mail.net",
                AMBIGUOUS: "the.carrows@madeup-mail.net",
                SUPPRESSED: "zoe.aberlund@fictional-post.net",
            },
        ),
        (
            TermKind.PHONE,
            {
                MATCH: "(217) 555-0101",
                NO_MATCH: "(303) 555-0100",
                AMBIGUOUS: "(602) 555-0120",
                SUPPRESSED: "+1 206 555 0105",
            },
        ),
        (
            TermKind.NAME,
            {
                MATCH: "Jordan Ellery Quillfeather",
                NO_MATCH: "Jordan Elery",
                AMBIGUOUS: "Jordan Ellery",
                SUPPRESSED: "Zoe Aberlund",
            },
        ),
    ],
)
def test_every_outcome_does_the_same_work(
    store: ContactStore, tmp_path: Path, kind: TermKind, terms: dict[Outcome, str]
) -> None:
    """Found, nobody, too close to call and opted out: one statement list, no extra pass, and
    no sleep to pad the time (there is none to find: the work is counted, not timed)."""
    store.import_file(write_csv(tmp_path, "shared.csv", SHARED), "shared.csv")
    store.suppress(email="zoe.aberlund@fictional-post.net")
    done = {outcome: work(store, term) for outcome, term in terms.items()}
    assert {outcome: found for outcome, (found, _) in done.items()} == {o: o for o in terms}
    statements = {tuple(s) for _, s in done.values()}
    assert len(statements) == 1, statements
    (ran,) = statements
    # The candidates, then their identifiers (and the term's) in the suppression list.
    assert [s.split()[0] for s in ran] in (
        ["BEGIN", "SELECT", "SELECT", "COMMIT"],
        ["BEGIN", "WITH", "SELECT", "COMMIT"],
    )


def test_every_outcome_does_the_same_work_on_postgresql(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same on PostgreSQL: one snapshot, the same statements for every outcome."""
    from pipeline.core.db.postgres import PostgresDb

    with ContactStore(pg_url, CONFIG, clock=Clock()) as store:
        store.import_file(SAMPLE, SAMPLE.name)
        store.import_file(write_csv(tmp_path, "shared.csv", SHARED), "shared.csv")
        store.suppress(email="zoe.aberlund@fictional-post.net")
        ran: list[str] = []
        query, transaction = PostgresDb.query, PostgresDb.transaction

        def recorded(db: PostgresDb, sql: str, params: object = ()) -> list[object]:
            ran.append(sql.split()[0])
            return query(db, sql, params)

        def snapshot(db: PostgresDb, write: bool = False) -> object:
            ran.append("BEGIN" if not write else "BEGIN WRITE")
            return transaction(db, write)

        monkeypatch.setattr(PostgresDb, "query", recorded)
        monkeypatch.setattr(PostgresDb, "transaction", snapshot)
        work: list[set[tuple[str, ...]]] = []  # per kind of term: the statements of each search
        for terms in (
            {MATCH: "jordan.ellery@quillfeather.madeup-biz.net", NO_MATCH: "nobody@madeup.net",
             AMBIGUOUS: "the.carrows@madeup-mail.net",
             SUPPRESSED: "zoe.aberlund@fictional-post.net"},
            {MATCH: "(217) 555-0101", NO_MATCH: "(303) 555-0100", AMBIGUOUS: "(602) 555-0120",
             SUPPRESSED: "+1 206 555 0105"},
            {MATCH: "Jordan Ellery Quillfeather", NO_MATCH: "Jordan Elery",
             AMBIGUOUS: "Jordan Ellery", SUPPRESSED: "Zoe Aberlund"},
        ):  # fmt: skip
            work.append(set())
            for outcome, term in terms.items():
                ran.clear()
                assert store.search(term).outcome is outcome, term
                work[-1].add(tuple(ran))
    assert work == [{("BEGIN", "WITH", "SELECT")}] * 3


# Each kind's 404s: nobody, too close to call, opted out; for names also a first name alone
# that many records hold (Niamh: 67 in the sample) and a term too broad to name anyone.
NOT_FOUND = {
    TermKind.EMAIL: {
        NO_MATCH: "nobody@madeup-mail.net",
        AMBIGUOUS: "the.carrows@madeup-mail.net",
        SUPPRESSED: "zoe.aberlund@fictional-post.net",
    },
    TermKind.PHONE: {
        NO_MATCH: "(303) 555-0100",
        AMBIGUOUS: "(602) 555-0120",
        SUPPRESSED: "(206) 555-0105",  # written nationally too: as many readings to look up
    },
    TermKind.NAME: {
        NO_MATCH: "Jordan Elery",
        AMBIGUOUS: "Jordan Ellery",
        SUPPRESSED: "Zoe Aberlund",
        "a first name many hold": "Niamh",
        "too broad": "Quillfeather Paper Co",
    },
}


def test_every_404_reads_the_same_rows(store_at: StoreAt, tmp_path: Path) -> None:
    """Within a kind of term, every search that ends in the 404 runs the same statements and
    reads as many rows from each, on SQLite and on PostgreSQL: its time cannot tell them
    apart (counted through the store's trace hook, not timed)."""
    with ContactStore(store_at("contacts.sqlite"), CONFIG, clock=Clock()) as store:
        store.import_file(SAMPLE, SAMPLE.name)
        store.import_file(write_csv(tmp_path, "shared.csv", SHARED), "shared.csv")
        store.suppress(email="zoe.aberlund@fictional-post.net")
        traced: list[tuple[str, int]] = []
        store.trace(lambda statement, rows: traced.append((statement, rows)))
        for kind, terms in NOT_FOUND.items():
            work = {}
            for label, term in terms.items():
                traced.clear()
                lookup = store.search(term)
                assert lookup.kind is kind and lookup.contact is None, term
                if isinstance(label, Outcome):
                    assert lookup.outcome is label, term
                store.audit(key_id="k_1", client_ip="", term=term, lookup=lookup)
                work[label] = tuple(traced)
            assert len(set(work.values())) == 1, (kind, work)
            assert [rows for _, rows in work[NO_MATCH]][:1] == [SEARCH_ROWS[kind]], work


# --------------------------------------------------------------------------- opt-out


def test_suppress_by_email_hides_the_person_from_every_search(store: ContactStore) -> None:
    assert store.suppress(email="Rosalind.V@madeup-mail.net").records == 1
    assert store.search("rosalind.v@madeup-mail.net") == Lookup(TermKind.EMAIL, SUPPRESSED, None)
    assert store.search("+16145550103").outcome is SUPPRESSED  # her phone
    assert store.search("Rosalind Vantreece Marrowgate").outcome is SUPPRESSED
    assert store.search("Rosalind Vantreece").outcome in (SUPPRESSED, AMBIGUOUS)
    other = matched(store.search("Rosalind Vantreece Thistlecombe"))
    assert other.phone == "+14125550104"


def test_suppress_by_phone(store: ContactStore) -> None:
    assert store.suppress(phone="+1 217 555 0101").records == 1
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
        assert store.suppress(phone="602 555 0160").records == 0
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
    path = Path(store.where)
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
    assert store.erase(email="zoe.aberlund@fictional-post.net").records == 1
    assert store.search("Zoe Aberlund").outcome is NO_MATCH  # nothing left to find
    assert store.search("zoe.aberlund@fictional-post.net").outcome is SUPPRESSED
    assert store.erase(email="zoe.aberlund@fictional-post.net").records == 0
    report = store.import_file(SAMPLE, "again.csv")
    assert ("contacts.csv line 1509", "the person opted out (suppressed)") in report.rejected
    assert store.search("Zoe Aberlund").outcome is NO_MATCH
    path = Path(store.where)
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
    from pipeline.core.db.sqlite import beside_domain_cache

    cache = tmp_path / "domains.sqlite"
    assert (
        beside_domain_cache(cache, "contacts", ContactsConfig().db) == tmp_path / "contacts.sqlite"
    )
    assert beside_domain_cache(cache, "contacts", ContactsConfig(db="/x/y.sqlite").db) == Path(
        "/x/y.sqlite"
    )
    sandbox = tmp_path / "sandbox-domains.sqlite"
    assert beside_domain_cache(sandbox, "contacts") == tmp_path / "sandbox-contacts.sqlite"
