"""The labelled population through the contact store: who each search answers with.

The same run as ``bench/bench_identity.py`` (the whole population, every second search), held
to its targets: no answer about the wrong person, none mixing two people, no stored record
mixing two people. Each cause of wrong answers the store once had has its labelled searches
here (see :mod:`worlds.people.searches` for how they are labelled).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.core.config import ContactsConfig
from pipeline.core.contacts.store import ContactStore
from pipeline.core.contacts.types import Outcome
from tests import pg
from worlds.people.population import Group, Population, Search, SearchKind, build, write
from worlds.people.scoring import (
    REGION,
    Owners,
    StoreState,
    Verdict,
    answer_of,
    inspect,
    judge,
    load,
)
from worlds.people.searches import PINNED


@dataclass
class Run:
    population: Population
    first: StoreState  # the store right after the first import
    final: StoreState  # after the opt-outs and the later import
    verdicts: dict[str, Verdict]  # by term
    answers: dict[str, tuple[Outcome, object]]  # by term: the outcome and the record answered
    chosen: list[Search]
    paths: dict[str, Path]
    work: dict[str, dict[Outcome, set[int]]]  # statements per search, by term kind and outcome


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    population = build()
    work_dir = tmp_path_factory.mktemp("population")
    paths = write(population, work_dir)
    owners = Owners(population.rows + population.update_rows)
    present = [p.id for p in population.people if p.status == "present"]
    pinned = {term for term, *_ in PINNED}
    chosen = [s for at, s in enumerate(population.searches) if at % 2 == 0 or s.term in pinned]
    imported = work_dir / "first_import.sqlite"
    with ContactStore(imported, ContactsConfig(region=REGION)) as store:
        store.import_file(paths["contacts"], "contacts")
    first = inspect(imported, owners, present)
    db = work_dir / "contacts.sqlite"
    with ContactStore(db, ContactsConfig(region=REGION)) as store:
        load(store, population, paths)
        verdicts, work = search(store, chosen, owners)
        answers = {s.term: answered(store, s.term) for s in chosen}
    final = inspect(db, owners, present)
    yield Run(population, first, final, verdicts, answers, chosen, paths, work)


def answered(store: ContactStore, term: str) -> tuple[Outcome, object]:
    lookup = store.search(term)
    return lookup.outcome, lookup.contact


def test_postgresql_answers_every_search_as_sqlite_does(run: Run, pg_cluster: pg.Cluster) -> None:
    """The same population loaded into PostgreSQL (its full-text index in place of FTS5): every
    labelled search gets the same outcome and the same record, field by field."""
    with ContactStore(pg_cluster.database(), ContactsConfig(region=REGION)) as store:
        load(store, run.population, run.paths)
        answers = {s.term: answered(store, s.term) for s in run.chosen}
    differ = {t: (run.answers[t], a) for t, a in answers.items() if a != run.answers[t]}
    assert not differ, list(differ.items())[:5]
    assert Counter(o for o, _ in answers.values()) == Counter(o for o, _ in run.answers.values())


def search(
    store: ContactStore, searches: list[Search], owners: Owners
) -> tuple[dict[str, Verdict], dict[str, dict[Outcome, set[int]]]]:
    verdicts: dict[str, Verdict] = {}
    work: dict[str, dict[Outcome, set[int]]] = defaultdict(lambda: defaultdict(set))
    statements: list[str] = []
    store._db._db.set_trace_callback(statements.append)
    for s in searches:
        statements.clear()
        lookup = store.search(s.term)
        c = lookup.contact
        answer = c and answer_of(c.name, c.address, c.phone, c.email, c.company)
        verdicts[s.term] = judge(s, answer, owners)
        own = [x for x in statements if not x.startswith("--") and "'main'." not in x]
        work[lookup.kind.value][lookup.outcome].add(len(own))
    store._db._db.set_trace_callback(None)
    return verdicts, work


def of_kind(run: Run, *kinds: SearchKind) -> Counter[Verdict]:
    found = Counter(
        v for s in run.population.searches if s.kind in kinds and (v := run.verdicts.get(s.term))
    )
    assert found, kinds
    return found


def test_no_answer_is_about_the_wrong_person_or_two_people(run: Run) -> None:
    counts = Counter(run.verdicts.values())
    assert counts[Verdict.WRONG_PERSON] == counts[Verdict.MIXED] == 0, counts
    # Answering nothing is not precision: most searches with a right answer get it.
    assert counts[Verdict.CORRECT] >= 0.6 * len(run.verdicts)


def test_single_owner_emails_and_phones_are_found(run: Run) -> None:
    for kind in (SearchKind.EMAIL, SearchKind.PHONE_E164, SearchKind.PHONE_NATIONAL):
        counts = of_kind(run, kind)
        assert counts[Verdict.CORRECT] >= 0.96 * (
            counts[Verdict.CORRECT] + counts[Verdict.NOT_FOUND]
        )


def test_cause_merges_no_record_mixes_two_people(run: Run) -> None:
    assert run.first.mixed == run.final.mixed == 0
    assert run.first.people_with_own_record == len(
        [p for p in run.population.people if p.status == "present"]
    )
    # A household's landline, an office switchboard, a family mailbox: nobody's alone.
    assert set(of_kind(run, SearchKind.SHARED_PHONE, SearchKind.SHARED_EMAIL)) == {Verdict.REFUSED}
    household = of_kind(run, SearchKind.HOUSEHOLD_MEMBER)
    assert household[Verdict.CORRECT] == sum(household.values())


def test_cause_fuzzy_names_decide_nothing(run: Run) -> None:
    for term in ("Mary Cooper", "Amanda Hill", "Lisa Gómez"):
        assert run.verdicts[term] is Verdict.REFUSED, term
    assert set(of_kind(run, SearchKind.ABSENT_PERSON, SearchKind.MISSPELT_COMMON)) == {
        Verdict.REFUSED
    }
    assert of_kind(run, SearchKind.NEAR_NAMESAKE)[Verdict.CORRECT] > 0
    # A misspelt name is no name: not found, never someone else.
    assert set(of_kind(run, SearchKind.MISSPELT)) == {Verdict.NOT_FOUND}


def test_cause_truncated_candidates_every_namesake_counts(run: Run) -> None:
    assert run.verdicts["Jhon Smith"] is Verdict.REFUSED
    assert set(of_kind(run, SearchKind.COMMON_NAME)) == {Verdict.REFUSED}
    assert of_kind(run, SearchKind.NAME_CITY)[Verdict.CORRECT] > 0


def test_cause_initials_and_partial_names(run: Run) -> None:
    assert run.verdicts["Kofi A."] is Verdict.REFUSED
    assert set(of_kind(run, SearchKind.INITIAL)) == {Verdict.REFUSED}
    inside = of_kind(run, SearchKind.NAME_INSIDE_LONGER, SearchKind.PARTIAL, SearchKind.NICKNAME)
    assert inside[Verdict.WRONG_PERSON] == 0 and inside[Verdict.CORRECT] > 0


def test_cause_a_contradicting_city_rules_a_record_out(run: Run) -> None:
    assert run.verdicts["Roberto Hernández García Orlando"] is Verdict.REFUSED
    assert set(of_kind(run, SearchKind.NAME_WRONG_CITY)) == {Verdict.REFUSED}


def test_cause_national_numbers_in_their_own_country(run: Run) -> None:
    foreign = Counter(
        run.verdicts[s.term]
        for s in run.population.searches
        if s.kind is SearchKind.PHONE_NATIONAL
        and s.group is Group.FOREIGN
        and s.term in run.verdicts
    )
    assert foreign[Verdict.WRONG_PERSON] == 0
    assert foreign[Verdict.CORRECT] >= 0.9 * (foreign[Verdict.CORRECT] + foreign[Verdict.NOT_FOUND])


def test_cause_timing_every_outcome_does_the_same_work(run: Run) -> None:
    for kind, by_outcome in run.work.items():
        assert {o.value for o in by_outcome} >= {"match", "no_match", "ambiguous"}, kind
        assert set().union(*by_outcome.values()) == {4}, (kind, dict(by_outcome))


def test_opted_out_people_are_never_revealed(run: Run) -> None:
    assert set(of_kind(run, SearchKind.ERASED_PERSON, SearchKind.SUPPRESSED_PERSON)) == {
        Verdict.REFUSED
    }


def test_the_labels_read_twins_as_written(run: Run) -> None:
    """A number written with a trunk prefix no US number has is one person's: labelled so."""
    german = [
        s
        for s in run.population.searches
        if s.kind is SearchKind.PHONE_NATIONAL and re.fullmatch(r"0313 555\d{4}", s.term)
    ]
    assert german and all(s.intended for s in german)
