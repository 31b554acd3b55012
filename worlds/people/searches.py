"""The searches of the labelled population, and what each one's right answer is.

:func:`searches` makes about 5,000 of them for the people of
:mod:`~worlds.people.cast`, a quota per :class:`SearchKind` drawn from every search of
that kind the population allows. Whether a search has an answer is decided here, from what the
people's rows told the store (:class:`Index`); :mod:`worlds.people.population`
documents the rule.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

import phonenumbers

from worlds.people.known import Index, Maker, Search, SearchKind, make_search
from worlds.people.name_searches import (
    absent,
    absent_contacts,
    accent_free,
    common_names,
    initials,
    inside_longer,
    misspelt,
    misspelt_common,
    name_cities,
    name_employers,
    names,
    near_namesakes,
    nicknames,
    partials,
    with_city,
    wrong_cities,
)
from worlds.people.world import (
    ContactRow,
    Group,
    Person,
    Status,
)

__all__ = ["QUOTAS", "Search", "SearchKind", "searches"]


QUOTAS: Final = {
    SearchKind.EMAIL: 700, SearchKind.PHONE_E164: 450, SearchKind.PHONE_NATIONAL: 550,
    SearchKind.NAME: 500, SearchKind.NAME_CITY: 450, SearchKind.NAME_EMPLOYER: 250,
    SearchKind.COMMON_NAME: 80, SearchKind.NAME_WRONG_CITY: 150, SearchKind.INITIAL: 150,
    SearchKind.PARTIAL: 150, SearchKind.NAME_INSIDE_LONGER: 100, SearchKind.NICKNAME: 100,
    SearchKind.MISSPELT: 250, SearchKind.MISSPELT_COMMON: 60, SearchKind.NEAR_NAMESAKE: 100,
    SearchKind.HOUSEHOLD_MEMBER: 150, SearchKind.ACCENT_FREE: 120,
    SearchKind.ABSENT_PERSON: 150, SearchKind.ABSENT_CONTACT: 80,
    SearchKind.ERASED_PERSON: 170, SearchKind.SUPPRESSED_PERSON: 110,
    SearchKind.SHARED_PHONE: 150, SearchKind.SHARED_EMAIL: 45,
}  # fmt: skip


Favour = Callable[[Person, "Index"], bool]
# A share of a kind's quota goes to the people it tests hardest: common names and double
# surnames for name + city, foreign numbers and the US numbers a foreign one is misread as.
FAVOURED: Final[dict[SearchKind, tuple[Favour, float]]] = {
    SearchKind.NAME_CITY: (lambda p, ix: p.group in (Group.COMMON_NAME, Group.MULTI_PART), 0.4),
    SearchKind.NAME_EMPLOYER: (lambda p, ix: p.group is Group.COMMON_NAME, 0.2),
    SearchKind.PHONE_E164: (lambda p, ix: p.group is Group.FOREIGN or p.id in ix.twinned, 0.3),
    SearchKind.PHONE_NATIONAL: (lambda p, ix: p.group is Group.FOREIGN or p.id in ix.twinned, 0.3),
}


def searches(
    people: Sequence[Person], rows: Iterable[ContactRow], rng: random.Random
) -> list[Search]:
    """Each kind's quota of searches, no term twice.

    Every kind walks the people in an order of its own (a fresh shuffle) and takes the first
    searches it finds, which is a random sample of them without making them all.
    """
    index = Index(people, rows)
    chosen = list(_pinned(index))
    seen = {s.term for s in chosen}
    for kind, make in _MAKERS.items():
        index.shuffle(rng)
        picked = _take(make(index, rng), kind, index, seen)
        seen.update(s.term for s in picked)
        chosen += picked
    return chosen


# Confusions seen in lookups, always searched for: (term, kind, whom it is about, their city).
# None of them has an answer.
PINNED: Final = (
    ("Mary Cooper", SearchKind.ERASED_PERSON, "Mary Cooper", ""),  # Mark Cooper is present
    ("Amanda Hill", SearchKind.ABSENT_PERSON, "Amanda Hill", ""),  # Amanda Hall is present
    ("Lisa Gómez", SearchKind.ABSENT_PERSON, "Lisa Gómez", ""),  # Julia Gómez is present
    ("Roberto Hernández García Orlando", SearchKind.ERASED_PERSON, "Roberto Hernández García",
     "Orlando"),  # the one in Columbus is present
    ("Kofi A.", SearchKind.INITIAL, "Kofi Ali", ""),  # and Kofi Asante
    ("Jhon Smith", SearchKind.MISSPELT_COMMON, "John Smith", ""),  # one of twenty
)  # fmt: skip


def _pinned(ix: Index) -> Iterator[Search]:
    for term, kind, name, city in PINNED:
        about = [p for p in ix.named(name) if not city or p.place.city == city]
        yield make_search(term, kind, about[0], answer=False)


def _take(found: Iterator[Search], kind: SearchKind, ix: Index, seen: set[str]) -> list[Search]:
    """The kind's quota, a share of it (FAVOURED) from the searches that matter most for it."""
    quota = QUOTAS[kind]
    rule = FAVOURED.get(kind)
    share = round(quota * rule[1]) if rule else 0
    favoured: list[Search] = []
    others: list[Search] = []
    terms = set(seen)
    for search in found:
        if search.term in terms:
            continue
        terms.add(search.term)
        if rule and len(favoured) < share and rule[0](ix.by_id[search.subject], ix):
            favoured.append(search)
        elif len(others) < quota:
            others.append(search)
        if len(favoured) >= share and len(others) >= quota - share:
            break
    return favoured + others[: quota - len(favoured)]


# --------------------------------------------------------------------------- contact details


def _emails(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        for address in (p.email, p.work_email):
            if address and address in ix.emails[p.id]:
                local, domain = address.split("@")
                term = rng.choice(
                    (address, f"{local.title()}@{domain}", f"{local}@{domain.upper()}")
                )
                yield make_search(term, SearchKind.EMAIL, p)


def _phones(kind: SearchKind) -> Maker:
    def make(ix: Index, rng: random.Random) -> Iterator[Search]:
        for p in ix.present():
            if not (p.phone and ix.knows_phone(p)):
                continue
            if kind is SearchKind.PHONE_E164:
                yield make_search(rng.choice((p.phone.international(), p.phone.e164)), kind, p)
            else:
                # Written nationally, a twin's ten digits are also a US person's number: the
                # term fits two people. A US number in US style, "(802) 555-0148", fits one,
                # and so does a number written with a trunk prefix no US number has ("0313
                # 555 0188", a German number whose digits after the 0 are a Detroit one's).
                national = p.phone.national()
                twin = p.id in ix.twinned and p.place.region != "US" and _us_number(national)
                yield make_search(national, kind, p, answer=not twin)

    return make


def _us_number(written: str) -> bool:
    """Whether *written* is also a possible North American number as it stands."""
    return bool(phonenumbers.is_possible_number(phonenumbers.parse(written, "US")))


def _shared_phones(ix: Index, rng: random.Random) -> Iterator[Search]:
    holders: dict[str, list[Person]] = defaultdict(list)
    for p in ix.present(Group.HOUSEHOLD, Group.SWITCHBOARD):
        if p.shared_phone and ix.knows_phone(p, shared=True):
            holders[p.shared_phone.e164].append(p)
    for members in holders.values():
        if len(members) > 1 and (phone := members[0].shared_phone):
            term = phone.national() if rng.random() < 0.5 else phone.international()
            yield make_search(term, SearchKind.SHARED_PHONE, members[0], answer=False)


def _shared_emails(ix: Index, rng: random.Random) -> Iterator[Search]:
    holders: dict[str, list[Person]] = defaultdict(list)
    for p in ix.present(Group.HOUSEHOLD, Group.SWITCHBOARD):
        if p.shared_email and p.shared_email in ix.emails[p.id]:
            holders[p.shared_email].append(p)
    for address, members in holders.items():
        if len(members) > 1:
            yield make_search(address, SearchKind.SHARED_EMAIL, members[0], answer=False)


def _opted_out(status: Status, kind: SearchKind) -> Maker:
    def make(ix: Index, rng: random.Random) -> Iterator[Search]:
        for p in ix.everyone:
            if p.status is not status:
                continue
            terms = [p.email] if p.email and p.email in ix.emails[p.id] else []
            if p.phone and ix.knows_phone(p):
                terms.append(rng.choice((p.phone.national(), p.phone.international())))
            if ix.only(p.name, p):
                terms.append(p.name)
            elif with_city(ix, p, p.place.city) == [p]:
                terms.append(f"{p.name} {p.place.city}")
            for term in rng.sample(terms, min(2, len(terms))):
                yield make_search(term, kind, p, answer=False)

    return make


_MAKERS: Final[dict[SearchKind, Maker]] = {
    SearchKind.EMAIL: _emails,
    SearchKind.PHONE_E164: _phones(SearchKind.PHONE_E164),
    SearchKind.PHONE_NATIONAL: _phones(SearchKind.PHONE_NATIONAL),
    SearchKind.NAME: names,
    SearchKind.NAME_CITY: name_cities(SearchKind.NAME_CITY),
    SearchKind.NAME_EMPLOYER: name_employers,
    SearchKind.COMMON_NAME: common_names,
    SearchKind.NAME_WRONG_CITY: wrong_cities,
    SearchKind.INITIAL: initials,
    SearchKind.PARTIAL: partials,
    SearchKind.NAME_INSIDE_LONGER: inside_longer,
    SearchKind.NICKNAME: nicknames,
    SearchKind.MISSPELT: misspelt,
    SearchKind.MISSPELT_COMMON: misspelt_common,
    SearchKind.NEAR_NAMESAKE: near_namesakes,
    SearchKind.HOUSEHOLD_MEMBER: name_cities(SearchKind.HOUSEHOLD_MEMBER, Group.HOUSEHOLD),
    SearchKind.ACCENT_FREE: accent_free,
    SearchKind.ABSENT_PERSON: absent,
    SearchKind.ABSENT_CONTACT: absent_contacts,
    SearchKind.ERASED_PERSON: _opted_out(Status.ERASED, SearchKind.ERASED_PERSON),
    SearchKind.SUPPRESSED_PERSON: _opted_out(Status.SUPPRESSED, SearchKind.SUPPRESSED_PERSON),
    SearchKind.SHARED_PHONE: _shared_phones,
    SearchKind.SHARED_EMAIL: _shared_emails,
}
