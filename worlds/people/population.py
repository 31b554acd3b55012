"""A labelled population for the contact lookup (``/api/find``): made-up people, the rows a
contact import reads about them, who opts out, and about 5,000 searches whose right answer is
known. It measures how often a search answers with the wrong person.

    from worlds.people.population import build, write
    population = build()            # deterministic: fixed seed, no clock, no network
    write(population, directory)    # or: python -m worlds.people.population DIRECTORY

Files written (UTF-8 CSV)
    ``contacts.csv``         for ``listclean contacts import``: one to three rows per person from
                             the sources of :mod:`~worlds.people.cast`, shuffled (its
                             ``Source`` column is informative; the import ignores it)
    ``optouts.csv``          person, action (erase or suppress), email, phone (E.164), name (as
                             the person gives it): requests to apply after that import
    ``contacts_update.csv``  a later import: half the opted-out people seen again, and repeats
    ``people.csv``           the truth, one row per person, absent ones (never imported) too
    ``searches.csv``         term, kind, intended person ("" when the right answer is no answer),
                             subject (whom the term is about), the subject's group

The people (:class:`Group`): individuals; common names (20 John Smiths and eight others, in
different cities, a few sharing a city but not an employer); households sharing a landline and
sometimes a family mailbox; colleagues behind an office switchboard, small offices sharing an
office mailbox; near-namesakes one letter apart (the other one present, absent, erased or opted
out); accents, Spanish double surnames (some with a separate "given + second surname" person)
and particles; people in Mexico, the UK, Germany, France, India and Spain whose numbers are also
written nationally (25 Mexican and Indian numbers read as a US number are a US person's).

Which searches have an answer
    A search names a person only when the store was given what it uses (the person's rows carry
    that email or number, that city or that employer) and no one else in the population, absent
    people included, fits the term as well. Searches whose right answer is no answer: a name that
    several present people share, an initial ("M. Brown", "Kofi A.") that fits two people, a
    name with a city the person does not live in, the second surname alone when it names nobody,
    a misspelt common name, absent, erased and opted-out people, shared numbers and mailboxes,
    and a Mexican or Indian number written nationally whose digits are also a US person's.
"""

from __future__ import annotations

import csv
import functools
import random
import sys
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Final

from worlds.people.cast import cast
from worlds.people.searches import Search, SearchKind, searches
from worlds.people.world import ContactRow, Group, OptOut, Person, Status

__all__ = [
    "CONTACT_HEADER",
    "SEED",
    "ContactRow",
    "Group",
    "Person",
    "Population",
    "Search",
    "SearchKind",
    "Status",
    "build",
    "contact_cells",
    "write",
]

SEED: Final = 20250611


@dataclass(frozen=True)
class Population:
    people: tuple[Person, ...]
    rows: tuple[ContactRow, ...]
    update_rows: tuple[ContactRow, ...]
    optouts: tuple[OptOut, ...]
    searches: tuple[Search, ...]

    @functools.cached_property
    def by_id(self) -> dict[str, Person]:
        return {p.id: p for p in self.people}


def build(seed: int = SEED) -> Population:
    rng = random.Random(seed)
    made = cast(rng)
    found = searches(made.people, made.rows, rng)
    return Population(
        tuple(made.people), tuple(made.rows), tuple(made.update_rows), tuple(made.optouts),
        tuple(found),
    )  # fmt: skip


# --------------------------------------------------------------------------- files

CONTACT_HEADER: Final = (
    "Name", "Street", "City", "State", "Postcode", "Country", "Phone", "Email", "Company",
    "Title", "Source",
)  # fmt: skip
PEOPLE_HEADER: Final = (
    "id", "group", "status", "name", "given", "middle", "family", "email", "work_email",
    "shared_email", "phone", "shared_phone", "address", "city", "country", "company", "title",
    "link",
)  # fmt: skip


def write(population: Population, directory: Path) -> dict[str, Path]:
    """The population's five files in *directory* (made if missing); their paths by name."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        name: directory / f"{name}.csv"
        for name in ("contacts", "contacts_update", "optouts", "people", "searches")
    }
    _write(paths["contacts"], CONTACT_HEADER, map(contact_cells, population.rows))
    _write(paths["contacts_update"], CONTACT_HEADER, map(contact_cells, population.update_rows))
    _write(paths["optouts"], [f.name for f in fields(OptOut)], map(astuple, population.optouts))
    _write(paths["people"], PEOPLE_HEADER, map(_truth, population.people))
    _write(paths["searches"], [f.name for f in fields(Search)], map(astuple, population.searches))
    return paths


def _write(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def contact_cells(r: ContactRow) -> tuple[str, ...]:
    """A row's cells under CONTACT_HEADER."""
    return (r.name, r.street, r.city, r.state, r.postcode, r.country, r.phone, r.email,
            r.company, r.title, r.source)  # fmt: skip


def _truth(p: Person) -> tuple[str, ...]:
    phone = p.phone.e164 if p.phone else ""
    shared = p.shared_phone.e164 if p.shared_phone else ""
    return (
        p.id, p.group, p.status, p.name, p.given, p.middle, p.family, p.email, p.work_email,
        p.shared_email, phone, shared, p.address, p.place.city, p.place.region, p.company,
        p.title, p.link,
    )  # fmt: skip


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m worlds.people.population DIRECTORY", file=sys.stderr)
        return 2
    population = build()
    for name, path in write(population, Path(argv[0])).items():
        print(f"{name}: {path}")
    print(f"{len(population.people):,} people, {len(population.searches):,} searches")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
