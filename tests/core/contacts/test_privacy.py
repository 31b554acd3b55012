"""Opt-outs and erasure: whom they reach, what they leave, and what the audit log keeps."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pipeline.core.contacts.store import ContactStore
from pipeline.core.contacts.types import Lookup
from tests.core.contacts.common import (
    AMBIGUOUS,
    CONFIG,
    MATCH,
    NO_MATCH,
    SUPPRESSED,
    matched,
    write_csv,
)

HOUSEHOLD = (
    # Jane's directory entry (the landline) and her own email, in two rows that meet on it.
    "Jane,Carrow,7 Elm Rd,Copperwick,AZ,00048,(602) 555-0120,,,\n"
    "Jane,Carrow,,,,,602.555.0120,jane.c@madeup-mail.net,Glasswing Optics,Analyst\n"
    # An old entry of hers that only her name (and employer) lead to.
    "Jane,Carrow,,,,,,,Glasswing Optics,\n"
    # Her husband on the same landline, with a mailbox they share.
    "John,Carrow,7 Elm Rd,Copperwick,AZ,00048,(602) 555-0120,the.carrows@madeup-mail.net,,\n"
    "Jane,Carrow,7 Elm Rd,Copperwick,AZ,00048,,the.carrows@madeup-mail.net,,\n"
    # Another Jane Carrow, far away: not her.
    "Jane,Carrow,1 Pine St,Fernhollow,WA,00035,(206) 555-0150,,Kestrel Dental,Nurse\n"
)


@pytest.fixture
def home(tmp_path: Path) -> ContactStore:
    store = ContactStore(tmp_path / "c.sqlite", CONFIG)
    report = store.import_file(write_csv(tmp_path, "h.csv", HOUSEHOLD), "h.csv")
    assert (report.imported, report.merged) == (5, 1)
    return store


def test_suppression_reaches_the_person_not_the_household(home: ContactStore) -> None:
    reached = home.suppress(email="jane.c@madeup-mail.net", name="Jane Carrow")
    # Her record, and the one with her name at her address (which holds the family mailbox);
    # the old entry only her name leads to is a lookalike.
    assert (reached.records, reached.lookalikes) == (2, 1)
    assert reached.email_keys == ("jane.c@madeup-mail.net", "the.carrows@madeup-mail.net")
    for term in ("jane.c@madeup-mail.net", "Jane Carrow Copperwick"):
        assert home.search(term).outcome is SUPPRESSED, term
    # Her record and her old entry both fit: two records nothing links, both hidden.
    assert home.search("Jane Carrow Glasswing").outcome is AMBIGUOUS
    # The landline and the mailbox were hers too: they lead to no one now.
    assert home.search("(602) 555-0120").outcome is SUPPRESSED
    assert home.search("the.carrows@madeup-mail.net").outcome is SUPPRESSED
    # John is still found, without the values he shared with her.
    john = matched(home.search("John Carrow"))
    assert (john.phone, john.email, john.address) == ("", "", "7 Elm Rd, Copperwick, AZ 00048")
    # The other Jane Carrow lives elsewhere and works elsewhere.
    assert matched(home.search("Jane Carrow Fernhollow")).phone == "+12065550150"
    home.close()


def test_erasure_deletes_her_records_and_her_values_from_others(home: ContactStore) -> None:
    reached = home.erase(email="jane.c@madeup-mail.net", name="Jane Carrow")
    assert (reached.records, reached.lookalikes) == (2, 1)
    path = Path(home.where)
    home.close()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT name, phone, email, hidden FROM contacts ORDER BY id").fetchall()
        # Her records are gone; the lookalike is kept, hidden; John keeps nothing of hers.
        assert rows == [
            ("Jane Carrow", "", "", 1),
            ("John Carrow", "", "", 0),
            ("Jane Carrow", "+12065550150", "", 0),
        ]
        text = repr(db.execute("SELECT * FROM suppressed").fetchall())
        assert "5550120" not in text and "jane" not in text.lower()
    with ContactStore(path, CONFIG) as again:
        report = again.import_file(write_csv(path.parent, "h2.csv", HOUSEHOLD), "again")
        # Every row with her number, her email or her name at her address is refused.
        assert (report.imported, report.merged, len(report.rejected)) == (1, 1, 4)
        assert again.search("Jane Carrow Copperwick").outcome is NO_MATCH
        assert again.search("Jane Carrow Glasswing").outcome is AMBIGUOUS


def test_a_request_that_names_a_shared_number_reaches_everyone_on_it(home: ContactStore) -> None:
    reached = home.suppress(phone="(602) 555-0120")
    assert reached.records >= 3  # Jane's and John's records: the request named their number
    assert home.search("John Carrow").outcome is SUPPRESSED
    assert matched(home.search("Jane Carrow Fernhollow")).title == "Nurse"
    home.close()


def test_the_audit_log_forgets_whom_lookups_were_about(home: ContactStore) -> None:
    for term in ("jane.c@madeup-mail.net", "Jane Carrow Copperwick", "(602) 555-0120"):
        home.audit(key_id="k1", client_ip="", term=term, lookup=home.search(term))
    john = home.search("John Carrow")
    home.audit(key_id="k1", client_ip="", term="John Carrow", lookup=john)
    reached = home.suppress(email="jane.c@madeup-mail.net")
    assert reached.audit == 3  # by the term's digest or by the record answered
    first, second, third, fourth = home.audit_records()
    for record in (first, second, third):
        assert (record["term_hmac"], record["record_id"]) == ("", None)
        assert record["key_id"] == "k1"  # that the lookup happened is kept
    assert fourth["term_hmac"] and fourth["record_id"] == matched(john).record_id
    home.close()


def test_a_name_alone_never_opts_anyone_out(home: ContactStore) -> None:
    with pytest.raises(Exception, match="by email, by phone"):
        home.suppress(name="Jane Carrow")
    assert home.search("Jane Carrow Fernhollow").outcome is MATCH
    assert home.search("nobody@madeup-mail.net") == Lookup(
        home.search("nobody@madeup-mail.net").kind, NO_MATCH, None
    )
    assert home.search("Jane Carrow").outcome is AMBIGUOUS
    home.close()
