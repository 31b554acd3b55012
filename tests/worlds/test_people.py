"""The labelled population: the same every time, and its truth true to the rows it writes."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import phonenumbers
import pytest

from pipeline.core.contacts.identity import normalize_phone
from pipeline.core.contacts.importer import normalize_rows, read_contacts
from worlds.people.population import (
    Group,
    Person,
    Population,
    Search,
    SearchKind,
    build,
    write,
)
from worlds.people.searches import PINNED
from worlds.people.world import SPANISH_FAMILY, Status, fold

NO_ANSWER = {
    SearchKind.COMMON_NAME, SearchKind.NAME_WRONG_CITY, SearchKind.INITIAL,
    SearchKind.MISSPELT_COMMON, SearchKind.ABSENT_PERSON, SearchKind.ABSENT_CONTACT,
    SearchKind.ERASED_PERSON, SearchKind.SUPPRESSED_PERSON, SearchKind.SHARED_PHONE,
    SearchKind.SHARED_EMAIL,
}  # fmt: skip
EITHER = {SearchKind.PHONE_NATIONAL, SearchKind.NAME_INSIDE_LONGER}  # some have, some have not
OFCOM_DRAMA = ("2079460", "1134960", "1614960", "1314960", "7700900")


@pytest.fixture(scope="module")
def population() -> Population:
    return build()


def searches(population: Population, kind: SearchKind) -> list[Search]:
    found = [s for s in population.searches if s.kind is kind]
    assert found, f"no {kind} searches"
    return found


def digits(text: str) -> str:
    return re.sub(r"\D", "", text.split(" ext")[0])


def rows_by_person(population: Population) -> dict[str, list[str]]:
    """Each person's rows as one text (name, phone digits, lower-case email)."""
    found: dict[str, list[str]] = defaultdict(list)
    for row in population.rows:
        found[row.person].append(f"{row.name}|{digits(row.phone)}|{row.email.lower()}")
    return found


def test_the_same_seed_gives_the_same_people_rows_and_searches(population: Population) -> None:
    assert build() == population


def test_the_population_has_every_group_status_and_search_kind(population: Population) -> None:
    assert 4500 <= len(population.people) <= 5300
    assert 4500 <= len(population.searches) <= 5500
    assert {p.group for p in population.people} == set(Group)
    assert {p.status for p in population.people} == set(Status)
    assert {s.kind for s in population.searches} == set(SearchKind)
    smiths = [p for p in population.people if p.name == "John Smith"]
    assert len(smiths) == 20 and len({p.place.city for p in smiths}) >= 15


def test_every_search_names_a_present_person_or_no_one(population: Population) -> None:
    people = population.by_id
    assert len({s.term for s in population.searches}) == len(population.searches)
    for s in population.searches:
        subject = people[s.subject]
        assert s.term.strip() and s.group is subject.group, s
        if s.intended:
            assert s.intended == s.subject and subject.status is Status.PRESENT, s
        if s.kind in NO_ANSWER:
            assert not s.intended, s
        elif s.kind not in EITHER:
            assert s.intended, s
    answered = Counter(bool(s.intended) for s in population.searches if s.kind in EITHER)
    assert answered[True] and answered[False]


def test_emails_and_numbers_searched_for_are_the_intended_persons_alone(
    population: Population,
) -> None:
    owned = Counter(
        address.lower() for p in population.people for address in (p.email, p.work_email) if address
    )
    assert max(owned.values()) == 1
    own_numbers = Counter(p.phone.e164 for p in population.people if p.phone)
    assert max(own_numbers.values()) == 1
    for s in searches(population, SearchKind.EMAIL):
        person = population.by_id[s.intended]
        assert s.term.lower() in (person.email, person.work_email)
    for s in searches(population, SearchKind.PHONE_E164):
        phone = population.by_id[s.intended].phone
        assert phone is not None and normalize_phone(s.term, "US") == phone.e164


def test_shared_numbers_and_mailboxes_are_shared_by_present_people(
    population: Population,
) -> None:
    rows = rows_by_person(population)
    by_number: dict[str, list[Person]] = defaultdict(list)
    by_mailbox: dict[str, list[Person]] = defaultdict(list)
    for p in (p for p in population.people if p.status is Status.PRESENT):
        phone, mailbox = p.shared_phone, p.shared_email
        if phone and any(f"|{phone.nsn}" in r or f"1{phone.nsn}|" in r for r in rows[p.id]):
            by_number[phone.nsn].append(p)
        if mailbox and any(r.endswith(f"|{mailbox}") for r in rows[p.id]):
            by_mailbox[mailbox].append(p)
    for s in searches(population, SearchKind.SHARED_PHONE):
        assert len(by_number[digits(s.term)[-10:]]) >= 2, s
    for s in searches(population, SearchKind.SHARED_EMAIL):
        assert len(by_mailbox[s.term]) >= 2, s


def forms(p: Person) -> set[tuple[str, ...]]:
    """The names a term may use for *p*, as sorted folded words: full, without the middle
    name, and (a Spanish double surname) with the first surname alone."""
    names = {p.name, p.short_name}
    family = p.family.split()
    if len(family) == 2 and all(w in SPANISH_FAMILY for w in family):
        names.add(f"{p.given} {family[0]}")
    return {tuple(sorted(fold(n).split())) for n in names}


def test_names_searched_for_fit_whom_the_label_says(population: Population) -> None:
    fits: dict[tuple[str, ...], list[Person]] = defaultdict(list)
    for p in population.people:
        for form in forms(p):
            fits[form].append(p)

    def named(term: str) -> list[Person]:
        return fits[tuple(sorted(fold(term).split()))]

    for kind in (SearchKind.NAME, SearchKind.NEAR_NAMESAKE, SearchKind.PARTIAL):
        for s in searches(population, kind):
            assert named(s.term) == [population.by_id[s.intended]], s
    for s in searches(population, SearchKind.COMMON_NAME):
        assert sum(p.status is Status.PRESENT for p in named(s.term)) >= 2, s
    for s in searches(population, SearchKind.ABSENT_PERSON):
        subject = population.by_id[s.subject]
        assert subject.status is Status.ABSENT and named(subject.name) == [subject], s
    for kind, status in (
        (SearchKind.ERASED_PERSON, Status.ERASED),
        (SearchKind.SUPPRESSED_PERSON, Status.SUPPRESSED),
    ):
        assert all(population.by_id[s.subject].status is status for s in searches(population, kind))


def test_known_confusions_are_always_searched_for(population: Population) -> None:
    by_term = {s.term: s for s in population.searches}
    for term, kind, name, city in PINNED:
        search = by_term[term]
        subject = population.by_id[search.subject]
        assert search.kind is kind and not search.intended
        assert subject.name == name and city in ("", subject.place.city)
    assert population.by_id[by_term["Mary Cooper"].subject].status is Status.ERASED
    assert any(p.name == "Mark Cooper" and p.status is Status.PRESENT for p in population.people)


def test_initials_fit_two_people_or_more(population: Population) -> None:
    people = Counter((fold(p.given), fold(p.family)) for p in population.people)
    initial = Counter((g[0], f) for g, f in people.elements())
    family_initial = Counter((g, f[0]) for g, f in people.elements())
    for s in searches(population, SearchKind.INITIAL):
        if s.term[1:3] == ". ":  # "M. Brown"
            assert initial[fold(s.term[0]), fold(s.term[3:])] >= 2, s
        else:  # "Kofi A."
            assert s.term.endswith(".")
            assert family_initial[fold(s.term[:-3]), fold(s.term[-2])] >= 2, s


def test_who_is_imported_and_who_opts_out(population: Population) -> None:
    rows = rows_by_person(population)
    for p in population.people:
        assert bool(rows[p.id]) is (p.status is not Status.ABSENT), p.id
    opted = {p.id: p for p in population.people if p.status in (Status.ERASED, Status.SUPPRESSED)}
    assert sorted(o.person for o in population.optouts) == sorted(opted)
    for request in population.optouts:
        person = opted[request.person]
        assert request.action == ("erase" if person.status is Status.ERASED else "suppress")
        assert request.email or request.phone
        assert request.email in ("", person.email)
        assert request.phone in ("", person.phone.e164 if person.phone else "")
    again = {r.person for r in population.update_rows}
    assert again & set(opted) and again - set(opted)


def test_households_and_offices_share_one_number(population: Population) -> None:
    numbers: dict[str, set[str]] = defaultdict(set)
    members: Counter[str] = Counter()
    for p in population.people:
        if p.group in (Group.HOUSEHOLD, Group.SWITCHBOARD):
            assert p.shared_phone is not None
            numbers[p.link].add(p.shared_phone.e164)
            members[p.link] += 1
    assert all(len(n) == 1 for n in numbers.values())
    assert sum(1 for n in members.values() if n >= 2) >= 250


def test_numbers_are_in_ranges_that_reach_no_one(population: Population) -> None:
    for p in population.people:
        for phone in (p.phone, p.shared_phone):
            if phone is None:
                continue
            if phone.region == "US":
                assert phone.nsn[3:8] == "55501", phone  # NANP 555-0100 to 555-0199
            elif phone.region == "GB":
                assert phone.nsn.startswith(OFCOM_DRAMA), phone
            else:
                number = phonenumbers.parse(phone.e164)
                assert phonenumbers.is_possible_number(number), phone
                assert not phonenumbers.is_valid_number(number), phone


def test_some_foreign_numbers_read_as_us_numbers_are_us_peoples(population: Population) -> None:
    us = {p.phone.e164: p for p in population.people if p.phone and p.phone.region == "US"}
    rows = rows_by_person(population)
    twins = [
        p for p in population.people
        if p.phone and p.phone.region in ("MX", "IN")
        and normalize_phone(p.phone.national(), "US") in us
        and any(f"|{digits(p.phone.national())}|" in r for r in rows[p.id])
    ]  # fmt: skip
    assert len(twins) >= 20


def test_the_contacts_file_is_what_the_import_accepts(
    population: Population, tmp_path: Path
) -> None:
    path = write(population, tmp_path)["contacts"]
    table = read_contacts(path)
    # Numbers are checked on a sample (phonenumbers is slow); names and emails on every row.
    phones = table.columns["Phone"]
    table.columns["Phone"] = [phone if at % 20 == 0 else "" for at, phone in enumerate(phones)]
    normalized, rejected = normalize_rows(table, path, "US")
    assert not rejected and len(normalized) == len(population.rows)
    assert sum(1 for _, row in normalized if row.email_key) == sum(
        1 for r in population.rows if r.email
    )
    for (_, row), source in zip(normalized[::20], population.rows[::20], strict=True):
        person = population.by_id[source.person]
        own = [p.e164 for p in (person.phone, person.shared_phone) if p and p.region == "US"]
        if source.phone and own and digits(source.phone)[-10:] in {e[-10:] for e in own}:
            assert row.phone in own, (source, row)
