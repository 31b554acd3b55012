"""Search terms, and the decision: one person among the candidates, or no answer."""

from __future__ import annotations

import pytest

from pipeline.core.contacts.names import Fit, NameParts, parse_name
from pipeline.core.contacts.search import candidate, classify_term, decide, match_clauses, people
from pipeline.core.contacts.sql import fts5_query, tsquery
from pipeline.core.contacts.types import Candidate, Outcome, Row, StoredRow, TermKind

# --------------------------------------------------------------------------- terms


@pytest.mark.parametrize(
    ("term", "region", "kind", "value"),
    [
        (" Jane.Roe@MadeUp-Mail.NET ", "US", TermKind.EMAIL, "jane.roe@madeup-mail.net"),
        ("(217) 555-0143", "US", TermKind.PHONE, "+12175550143"),
        ("217.555.0143", "US", TermKind.PHONE, "+12175550143"),
        ("+44 7700 900123", "US", TermKind.PHONE, "+447700900123"),
        ("07700 900123", "GB", TermKind.PHONE, "+447700900123"),
        # Not a US number: still a number, of some other country (its digits stand for it).
        ("07700 900123", "US", TermKind.PHONE, "07700900123"),
        ("555-0143", "US", TermKind.PHONE, "5550143"),  # finds no one: no country's number
        ("0143", "US", TermKind.NAME, "0143"),  # too short to be a number anywhere
        ("1-800-FLOWERS", "US", TermKind.NAME, "1800flowers"),  # vanity numbers are text
        ("12 Elm Street", "US", TermKind.NAME, "12 elm street"),
        ("jane@", "US", TermKind.NAME, "jane"),  # an @ alone does not make an address
        ("jane@example.com", "US", TermKind.NAME, "janeexamplecom"),  # reserved domain
        ("Dr. Jane  ROE", "US", TermKind.NAME, "jane roe"),
        ("Zoë Åberlund", "US", TermKind.NAME, "zoe aberlund"),
        ("   ", "US", TermKind.NAME, ""),
    ],
)
def test_classify_term(term: str, region: str, kind: TermKind, value: str) -> None:
    assert classify_term(term, region) == (kind, value)


def test_the_full_text_query_widens_each_word_and_quotes_everything() -> None:
    clauses = match_clauses('Dr. Bob "Smith" O\'Brien M. Zoë')
    assert fts5_query(clauses) == (
        '("bob" OR "robert" OR "b") AND ("smith" OR "s") '
        'AND ("obrien" OR "o" OR ("O" AND "Brien")) AND "m"* AND ("zoe" OR "z")'
    )
    # The same for PostgreSQL: verbatim lexemes, folded as the index folds them.
    assert tsquery(clauses) == (
        "(('bob') | ('robert') | ('b')) & (('smith') | ('s')) "
        "& (('obrien') | ('o') | ('o' & 'brien')) & ('m':*) & (('zoe') | ('z'))"
    )


# --------------------------------------------------------------------------- decision

ID = iter(range(1, 1000))


def record(
    name: str,
    fit: Fit = Fit.EXACT,
    *,
    email: str = "",
    phone: str = "",
    address: str = "",
    hidden: bool = False,
) -> Candidate:
    parts = parse_name(name).encode()
    row = Row(name, address, address, phone, email, email, "", "", parts)
    return candidate(StoredRow(next(ID), row, 0.0, hidden), fit)


def never(kind: str, value: str) -> bool:
    return False


def outcome(*candidates: Candidate) -> Outcome:
    return decide(TermKind.NAME, candidates, term_suppressed=False, suppressed=never).outcome


def test_records_sharing_a_phone_or_email_with_agreeing_names_are_one_person() -> None:
    a = record("Ada Penrose", phone="+18025550111", address="1 Elm St")
    b = record("Ada Penrose", email="ada@madeup-mail.net", phone="+18025550111")
    c = record("ADA PENROSE", email="ada@madeup-mail.net")
    d = record("Ada Penrose", address="1 Elm St")  # the same name at the same address
    assert len(people([a, b, c, d])) == 1
    assert outcome(a, b, c, d) is Outcome.MATCH


def test_a_shared_landline_does_not_make_a_household_one_person() -> None:
    john = record("John Smith", phone="+16145550100")
    jane = record("Jane Smith", phone="+16145550100")
    assert len(people([john, jane])) == 2
    lookup = decide(TermKind.PHONE, [john, jane], term_suppressed=False, suppressed=never)
    assert lookup.outcome is Outcome.AMBIGUOUS


def test_namesakes_with_nothing_shared_are_two_people() -> None:
    assert outcome(record("Jane Roe", address="Springfield"), record("Jane Roe")) is (
        Outcome.AMBIGUOUS
    )


def test_a_widened_fit_is_a_rival_never_an_answer() -> None:
    exact = record("Mary Brown", address="Columbus")
    rival = record("Mia Brown", Fit.WIDENED, address="Denver")
    assert outcome(exact, rival) is Outcome.AMBIGUOUS
    assert outcome(rival) is Outcome.NO_MATCH
    assert outcome(exact, record("Mark Brown", Fit.NONE)) is Outcome.MATCH


def test_a_hidden_record_of_the_person_suppresses_the_answer() -> None:
    visible = record("Una Greaves", phone="+16025550160", address="2 Mill St")
    hidden = record("Una Greaves", phone="+16025550160", hidden=True)
    assert outcome(visible, hidden) is Outcome.SUPPRESSED
    lookup = decide(TermKind.PHONE, [visible], term_suppressed=True, suppressed=never)
    assert lookup.outcome is Outcome.SUPPRESSED


def test_another_persons_suppressed_number_is_left_out_of_the_answer() -> None:
    john = record("John Smith", phone="+16145550100", email="john@madeup-mail.net")
    lookup = decide(
        TermKind.NAME,
        [john],
        term_suppressed=False,
        suppressed=lambda kind, value: (kind, value) == ("phone", "+16145550100"),
    )
    assert lookup.contact is not None
    assert (lookup.contact.phone, lookup.contact.email) == ("", "john@madeup-mail.net")


def test_the_answer_is_one_record_never_fields_of_several() -> None:
    fuller = record("Ada Penrose", phone="+18025550111", address="1 Elm St", email="a@b.net")
    other = record("Ada Penrose", phone="+18025550111")
    lookup = decide(TermKind.NAME, [other, fuller], term_suppressed=False, suppressed=never)
    assert lookup.contact == fuller.contact


def test_parts_are_what_candidates_compare() -> None:
    assert record("Laura Rodríguez Díaz").parts == NameParts("laura", (), ("rodriguez", "diaz"))
