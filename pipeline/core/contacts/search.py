"""Contact search without the database: what a term is, and how well a record answers it.

The store runs the queries; this module holds the rules and the
pure parts it applies to their results: term classification, phone and name normalization, the
full-text query, the name score and the final decision (match, no match, ambiguous, suppressed).

Term classification (:func:`classify_term`)
    1. A term with an ``@`` that ``parse_address`` accepts is an EMAIL. It matches the records
       with the same dedupe key (case-folded local part @ lower-case ASCII domain).
    2. Else a term of digits and phone punctuation only (``+ ( ) - . /`` and spaces) that
       phonenumbers reads as a possible number (the right length for its country) is a PHONE,
       read as a number of ``contacts.region`` unless it starts with + and a country code. It
       matches the records with the same E.164 number.
    3. Anything else is a NAME: a name, optionally with words of the person's city, address or
       employer ("Jane Roe Springfield", "Jane Roe Acme"). Courtesy titles (Mr, Dr, ...) are
       dropped; at most eight words count.

Name search
    Candidates come from an FTS5 index over each record's name, city and employer (unicode61
    tokenizer, diacritics removed, whole words only, no prefix search): the records holding every
    word of the term, up to ``contacts.candidates``; when none of them reaches
    ``contacts.min_confidence``, also the ``contacts.candidates`` best by bm25 that hold any word,
    which lets a misspelt word through. Each candidate is scored from 0 to 1
    (:func:`~pipeline.core.contacts.search.name_confidence`): term words that match a word of the
    record's address (city included) or employer narrow the search to that place or employer and
    leave the comparison; the other words are compared with the record's name by rapidfuzz's
    token_sort_ratio (order free, typos cost a little; a middle name may be left out), so a word
    that fits neither name nor place nor employer counts against the record: "Jane Roe
    Springfield" scores 1.0 for Jane Roe of Springfield and 0.57 for Jane Roe of Shelbyville.
    Words of one to three letters and numbers must match exactly to narrow.

Decision (every kind)
    The best candidate must reach ``contacts.min_confidence`` (an email or phone match scores
    1.0). Ties go to the fuller record, then the newer. If a different person scores within
    ``contacts.ambiguity_margin`` of the best, the search is AMBIGUOUS and answers nothing: never
    a guess. Two records are the same person when they share an email or a phone number, or have
    the same name at the same address.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Final

from rapidfuzz import fuzz

from pipeline.core.address import Syntax, parse_address
from pipeline.core.contacts.identity import WORD, fold, normalize_phone, words
from pipeline.core.contacts.types import Candidate, Lookup, Outcome, TermKind

# A phone term holds digits and the punctuation people write numbers with, nothing else: letters
# would let phonenumbers read vanity numbers (1-800-FLOWERS) and numbers inside a street address.
_PHONE_TERM: Final = re.compile(r"\+?[\d\s().\-/]+")


# Courtesy titles say nothing about who is meant; a term "Dr Jane Roe" is a term "Jane Roe".
_HONORIFICS: Final = frozenset({"mr", "mrs", "ms", "mx", "miss", "dr", "prof"})


# Words of a name term that take part in a search; the rest is ignored.
_MAX_WORDS: Final = 8


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
    raw = list(dict.fromkeys(WORD.findall(unicodedata.normalize("NFC", term))))
    kept = [w for w in raw if fold(w) not in _HONORIFICS] or raw
    quoted = [f'"{w}"' for w in kept[:_MAX_WORDS]]
    return (" AND " if every else " OR ").join(quoted)


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
