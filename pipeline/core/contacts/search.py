"""Contact search without the database: what a term is, and how well a record answers it.

:mod:`pipeline.core.contacts.store` runs the queries and documents the rules; this module holds the
pure parts it applies to their results: term classification, phone and name normalization, the
full-text query, the name score and the final decision (match, no match, ambiguous, suppressed).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import phonenumbers
from rapidfuzz import fuzz

from pipeline.core.address import Syntax, parse_address

__all__ = [
    "Candidate",
    "Contact",
    "Lookup",
    "Outcome",
    "TermKind",
    "classify_term",
    "decide",
    "fts_query",
    "name_confidence",
    "name_words",
    "normalize_phone",
    "person_key",
    "same_person",
    "words",
]


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


# --------------------------------------------------------------------------- terms

# A phone term holds digits and the punctuation people write numbers with, nothing else: letters
# would let phonenumbers read vanity numbers (1-800-FLOWERS) and numbers inside a street address.
_PHONE_TERM: Final = re.compile(r"\+?[\d\s().\-/]+")
_WORD: Final = re.compile(r"[^\W_]+")
# Courtesy titles say nothing about who is meant; a term "Dr Jane Roe" is a term "Jane Roe".
_HONORIFICS: Final = frozenset({"mr", "mrs", "ms", "mx", "miss", "dr", "prof"})
# Words of a name term that take part in a search; the rest is ignored.
_MAX_WORDS: Final = 8


def normalize_phone(raw: str, region: str) -> str:
    """E.164 form of *raw*, or "" when it is no possible number.

    "Possible" (phonenumbers' length check for the number's country) rather than "valid" (the
    number lies in an allocated range): allocations change and lag behind, and a wrong length is
    what typos produce. Numbers without a +country code are read as numbers of *region*.
    A number that would be possible only locally (seven US digits without an area code) is none.
    """
    text = raw.strip()
    if not text:
        return ""
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return ""
    reason = phonenumbers.is_possible_number_with_reason(number)
    if reason != phonenumbers.ValidationResult.IS_POSSIBLE:
        return ""
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def classify_term(term: str, region: str) -> tuple[TermKind, str]:
    """The kind of *term* and its normalized value: email key, E.164 number or name words."""
    if "@" in term:
        parsed = parse_address(term)
        if parsed.syntax not in (Syntax.INVALID, Syntax.EMPTY):
            return TermKind.EMAIL, parsed.key
    if _PHONE_TERM.fullmatch(term.strip()):
        phone = normalize_phone(term, region)
        if phone:
            return TermKind.PHONE, phone
    return TermKind.NAME, " ".join(name_words(term))


def _fold(text: str) -> str:
    # Compatibility decomposition, then drop the combining marks: "Zoë" and "Zoe", "ﬁ" and "fi"
    # compare equal (the FTS5 unicode61 tokenizer's remove_diacritics does the same for the index).
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def words(text: str) -> list[str]:
    """Folded words of *text*: letters and digits, accents dropped, case-folded."""
    return _WORD.findall(_fold(text))


def name_words(term: str) -> list[str]:
    """The words of a name term that count, without courtesy titles, at most eight, no repeats."""
    found = list(dict.fromkeys(words(term)))
    kept = [w for w in found if w not in _HONORIFICS] or found
    return kept[:_MAX_WORDS]


def fts_query(term: str, *, every: bool) -> str:
    """An FTS5 query for the words of *term*: all of them (*every*) or any.

    The words go to FTS5 as written (NFC, not folded) so that its tokenizer treats them exactly
    like the indexed text; each is a quoted string, so no word can act as query syntax.
    """
    raw = list(dict.fromkeys(_WORD.findall(unicodedata.normalize("NFC", term))))
    kept = [w for w in raw if _fold(w) not in _HONORIFICS] or raw
    quoted = [f'"{w}"' for w in kept[:_MAX_WORDS]]
    return (" AND " if every else " OR ").join(quoted)


def person_key(name: str, address: str) -> str:
    """Who a record is about when identifiers differ: folded name and address; "" if either is."""
    name_part, address_part = " ".join(words(name)), " ".join(words(address))
    return f"{name_part}|{address_part}" if name_part and address_part else ""


# --------------------------------------------------------------------------- name score

# rapidfuzz ratio (0-100, normalized Indel similarity) at which two words count as the same word:
# one letter missing or extra in a word of five letters or more, one wrong letter from ten on.
_SAME_WORD: Final = 90
# Words shorter than this, and numbers, must match exactly: a ratio over two or three letters
# is too coarse ("IL" against "IN"), and a house number or postcode is right or wrong.
_FUZZY_FROM: Final = 4


def _similarity(word: str, others: Sequence[str]) -> float:
    if word in others:
        return 100.0
    if len(word) < _FUZZY_FROM or word.isdigit():
        return 0.0
    return max((fuzz.ratio(word, other) for other in others), default=0.0)


def name_confidence(term: Sequence[str], name: Sequence[str], context: Sequence[str]) -> float:
    """How well the term's words name a record, from 0 to 1.

    *term* are the term's folded words, *name* the record's name words, *context* the words of
    its address (city included) and employer. A term word that matches a context word (better
    than any name word) narrows the search to that place or employer and leaves the comparison;
    every other word must be part of the name, so a word that fits neither counts against it.
    The rest is compared with the record's name by rapidfuzz's token_sort_ratio (word order
    does not matter, typos cost a little), and also with its first and last word alone when the
    name has more, so a middle name may be left out. A term with no name words scores 0.
    """
    if not name:
        return 0.0
    rest = [w for w in term if not _narrows(w, name, context)]
    if not rest:
        return 0.0
    text = " ".join(rest)
    score = fuzz.token_sort_ratio(text, " ".join(name))
    if len(name) > 2:
        score = max(score, fuzz.token_sort_ratio(text, f"{name[0]} {name[-1]}"))
    return score / 100


def _narrows(word: str, name: Sequence[str], context: Sequence[str]) -> bool:
    place = _similarity(word, context)
    return place >= _SAME_WORD and place > _similarity(word, name)


# --------------------------------------------------------------------------- decision


def same_person(a: Candidate, b: Candidate) -> bool:
    """Two records of one person: a shared email or phone, or the same name at the same address."""
    return bool(
        (a.email_key and a.email_key == b.email_key)
        or (a.contact.phone and a.contact.phone == b.contact.phone)
        or (a.person and a.person == b.person)
    )


def decide(
    kind: TermKind,
    candidates: Sequence[Candidate],
    *,
    min_confidence: float,
    margin: float,
    suppressed: Callable[[Sequence[Candidate]], bool],
) -> Lookup:
    """The answer to a search from its scored candidates.

    The best candidate (ties: the fuller record, then the newer one) must reach
    *min_confidence*. If any record of the same person is *suppressed*, the answer is
    SUPPRESSED; if a different person scores within *margin* of the best, AMBIGUOUS; else MATCH.
    """
    ranked = sorted(
        candidates,
        key=lambda c: (c.confidence, c.filled(), c.imported_at, c.contact.record_id),
        reverse=True,
    )
    if not ranked or ranked[0].confidence < min_confidence:
        return Lookup(kind, Outcome.NO_MATCH, None, ranked[0].confidence if ranked else 0.0)
    best = ranked[0]
    if suppressed([c for c in ranked if same_person(c, best)]):
        return Lookup(kind, Outcome.SUPPRESSED, None, 0.0)
    rival = next((c for c in ranked if not same_person(c, best)), None)
    if rival is not None and rival.confidence >= best.confidence - margin:
        return Lookup(kind, Outcome.AMBIGUOUS, None, best.confidence)
    return Lookup(kind, Outcome.MATCH, best.contact, best.confidence)
