"""What the searches of the labelled population are made from: the kinds of search, a search
with its right answer, and an index of who fits a name and what each person's rows told the
store."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from worlds.people.world import (
    SPANISH_FAMILY,
    ContactRow,
    Group,
    Person,
    Status,
    fold,
)


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


class Index:
    """Who fits a name, and what each person's rows told the store."""

    def __init__(self, people: Sequence[Person], rows: Iterable[ContactRow]) -> None:
        self.people = people
        self.forms: dict[str, list[Person]] = defaultdict(list)
        for p in people:
            for form in dict.fromkeys(forms_of(p)):
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


def forms_of(p: Person) -> list[str]:
    """The names a term may use for *p*: full, without the middle name, first surname only."""
    forms = [fold(p.name), fold(p.short_name)]
    if double_surname(p):
        forms.append(fold(f"{p.given} {p.family.split()[0]}"))
    return forms


def double_surname(p: Person) -> bool:
    words = p.family.split()
    return len(words) == 2 and all(w in SPANISH_FAMILY for w in words)


Maker = Callable[[Index, random.Random], Iterator[Search]]


def make_search(term: str, kind: SearchKind, p: Person, answer: bool = True) -> Search:
    return Search(term, kind, p.id if answer else "", p.id, p.group)
