"""Whom an opt-out or an erasure reaches, without the database.

The person (:func:`grow`)
    The records that hold an email or number the request names, whoever's they are (the request
    named that identifier), and then every record linked to one of those by the evidence a
    search groups people by (:func:`~pipeline.core.contacts.search.same_person`: an agreeing
    name and a shared email, phone or address), and so on. A shared landline does not carry the
    opt-out to the rest of the household: their names disagree.

Lookalikes (:func:`lookalike`)
    A record that holds none of the person's identifiers but has a name that agrees with theirs
    (a name their records carry, or the one the request gives), and no city, address or
    employer other than the person's known ones, may be the person's (an old directory entry
    that only the name leads to). It is hidden from every search, by an erasure too, but kept,
    as it may be someone else's. When some of them carry the person's name word for word, only
    those are (:func:`closest`).

The audit log (:func:`audit_values`)
    Lookups whose term was one of the person's email addresses, numbers or names, or that
    answered with one of the records reached, keep that they happened but lose what they were
    about.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import phonenumbers

from pipeline.core.contacts.names import NameParts, names_agree
from pipeline.core.contacts.search import same_person
from pipeline.core.contacts.types import Candidate


def grow(person: dict[int, Candidate], found: Iterable[Candidate]) -> list[Candidate]:
    """The records of *found* that join *person* (a same-person link to one of its records);
    *person* is grown with them in place."""
    joined: list[Candidate] = []
    for c in found:
        rid = c.contact.record_id
        if rid not in person and any(same_person(c, p) for p in person.values()):
            person[rid] = c
            joined.append(c)
    return joined


def lookalike(names: Sequence[NameParts], person: Sequence[Candidate], other: Candidate) -> bool:
    """Whether *other* may be a record of the person with *names* and records *person*: an
    agreeing name, and no city, address or employer other than the person's known ones."""
    if not any(n.given and names_agree(n, other.parts) for n in names):
        return False
    for key in ("place_key", "address_key", "company_key"):
        known = {getattr(p, key) for p in person} - {""}
        value = getattr(other, key)
        if value and known and value not in known:
            return False
    return True


def closest(names: Sequence[NameParts], lookalikes: Sequence[Candidate]) -> list[Candidate]:
    """The lookalikes to hide: those with one of *names* word for word, if any are; else all.
    "Kelly Brittany Perez" asks to leave, and a Kelly Brittany Perez in Austin is held: a Kelly
    Perez in Raleigh, who only may be her, stays."""
    spelled = {tuple(n.tokens()) for n in names}
    same = [c for c in lookalikes if tuple(c.parts.tokens()) in spelled]
    return same or list(lookalikes)


def identifiers(person: Iterable[Candidate]) -> list[tuple[str, str]]:
    """The person's identifiers as the suppression list keeps them."""
    found: dict[tuple[str, str], None] = {}
    for c in person:
        for kind, value in (
            ("email", c.email_key),
            ("phone", c.contact.phone),
            ("person", c.person),
        ):
            if value:
                found[kind, value] = None
    return list(found)


def audit_values(
    person: Iterable[Candidate], seeds: Iterable[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """(kind, normalized term) of the lookups that may have been about the person: their email
    keys and numbers (E.164, and national digits for a term written nationally in another
    country), those the request named (*seeds*), full names and given name + surname."""
    found: dict[tuple[str, str], None] = {}
    named = list(seeds)
    for c in person:
        named += [("email", c.email_key), ("phone", c.contact.phone)]
        if c.parts.given and c.parts.surname:
            found["name", " ".join(c.parts.tokens())] = None
            found["name", " ".join([c.parts.given, *c.parts.surname])] = None
    for kind, value in named:
        found[kind, value] = None
        if kind == "phone":
            found["phone", _national_digits(value)] = None
    return [key for key in found if key[1]]


def _national_digits(e164: str) -> str:
    try:
        number = phonenumbers.parse(e164)
    except phonenumbers.NumberParseException:
        return ""
    national = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
    return "".join(ch for ch in national if ch.isdigit())
