"""The searches of the labelled population, and what each one's right answer is.

:func:`searches` makes about 5,000 of them for the people of
:mod:`~pipeline.sandbox.people.cast`, a quota per :class:`SearchKind` drawn from every search of
that kind the population allows. Whether a search has an answer is decided here, from what the
people's rows told the store (:class:`_Index`); :mod:`pipeline.sandbox.people.population`
documents the rule.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import phonenumbers
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from pipeline.sandbox.people.world import (
    ABROAD,
    NICKNAMES,
    SPANISH_FAMILY,
    US_PLACES,
    ContactRow,
    Group,
    Person,
    Status,
    ascii_name,
    fold,
)

__all__ = ["QUOTAS", "Search", "SearchKind", "searches"]


class SearchKind(StrEnum):
    EMAIL = "email"
    PHONE_E164 = "phone_e164"  # +country code, spaced or not
    PHONE_NATIONAL = "phone_national"  # as written in the person's country
    NAME = "name"
    NAME_CITY = "name_city"
    NAME_EMPLOYER = "name_employer"
    COMMON_NAME = "common_name"  # shared by two or more present people: no answer
    NAME_WRONG_CITY = "name_wrong_city"  # a city the person does not live in: no answer
    INITIAL = "initial"  # fits two or more people: no answer
    PARTIAL = "partial"  # middle name or second surname left out
    NAME_INSIDE_LONGER = "name_inside_longer"  # "Laura Díaz" beside Laura Rodríguez Díaz
    NICKNAME = "nickname"
    MISSPELT = "misspelt"
    MISSPELT_COMMON = "misspelt_common"  # no answer
    NEAR_NAMESAKE = "near_namesake"  # the other one, one letter away, is present too
    HOUSEHOLD_MEMBER = "household_member"  # name and city of someone sharing a landline
    ACCENT_FREE = "accent_free"
    ABSENT_PERSON = "absent_person"  # no answer, from here on
    ABSENT_CONTACT = "absent_contact"
    ERASED_PERSON = "erased_person"
    SUPPRESSED_PERSON = "suppressed_person"
    SHARED_PHONE = "shared_phone"
    SHARED_EMAIL = "shared_email"


@dataclass(frozen=True)
class Search:
    term: str
    kind: SearchKind
    intended: str  # the person a right answer names; "" when the right answer is no answer
    subject: str  # whom the term is about, absent, erased and shared ones included
    group: Group  # the subject's


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


Favour = Callable[[Person, "_Index"], bool]
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
    index = _Index(people, rows)
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


def _pinned(ix: _Index) -> Iterator[Search]:
    for term, kind, name, city in PINNED:
        about = [p for p in ix.named(name) if not city or p.place.city == city]
        yield _search(term, kind, about[0], answer=False)


def _take(found: Iterator[Search], kind: SearchKind, ix: _Index, seen: set[str]) -> list[Search]:
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


# --------------------------------------------------------------------------- what is known


class _Index:
    """Who fits a name, and what each person's rows told the store."""

    def __init__(self, people: Sequence[Person], rows: Iterable[ContactRow]) -> None:
        self.people = people
        self.forms: dict[str, list[Person]] = defaultdict(list)
        for p in people:
            for form in dict.fromkeys(_forms(p)):
                self.forms[form].append(p)
        self.emails: dict[str, set[str]] = defaultdict(set)  # person: emails its rows carry
        self.numbers: dict[str, set[str]] = defaultdict(set)  # person: digits its rows carry
        self.cities: dict[str, set[str]] = defaultdict(set)
        self.companies: dict[str, set[str]] = defaultdict(set)
        for row in rows:
            self.emails[row.person].add(row.email.lower())
            self.numbers[row.person].add(re.sub(r"\D", "", row.phone.split(" ext")[0]))
            self.cities[row.person].add(row.city)
            self.companies[row.person].add(row.company)
        self.folded = {p.id: fold(p.short_name) for p in people}
        self._present = [p for p in people if p.status is Status.PRESENT]
        self.everyone = list(people)  # in the order of the kind at hand (shuffle)
        self.by_id = {p.id: p for p in people}
        holders: dict[str, list[str]] = defaultdict(list)
        for p in people:
            if p.phone:
                holders[p.phone.nsn].append(p.id)
        self.twinned: set[str] = {i for ids in holders.values() if len(ids) > 1 for i in ids}

    def named(self, term: str) -> list[Person]:
        return self.forms.get(fold(term), [])

    def only(self, term: str, p: Person) -> bool:
        return self.named(term) == [p]

    def knows_phone(self, p: Person, shared: bool = False) -> bool:
        phone = p.shared_phone if shared else p.phone
        return phone is not None and any(d.endswith(phone.nsn) for d in self.numbers[p.id])

    def shuffle(self, rng: random.Random) -> None:
        # Sorting by random keys: one rng.random() a person, cheaper than random.shuffle's
        # bounded draws, and as good a permutation for sampling.
        keys = [rng.random() for _ in self.people]
        self.everyone = [self.people[i] for i in sorted(range(len(keys)), key=keys.__getitem__)]
        self._present = [p for p in self.everyone if p.status is Status.PRESENT]

    def present(self, *groups: Group) -> list[Person]:
        return [p for p in self._present if p.group in groups] if groups else self._present


def _forms(p: Person) -> list[str]:
    """The names a term may use for *p*: full, without the middle name, first surname only."""
    forms = [fold(p.name), fold(p.short_name)]
    if _double_surname(p):
        forms.append(fold(f"{p.given} {p.family.split()[0]}"))
    return forms


def _double_surname(p: Person) -> bool:
    words = p.family.split()
    return len(words) == 2 and all(w in SPANISH_FAMILY for w in words)


Maker = Callable[[_Index, random.Random], Iterator[Search]]


def _search(term: str, kind: SearchKind, p: Person, answer: bool = True) -> Search:
    return Search(term, kind, p.id if answer else "", p.id, p.group)


# --------------------------------------------------------------------------- contact details


def _emails(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        for address in (p.email, p.work_email):
            if address and address in ix.emails[p.id]:
                local, domain = address.split("@")
                term = rng.choice(
                    (address, f"{local.title()}@{domain}", f"{local}@{domain.upper()}")
                )
                yield _search(term, SearchKind.EMAIL, p)


def _phones(kind: SearchKind) -> Maker:
    def make(ix: _Index, rng: random.Random) -> Iterator[Search]:
        for p in ix.present():
            if not (p.phone and ix.knows_phone(p)):
                continue
            if kind is SearchKind.PHONE_E164:
                yield _search(rng.choice((p.phone.international(), p.phone.e164)), kind, p)
            else:
                # Written nationally, a twin's ten digits are also a US person's number: the
                # term fits two people. A US number in US style, "(802) 555-0148", fits one,
                # and so does a number written with a trunk prefix no US number has ("0313
                # 555 0188", a German number whose digits after the 0 are a Detroit one's).
                national = p.phone.national()
                twin = p.id in ix.twinned and p.place.region != "US" and _us_number(national)
                yield _search(national, kind, p, answer=not twin)

    return make


def _us_number(written: str) -> bool:
    """Whether *written* is also a possible North American number as it stands."""
    return bool(phonenumbers.is_possible_number(phonenumbers.parse(written, "US")))


def _shared_phones(ix: _Index, rng: random.Random) -> Iterator[Search]:
    holders: dict[str, list[Person]] = defaultdict(list)
    for p in ix.present(Group.HOUSEHOLD, Group.SWITCHBOARD):
        if p.shared_phone and ix.knows_phone(p, shared=True):
            holders[p.shared_phone.e164].append(p)
    for members in holders.values():
        if len(members) > 1 and (phone := members[0].shared_phone):
            term = phone.national() if rng.random() < 0.5 else phone.international()
            yield _search(term, SearchKind.SHARED_PHONE, members[0], answer=False)


def _shared_emails(ix: _Index, rng: random.Random) -> Iterator[Search]:
    holders: dict[str, list[Person]] = defaultdict(list)
    for p in ix.present(Group.HOUSEHOLD, Group.SWITCHBOARD):
        if p.shared_email and p.shared_email in ix.emails[p.id]:
            holders[p.shared_email].append(p)
    for address, members in holders.items():
        if len(members) > 1:
            yield _search(address, SearchKind.SHARED_EMAIL, members[0], answer=False)


# --------------------------------------------------------------------------- names


def _names(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        if ix.only(p.name, p) and ix.only(p.short_name, p):
            yield _search(p.name, SearchKind.NAME, p)


def _with_city(ix: _Index, p: Person, city: str) -> list[Person]:
    return [q for q in ix.named(p.name) if fold(q.place.city) == fold(city)]


def _name_cities(kind: SearchKind, *groups: Group) -> Maker:
    def make(ix: _Index, rng: random.Random) -> Iterator[Search]:
        for p in ix.present(*groups):
            if p.place.city in ix.cities[p.id] and _with_city(ix, p, p.place.city) == [p]:
                yield _search(f"{p.name} {p.place.city}", kind, p)

    return make


def _name_employers(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        if not p.company or p.company not in ix.companies[p.id]:
            continue
        company = p.company if rng.random() < 0.6 else p.company.split()[0]
        rivals = [q for q in ix.named(p.name) if fold(company) in fold(q.company)]
        if rivals == [p]:
            yield _search(f"{p.name} {company}", SearchKind.NAME_EMPLOYER, p)


def _common_names(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        same = [q for q in ix.named(p.name) if q.status is Status.PRESENT]
        if len(same) > 1 and same[0] is p:
            for term in (p.name, f"{p.family}, {p.given}", p.name.upper()):
                yield _search(term, SearchKind.COMMON_NAME, p, answer=False)


def _wrong_cities(ix: _Index, rng: random.Random) -> Iterator[Search]:
    cities: dict[str, list[str]] = defaultdict(list)
    for place in US_PLACES + ABROAD:
        cities[place.region].append(place.city)
    for p in ix.present():
        if ix.only(p.name, p):
            city = rng.choice([c for c in cities[p.place.region] if c != p.place.city])
            yield _search(f"{p.name} {city}", SearchKind.NAME_WRONG_CITY, p, answer=False)


def _initials(ix: _Index, rng: random.Random) -> Iterator[Search]:
    by_initial: dict[tuple[str, str], list[Person]] = defaultdict(list)
    by_family_initial: dict[tuple[str, str], list[Person]] = defaultdict(list)
    for p in ix.everyone:
        given, family = fold(p.given), fold(p.family)
        by_initial[given[0], family].append(p)
        by_family_initial[given, family[0]].append(p)
    for p in ix.present():
        given, family = fold(p.given), fold(p.family)
        if len(by_initial[given[0], family]) > 1:
            yield _search(f"{p.given[0]}. {p.family}", SearchKind.INITIAL, p, answer=False)
        elif len(by_family_initial[given, family[0]]) > 1:
            yield _search(f"{p.given} {p.family[0]}.", SearchKind.INITIAL, p, answer=False)


def _partials(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        if p.middle and ix.only(p.short_name, p):
            yield _search(p.short_name, SearchKind.PARTIAL, p)
        first = f"{p.given} {p.family.split()[0]}"
        if _double_surname(p) and ix.only(first, p):
            yield _search(first, SearchKind.PARTIAL, p)


def _inside_longer(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        if not _double_surname(p):
            continue
        term = f"{p.given} {p.family.split()[1]}"
        others = [q for q in ix.named(term) if q is not p]
        if not others:
            yield _search(term, SearchKind.NAME_INSIDE_LONGER, p, answer=False)
        elif len(others) == 1:
            q = others[0]
            yield _search(term, SearchKind.NAME_INSIDE_LONGER, q, q.status is Status.PRESENT)


def _nicknames(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        nick = NICKNAMES.get(p.given)
        if nick and ix.only(p.short_name, p) and not ix.named(f"{nick} {p.family}"):
            yield _search(f"{nick} {p.family}", SearchKind.NICKNAME, p)


def _typo(word: str, rng: random.Random) -> str:
    at = rng.randrange(1, len(word) - 2)
    how = rng.randrange(3)
    if how == 0:  # two letters swapped
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    if how == 1:  # a letter left out
        return word[:at] + word[at + 1 :]
    return word[:at] + word[at] + word[at:]  # a letter doubled


def _misspelt(ix: _Index, rng: random.Random) -> Iterator[Search]:
    """A typo of a unique name that no one else's name is as close to (Levenshtein, +2)."""
    ids: dict[int, list[str]] = defaultdict(list)  # by length of the folded name
    names: dict[int, list[str]] = defaultdict(list)
    for person, name in ix.folded.items():
        ids[len(name)].append(person)
        names[len(name)].append(name)
    present = ix.present()
    for p in present:
        long = [w for w in (p.given, p.family) if len(w) >= 5 and " " not in w]
        if p.middle or not long or not ix.only(p.short_name, p):
            continue
        word = rng.choice(long)
        term = p.short_name.replace(word, _typo(word, rng), 1)
        folded, reach = fold(term), Levenshtein.distance(fold(term), ix.folded[p.id]) + 1
        near = [
            ids[size][at]
            for size in range(len(folded) - reach, len(folded) + reach + 1)
            for _, _, at in process.extract(
                folded, names[size], scorer=Levenshtein.distance, score_cutoff=reach, limit=2
            )
        ]
        if reach > 1 and near == [p.id]:
            yield _search(term, SearchKind.MISSPELT, p)


def _misspelt_common(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present(Group.COMMON_NAME):
        word = p.given if len(p.given) >= 4 else p.family
        term = p.short_name.replace(word, _typo(word, rng), 1)
        if fold(term) != fold(p.short_name) and not ix.named(term):
            yield _search(term, SearchKind.MISSPELT_COMMON, p, answer=False)


def _near_namesakes(ix: _Index, rng: random.Random) -> Iterator[Search]:
    pairs: dict[str, list[Person]] = defaultdict(list)
    for p in ix.everyone:
        if p.group is Group.NEAR_NAMESAKE:
            pairs[p.link].append(p)
    for pair in pairs.values():
        if all(q.status is Status.PRESENT and ix.only(q.name, q) for q in pair):
            for q in pair:
                yield _search(q.name, SearchKind.NEAR_NAMESAKE, q)


def _accent_free(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        plain = ascii_name(p.name)
        if plain != p.name and ix.only(p.name, p):
            city = p.place.city in ix.cities[p.id] and rng.random() < 0.3
            term = f"{plain} {ascii_name(p.place.city)}" if city else plain
            yield _search(term, SearchKind.ACCENT_FREE, p)


# --------------------------------------------------------------------------- no one to find


def _absent(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.everyone:
        if p.status is Status.ABSENT and ix.only(p.name, p):
            term = f"{p.name} {p.place.city}" if rng.random() < 0.4 else p.name
            yield _search(term, SearchKind.ABSENT_PERSON, p, answer=False)


def _absent_contacts(ix: _Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.everyone:
        if p.status is Status.ABSENT:
            if p.email:
                yield _search(p.email, SearchKind.ABSENT_CONTACT, p, answer=False)
            if p.phone:
                term = rng.choice((p.phone.national(), p.phone.international()))
                yield _search(term, SearchKind.ABSENT_CONTACT, p, answer=False)


def _opted_out(status: Status, kind: SearchKind) -> Maker:
    def make(ix: _Index, rng: random.Random) -> Iterator[Search]:
        for p in ix.everyone:
            if p.status is not status:
                continue
            terms = [p.email] if p.email and p.email in ix.emails[p.id] else []
            if p.phone and ix.knows_phone(p):
                terms.append(rng.choice((p.phone.national(), p.phone.international())))
            if ix.only(p.name, p):
                terms.append(p.name)
            elif _with_city(ix, p, p.place.city) == [p]:
                terms.append(f"{p.name} {p.place.city}")
            for term in rng.sample(terms, min(2, len(terms))):
                yield _search(term, kind, p, answer=False)

    return make


_MAKERS: Final[dict[SearchKind, Maker]] = {
    SearchKind.EMAIL: _emails,
    SearchKind.PHONE_E164: _phones(SearchKind.PHONE_E164),
    SearchKind.PHONE_NATIONAL: _phones(SearchKind.PHONE_NATIONAL),
    SearchKind.NAME: _names,
    SearchKind.NAME_CITY: _name_cities(SearchKind.NAME_CITY),
    SearchKind.NAME_EMPLOYER: _name_employers,
    SearchKind.COMMON_NAME: _common_names,
    SearchKind.NAME_WRONG_CITY: _wrong_cities,
    SearchKind.INITIAL: _initials,
    SearchKind.PARTIAL: _partials,
    SearchKind.NAME_INSIDE_LONGER: _inside_longer,
    SearchKind.NICKNAME: _nicknames,
    SearchKind.MISSPELT: _misspelt,
    SearchKind.MISSPELT_COMMON: _misspelt_common,
    SearchKind.NEAR_NAMESAKE: _near_namesakes,
    SearchKind.HOUSEHOLD_MEMBER: _name_cities(SearchKind.HOUSEHOLD_MEMBER, Group.HOUSEHOLD),
    SearchKind.ACCENT_FREE: _accent_free,
    SearchKind.ABSENT_PERSON: _absent,
    SearchKind.ABSENT_CONTACT: _absent_contacts,
    SearchKind.ERASED_PERSON: _opted_out(Status.ERASED, SearchKind.ERASED_PERSON),
    SearchKind.SUPPRESSED_PERSON: _opted_out(Status.SUPPRESSED, SearchKind.SUPPRESSED_PERSON),
    SearchKind.SHARED_PHONE: _shared_phones,
    SearchKind.SHARED_EMAIL: _shared_emails,
}
