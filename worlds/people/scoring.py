"""Judging answers against the labelled population: whom an answer is about, and the store.

Every field of an answer (name, address, phone, email, company) is traced to the people whose
rows carried that value, normalized exactly as the import normalizes it (:class:`Owners`). The
people every field leads to are who the answer can be about (:func:`judge`):

* correct: the intended person is among them;
* wrong person: someone else is, not the intended person (or the search should find nobody);
* mixed answer: no one is, the fields come from two or more people;
* not found: no answer where one was right (no match, ambiguous or suppressed);
* correct refusal: no answer where none was right.

:func:`load` imports a population into a store, applies its opt-outs and imports its later
file; :func:`inspect` tells which stored records mix people. ``bench/bench_identity.py`` and the
tests share these.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pipeline.core.addresses.syntax import parse_address
from pipeline.core.contacts.identity import words
from pipeline.core.contacts.importer import normalize_rows
from pipeline.core.contacts.store import ContactStore
from pipeline.core.contacts.types import ContactImport, Row
from pipeline.core.files.tables import Table
from worlds.people.population import (
    CONTACT_HEADER,
    ContactRow,
    Population,
    Search,
    contact_cells,
)

REGION = "US"  # contacts.region: the default, as a store is set up out of the box


class Verdict(StrEnum):
    CORRECT = "correct"
    WRONG_PERSON = "wrong person"
    MIXED = "mixed answer"
    NOT_FOUND = "not found"
    REFUSED = "correct refusal"


@dataclass(frozen=True)
class Answer:
    """The fields of an answered record that say whom it is about, normalized for tracing."""

    name: str
    address: str
    phone: str
    email_key: str
    company: str


def answer_of(name: str, address: str, phone: str, email: str, company: str) -> Answer:
    key = parse_address(email).key if email else ""
    return Answer(_words(name), _words(address), phone, key, _words(company))


def _words(text: str) -> str:
    return " ".join(words(text))


# --------------------------------------------------------------------------- tracing fields


class Owners:
    """Which people's rows carried each normalized value."""

    def __init__(self, rows: Sequence[ContactRow]) -> None:
        cells = [contact_cells(r) for r in rows]
        table = Table(
            {name: [c[i] for c in cells] for i, name in enumerate(CONTACT_HEADER)},
            [str(i) for i in range(len(rows))],
            [],
        )
        normalized, _ = normalize_rows(table, Path("population"), REGION)
        self._by: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        for where, row in normalized:
            self._add(rows[int(where)].person, row)

    def _add(self, person: str, row: Row) -> None:
        values = answer_of(row.name, row.address, row.phone, row.email, row.company)
        for field, value in vars(values).items():
            if value:
                self._by[field][value].add(person)

    def fields(self, answer: Answer) -> list[set[str]]:
        """For each non-empty field of *answer*, the people whose rows carried its value."""
        return [self._by[f].get(v, set()) for f, v in vars(answer).items() if v]

    def of(self, answer: Answer) -> set[str]:
        """The people every non-empty field of *answer* leads to (empty: a mix)."""
        sets = self.fields(answer)
        return set.intersection(*sets) if sets else set()

    def reveals(self, answer: Answer, hidden: set[str]) -> bool:
        """Whether *answer* is about one of *hidden*, or holds a value only they carried."""
        return bool(self.of(answer) & hidden) or any(s and s <= hidden for s in self.fields(answer))


def judge(search: Search, answer: Answer | None, owners: Owners) -> Verdict:
    if answer is None:
        return Verdict.NOT_FOUND if search.intended else Verdict.REFUSED
    people = owners.of(answer)
    if not people:
        return Verdict.MIXED
    return Verdict.CORRECT if search.intended in people else Verdict.WRONG_PERSON


# --------------------------------------------------------------------------- the store


@dataclass(frozen=True)
class StoreState:
    records: int
    mixed: int  # records whose fields come from two or more people
    people_with_own_record: int  # present people some record is wholly about
    split: int  # present people with two or more records wholly about them alone


def inspect(db: Path, owners: Owners, present: Iterable[str]) -> StoreState:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        rows = con.execute("SELECT name, address, phone, email, company FROM contacts").fetchall()
    about = [owners.of(answer_of(*row)) for row in rows]
    covered = set().union(*about) & set(present)
    alone = Counter(next(iter(a)) for a in about if len(a) == 1)
    split = sum(1 for person, n in alone.items() if n > 1 and person in covered)
    return StoreState(len(rows), sum(1 for a in about if not a), len(covered), split)


def load(store: ContactStore, population: Population, paths: dict[str, Path]) -> dict[str, Any]:
    """Import, opt out, import again; what each step reported."""
    report: dict[str, Any] = {"import": summary(store.import_file(paths["contacts"], "contacts"))}
    counts: Counter[str] = Counter()
    for request in population.optouts:
        act = store.erase if request.action == "erase" else store.suppress
        reached = act(
            email=request.email or None, phone=request.phone or None, name=request.name or None
        )
        counts[f"{request.action} requests"] += 1
        counts[f"records reached by {request.action}"] += reached.records
        counts[f"lookalikes hidden by {request.action}"] += reached.lookalikes
    report["optouts"] = dict(counts)
    report["update"] = summary(store.import_file(paths["contacts_update"], "contacts_update"))
    return report


def summary(result: ContactImport) -> dict[str, int]:
    return {
        "read": result.read,
        "imported": result.imported,
        "merged": result.merged,
        "rejected": len(result.rejected),
    }


def revealed(population: Population, answers: Sequence[Answer | None], owners: Owners) -> int:
    """How many answers reveal an erased or opted-out person."""
    hidden = {p.id for p in population.people if p.status in ("erased", "suppressed")}
    return sum(1 for a in answers if a is not None and owners.reveals(a, hidden))
