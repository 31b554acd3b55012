"""The contact wing's value types: records as stored and answered, and what a search found."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pipeline.core.contacts.identity import person_key


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
    confidence: float  # the best candidate's score; 0.0 when SUPPRESSED or nothing was found


@dataclass(frozen=True)
class Candidate:
    """A stored record as a search sees it, with its score for the term at hand."""

    contact: Contact
    email_key: str  # parse_address(email).key; "" when the record has no valid email
    person: str  # person_key(name, address)
    imported_at: float
    confidence: float

    def filled(self) -> int:
        """How many of the record's fields are known: the fuller of two copies is preferred."""
        c = self.contact
        return sum(
            1 for value in (c.name, c.address, c.phone, c.email, c.company, c.title) if value
        )


Rejected = list[tuple[str, str]]


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
