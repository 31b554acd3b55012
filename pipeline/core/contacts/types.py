"""The contact wing's value types: records as stored and answered, and what a search found."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pipeline.core.contacts.identity import person_key
from pipeline.core.contacts.names import Fit, NameParts


class TermKind(StrEnum):
    EMAIL = "email"
    PHONE = "phone"
    NAME = "name"  # a name, possibly with words of the city, address or employer


class Outcome(StrEnum):
    MATCH = "match"
    NO_MATCH = "no_match"
    AMBIGUOUS = "ambiguous"  # two different people fit about as well: no answer, never a guess
    SUPPRESSED = "suppressed"  # the person opted out; answered exactly like NO_MATCH


@dataclass(frozen=True)
class Contact:
    record_id: int
    name: str
    address: str
    phone: str  # E.164 (ITU-T E.164, "+" country code and number); "" when unknown
    email: str  # as normalized by parse_address: local part as given, domain lower-case ASCII
    company: str
    title: str

    def as_spec(self) -> dict[str, object]:
        """The contact record of the spec (§2.2): "" for what is unknown, employment always set."""
        return {
            "name": self.name,
            "address": self.address,
            "phone": self.phone,
            "email": self.email,
            "employment": {"company": self.company, "title": self.title},
        }


@dataclass(frozen=True)
class Lookup:
    kind: TermKind
    outcome: Outcome
    contact: Contact | None  # set only for MATCH


@dataclass(frozen=True)
class Candidate:
    """A stored record as a search sees it, and how it fits the term at hand."""

    contact: Contact
    email_key: str  # parse_address(email).key; "" when the record has no valid email
    parts: NameParts
    person: str  # person_key(name, address)
    address_key: str  # folded words of the address: the same name there is the same person
    place_key: str  # folded words of the city
    company_key: str  # folded words of the employer
    imported_at: float
    hidden: bool  # the person opted out (or may be one who did): never an answer
    fit: Fit

    def filled(self) -> int:
        """How many of the record's fields are known: the fuller of two copies is preferred."""
        c = self.contact
        return sum(
            1 for value in (c.name, c.address, c.phone, c.email, c.company, c.title) if value
        )


Rejected = list[tuple[str, str]]


@dataclass(frozen=True)
class Reached:
    """What an opt-out or erasure reached in the contact store."""

    records: int  # the person's records: deleted by an erasure, hidden by a suppression
    lookalikes: (
        int  # records that may be the person's (same name, nothing tells them apart): hidden
    )
    audit: int  # audit records that no longer say whom the lookup was about
    email_keys: tuple[str, ...]  # the person's addresses (dedupe keys), for the other stores


@dataclass(frozen=True)
class ContactImport:
    read: int  # rows found in the file (= imported + merged + rejected)
    imported: int  # new records
    merged: int  # rows merged into a stored record or an earlier row
    rejected: Rejected  # (where, why)


@dataclass(frozen=True)
class Row:
    """One contact, normalized: what a file row becomes and what the table stores."""

    name: str
    address: str
    place: str  # the city; the whole address when the file has no city
    phone: str  # E.164
    email: str
    email_key: str
    company: str
    title: str
    parts: str = ""  # NameParts.encode(): the name's given, middle, surname and suffix

    def identifiers(self) -> list[tuple[str, str]]:
        found = (
            ("email", self.email_key),
            ("phone", self.phone),
            ("person", person_key(self.name, self.address)),
        )
        return [(kind, value) for kind, value in found if value]


@dataclass(frozen=True)
class StoredRow:
    """A stored record: its id, its row and when it was last written."""

    id: int
    row: Row
    imported_at: float
    hidden: bool = False


@dataclass(frozen=True)
class Option:
    """One way a term's word may be in a record: all of *words* (as written, several when
    punctuation splits it), or, with *prefix*, a word starting with the one letter given."""

    words: tuple[str, ...]
    prefix: bool = False


# One word of a search term: the record must hold one of its options.
Clause = tuple[Option, ...]
