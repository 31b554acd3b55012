"""The store: search answers, opt-out and erasure, the audit log, configuration."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pipeline.core.config import ContactsConfig
from pipeline.core.contacts.store import ContactStore
from pipeline.core.contacts.types import Lookup, Outcome, TermKind
from pipeline.core.errors import ConfigError, UsageError
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
    from pipeline.core.sqlite import beside_domain_cache

    cache = tmp_path / "domains.sqlite"
    assert (
        beside_domain_cache(cache, "contacts", ContactsConfig().db) == tmp_path / "contacts.sqlite"
    )
    assert beside_domain_cache(cache, "contacts", ContactsConfig(db="/x/y.sqlite").db) == Path(
        "/x/y.sqlite"
    )
    sandbox = tmp_path / "sandbox-domains.sqlite"
    assert beside_domain_cache(sandbox, "contacts") == tmp_path / "sandbox-contacts.sqlite"
