"""The name searches of the labelled population: names alone, with a city or employer,
initials, partial and longer names, nicknames, misspellings, near-namesakes, names without their
accents, and people who are not in the store."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from worlds.people.known import (
    Index,
    Maker,
    Search,
    SearchKind,
    double_surname,
    make_search,
)
from worlds.people.world import (
    ABROAD,
    NICKNAMES,
    US_PLACES,
    Group,
    Person,
    Status,
    ascii_name,
    fold,
)


def names(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        if ix.only(p.name, p) and ix.only(p.short_name, p):
            yield make_search(p.name, SearchKind.NAME, p)


def with_city(ix: Index, p: Person, city: str) -> list[Person]:
    return [q for q in ix.named(p.name) if fold(q.place.city) == fold(city)]


def name_cities(kind: SearchKind, *groups: Group) -> Maker:
    def make(ix: Index, rng: random.Random) -> Iterator[Search]:
        for p in ix.present(*groups):
            if p.place.city in ix.cities[p.id] and with_city(ix, p, p.place.city) == [p]:
                yield make_search(f"{p.name} {p.place.city}", kind, p)

    return make


def name_employers(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        if not p.company or p.company not in ix.companies[p.id]:
            continue
        company = p.company if rng.random() < 0.6 else p.company.split()[0]
        rivals = [q for q in ix.named(p.name) if fold(company) in fold(q.company)]
        if rivals == [p]:
            yield make_search(f"{p.name} {company}", SearchKind.NAME_EMPLOYER, p)


def common_names(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        same = [q for q in ix.named(p.name) if q.status is Status.PRESENT]
        if len(same) > 1 and same[0] is p:
            for term in (p.name, f"{p.family}, {p.given}", p.name.upper()):
                yield make_search(term, SearchKind.COMMON_NAME, p, answer=False)


def wrong_cities(ix: Index, rng: random.Random) -> Iterator[Search]:
    cities: dict[str, list[str]] = defaultdict(list)
    for place in US_PLACES + ABROAD:
        cities[place.region].append(place.city)
    for p in ix.present():
        if ix.only(p.name, p):
            city = rng.choice([c for c in cities[p.place.region] if c != p.place.city])
            yield make_search(f"{p.name} {city}", SearchKind.NAME_WRONG_CITY, p, answer=False)


def initials(ix: Index, rng: random.Random) -> Iterator[Search]:
    by_initial: dict[tuple[str, str], list[Person]] = defaultdict(list)
    by_family_initial: dict[tuple[str, str], list[Person]] = defaultdict(list)
    for p in ix.everyone:
        given, family = fold(p.given), fold(p.family)
        by_initial[given[0], family].append(p)
        by_family_initial[given, family[0]].append(p)
    for p in ix.present():
        given, family = fold(p.given), fold(p.family)
        if len(by_initial[given[0], family]) > 1:
            yield make_search(f"{p.given[0]}. {p.family}", SearchKind.INITIAL, p, answer=False)
        elif len(by_family_initial[given, family[0]]) > 1:
            yield make_search(f"{p.given} {p.family[0]}.", SearchKind.INITIAL, p, answer=False)


def partials(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        if p.middle and ix.only(p.short_name, p):
            yield make_search(p.short_name, SearchKind.PARTIAL, p)
        first = f"{p.given} {p.family.split()[0]}"
        if double_surname(p) and ix.only(first, p):
            yield make_search(first, SearchKind.PARTIAL, p)


def inside_longer(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        if not double_surname(p):
            continue
        term = f"{p.given} {p.family.split()[1]}"
        others = [q for q in ix.named(term) if q is not p]
        if not others:
            yield make_search(term, SearchKind.NAME_INSIDE_LONGER, p, answer=False)
        elif len(others) == 1:
            q = others[0]
            yield make_search(term, SearchKind.NAME_INSIDE_LONGER, q, q.status is Status.PRESENT)


def nicknames(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        nick = NICKNAMES.get(p.given)
        if nick and ix.only(p.short_name, p) and not ix.named(f"{nick} {p.family}"):
            yield make_search(f"{nick} {p.family}", SearchKind.NICKNAME, p)


def _typo(word: str, rng: random.Random) -> str:
    at = rng.randrange(1, len(word) - 2)
    how = rng.randrange(3)
    if how == 0:  # two letters swapped
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    if how == 1:  # a letter left out
        return word[:at] + word[at + 1 :]
    return word[:at] + word[at] + word[at:]  # a letter doubled


def misspelt(ix: Index, rng: random.Random) -> Iterator[Search]:
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
            yield make_search(term, SearchKind.MISSPELT, p)


def misspelt_common(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present(Group.COMMON_NAME):
        word = p.given if len(p.given) >= 4 else p.family
        term = p.short_name.replace(word, _typo(word, rng), 1)
        if fold(term) != fold(p.short_name) and not ix.named(term):
            yield make_search(term, SearchKind.MISSPELT_COMMON, p, answer=False)


def near_namesakes(ix: Index, rng: random.Random) -> Iterator[Search]:
    pairs: dict[str, list[Person]] = defaultdict(list)
    for p in ix.everyone:
        if p.group is Group.NEAR_NAMESAKE:
            pairs[p.link].append(p)
    for pair in pairs.values():
        if all(q.status is Status.PRESENT and ix.only(q.name, q) for q in pair):
            for q in pair:
                yield make_search(q.name, SearchKind.NEAR_NAMESAKE, q)


def accent_free(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.present():
        plain = ascii_name(p.name)
        if plain != p.name and ix.only(p.name, p):
            city = p.place.city in ix.cities[p.id] and rng.random() < 0.3
            term = f"{plain} {ascii_name(p.place.city)}" if city else plain
            yield make_search(term, SearchKind.ACCENT_FREE, p)


# --------------------------------------------------------------------------- no one to find


def absent(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.everyone:
        if p.status is Status.ABSENT and ix.only(p.name, p):
            term = f"{p.name} {p.place.city}" if rng.random() < 0.4 else p.name
            yield make_search(term, SearchKind.ABSENT_PERSON, p, answer=False)


def absent_contacts(ix: Index, rng: random.Random) -> Iterator[Search]:
    for p in ix.everyone:
        if p.status is Status.ABSENT:
            if p.email:
                yield make_search(p.email, SearchKind.ABSENT_CONTACT, p, answer=False)
            if p.phone:
                term = rng.choice((p.phone.national(), p.phone.international()))
                yield make_search(term, SearchKind.ABSENT_CONTACT, p, answer=False)
