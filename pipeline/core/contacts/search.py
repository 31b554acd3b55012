"""Contact search without the database: what a term is, who it fits, and the decision.

The store runs the queries; this module holds the rules and the pure parts it applies to their
results: term classification, the full-text query, grouping records into people and the final
decision (match, no match, ambiguous, suppressed).

Term classification (:func:`classify_term`)
    1. A term with an ``@`` that ``parse_address`` accepts is an EMAIL. It matches the records
       with the same dedupe key (case-folded local part @ lower-case ASCII domain).
    2. Else a term of digits and phone punctuation only (``+ ( ) - . /`` and spaces, 6 to 15
       digits) is a PHONE. With a + and country code it is that one E.164 number. Written
       nationally it may be a number of any country: it matches the records whose number it is
       when read in that number's country (:func:`~pipeline.core.contacts.identity.reads_as`),
       so "55 1234 5678" finds a Mexico City number, and a number that is one person's in
       Mexico and another's in the US fits both.
    3. Anything else is a NAME, optionally with words of the person's city, address or employer
       ("Jane Roe Springfield", "Jane Roe Acme"). Courtesy titles are dropped; at most eight
       words count.

Name search
    Candidates are every record that could fit the term, from an FTS5 index over each record's
    name parts, address and employer, with no limit: each term word, or one of its nicknames or
    its initial, must be in the record. How each fits is :func:`~pipeline.core.contacts.names.fit`:
    EXACT (given name and surname, every other word the record's city, address or employer) or
    WIDENED (only through a nickname or an initial). Fuzzy similarity plays no part.

Decision (every kind, :func:`decide`)
    The candidates (records with the email or number; for a name, the exact and widened fits)
    are grouped into people (:func:`same_person`). The search answers only when there is one
    person among them and an exact fit among their records; the answer is that person's fullest
    exact-fit record (then the newest), never fields put together from several records. Two
    people or more: AMBIGUOUS. A term whose email or number is suppressed, or a person one of
    whose records is hidden (opted out): SUPPRESSED. A value of the answer that is another
    person's suppressed email or number (a household's landline) is left out of it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final

from pipeline.core.addresses.syntax import Syntax, parse_address
from pipeline.core.contacts.identity import (
    WORD,
    fold,
    national_number,
    normalize_phone,
    person_key,
    phone_readings,
    words,
)
from pipeline.core.contacts.names import (
    HONORIFICS,
    Fit,
    NameParts,
    Term,
    fit,
    name_tokens,
    names_agree,
    variants,
)
from pipeline.core.contacts.types import (
    Candidate,
    Clause,
    Contact,
    Lookup,
    Option,
    Outcome,
    StoredRow,
    TermKind,
)

# A phone term holds digits and the punctuation people write numbers with, nothing else: letters
# would let phonenumbers read vanity numbers (1-800-FLOWERS) and numbers inside a street address.
_PHONE_TERM: Final = re.compile(r"\+?[\d\s().\-/]+")
# E.164 numbers have at most 15 digits (ITU-T E.164 §6); fewer than 6 is no number anywhere.
_PHONE_DIGITS: Final = range(6, 16)

# Words of a name term that take part in a search; the rest is ignored.
MAX_WORDS: Final = 8


def classify_term(term: str, region: str) -> tuple[TermKind, str]:
    """The kind of *term* and its normalized value: the email key; the E.164 number (read in
    *region* when written nationally and possible there, else its digits); the name's words."""
    if "@" in term:
        parsed = parse_address(term)
        if parsed.syntax not in (Syntax.INVALID, Syntax.EMPTY):
            return TermKind.EMAIL, parsed.key
    text = term.strip()
    if _PHONE_TERM.fullmatch(text) and len(digits := re.sub(r"\D", "", text)) in _PHONE_DIGITS:
        return TermKind.PHONE, normalize_phone(text, region) or digits
    return TermKind.NAME, " ".join(name_term(term).tokens)


def name_term(term: str) -> Term:
    return Term.of(term, MAX_WORDS)


def may_fit_anyone(kind: TermKind, term: str) -> bool:
    """Whether any record could fit *term*: a name needs two words at least (a given name and
    a surname, :func:`~pipeline.core.contacts.names.fit`); a first name or a town alone is
    nobody, however many records hold it."""
    return kind is not TermKind.NAME or len(name_term(term).tokens) >= 2


def phone_candidates(term: str) -> list[str]:
    """The E.164 numbers to look up for a phone term (see :func:`phone_readings`)."""
    return phone_readings(term)


def match_clauses(term: str) -> list[Clause]:
    """What the full-text index must hold for a record that may fit *term*: for each word, the
    word, a nickname of it or its initial. A word's letters as written go too, so the index's
    tokenizer reads them as it read the indexed address. The store spells these for its
    database (``sql.Statements.match``)."""
    clauses: dict[str, Clause] = {}
    for raw in term.split():
        folded = "".join(name_tokens(raw))
        if not folded or folded in HONORIFICS or folded in clauses:
            continue
        if len(folded) == 1:
            clauses[folded] = (Option((folded,), prefix=True),)
            continue
        written = WORD.findall(unicodedata.normalize("NFC", raw))
        options = [Option((o,)) for o in dict.fromkeys([folded, *variants(folded)])]
        if fold("".join(written)) != folded or len(written) > 1:
            options.append(Option(tuple(written)))
        clauses[folded] = tuple(options)
    return list(clauses.values())[:MAX_WORDS]


# --------------------------------------------------------------------------- candidates


def candidate(stored: StoredRow, fits: Fit) -> Candidate:
    """A stored record as a search sees it."""
    r = stored.row
    contact = Contact(stored.id, r.name, r.address, r.phone, r.email, r.company, r.title)
    return Candidate(
        contact,
        r.email_key,
        NameParts.decode(r.parts),
        person_key(r.name, r.address),
        " ".join(words(r.address)),
        " ".join(words(r.place)),
        " ".join(words(r.company)),
        stored.imported_at,
        stored.hidden,
        fits,
    )


def name_fit(term: Term, stored: StoredRow) -> Fit:
    """How a record fits a name term; its address and employer words count as context."""
    r = stored.row
    text = f"{r.address} {r.company}"
    context = frozenset(name_tokens(text)) | frozenset(words(text))
    return fit(term, NameParts.decode(r.parts), context)


# --------------------------------------------------------------------------- people


def _links(c: Candidate) -> list[str]:
    """The values that tie a record to another of the same person (with an agreeing name).

    A phone counts by its number after the country code: a number written nationally in a file
    that did not say the country was read as one of ``contacts.region``, and under the same
    name it is the same person's number.
    """
    values = [f"email:{c.email_key}", f"address:{c.address_key}"]
    values.append(f"phone:{national_number(c.contact.phone)}" if c.contact.phone else "")
    return [v for v in values if not v.endswith(":") and v]


def same_person(a: Candidate, b: Candidate) -> bool:
    """Two records of one person: names that agree, and a shared email, phone or address."""
    return names_agree(a.parts, b.parts) and bool(set(_links(a)) & set(_links(b)))


def people(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """*candidates* grouped into people: records linked by :func:`same_person`, directly or
    through others. A group whose names do not all agree with its fullest one is split in
    two, as it may be two people."""
    parent = list(range(len(candidates)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    holders: dict[str, list[int]] = {}  # records sharing a value, not every pair of records
    for i, c in enumerate(candidates):
        for value in _links(c):
            for j in holders.setdefault(value, []):
                if names_agree(c.parts, candidates[j].parts):
                    parent[root(i)] = root(j)
            holders[value].append(i)
    groups: dict[int, list[Candidate]] = {}
    for i, c in enumerate(candidates):
        groups.setdefault(root(i), []).append(c)
    found: list[list[Candidate]] = []
    for group in groups.values():
        head = max(group, key=lambda c: len(c.parts.tokens()))
        agreeing = [c for c in group if names_agree(c.parts, head.parts)]
        found += [agreeing, [c for c in group if c not in agreeing]]
    return [group for group in found if group]


# --------------------------------------------------------------------------- decision


def decide(
    kind: TermKind,
    candidates: Sequence[Candidate],
    *,
    term_suppressed: bool,
    suppressed: Callable[[str, str], bool],
    too_many: bool = False,
) -> Lookup:
    """The answer to a search from its candidates (see the module docstring).

    *suppressed* (kind, value) tells whether an identifier is suppressed; *too_many*, that
    more records may fit the term than a search reads: it is too broad to name one person.
    """
    if term_suppressed:
        return Lookup(kind, Outcome.SUPPRESSED, None)
    if too_many:
        return Lookup(kind, Outcome.AMBIGUOUS, None)
    fitting = [c for c in candidates if c.fit is not Fit.NONE]
    found = people(fitting)
    exact = [g for g in found if any(c.fit is Fit.EXACT for c in g)]
    if not exact:
        return Lookup(kind, Outcome.NO_MATCH, None)
    if len(found) > 1:
        return Lookup(kind, Outcome.AMBIGUOUS, None)
    person = found[0]
    if any(c.hidden for c in person):
        return Lookup(kind, Outcome.SUPPRESSED, None)
    best = max(
        (c for c in person if c.fit is Fit.EXACT),
        key=lambda c: (c.filled(), c.imported_at, c.contact.record_id),
    )
    return Lookup(kind, Outcome.MATCH, _withheld(best.contact, best.email_key, suppressed))


def _withheld(contact: Contact, email_key: str, suppressed: Callable[[str, str], bool]) -> Contact:
    """*contact* without an email or phone someone else opted out with."""
    if email_key and suppressed("email", email_key):
        contact = replace(contact, email="")
    if contact.phone and suppressed("phone", contact.phone):
        contact = replace(contact, phone="")
    return contact
