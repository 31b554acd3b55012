"""Personal names as the contact store compares them: parts, agreement, and what a term fits.

A name is read into :class:`NameParts` (given name, middle names, surname, generational suffix),
each a run of folded tokens (:func:`name_tokens`: accents and case dropped, one token per word
as written, so "O'Brien" is ``obrien`` and "Marie-Claire" ``marieclaire``).

Reading a name (:func:`parse_name`)
    With separate first and last name columns the file says which is which. A name in one
    column is read as "given [middle...] surname [suffix]", or "surname, given [middle...]"
    when it has a comma. Between the given name and the last word, a word is a middle name when
    it is one of *known_given* (the words that begin other names in the store and the file) and
    no surname particle (van, de, dos, al, ...) came before it; the first word that is not
    starts the surname. So "John Michael Smith" has the middle name Michael, and "Laura
    Rodríguez Díaz" the surname Rodríguez Díaz: a Spanish second surname is not a middle name.
    An unknown word goes to the surname, which can only make a search stricter.

Agreeing names (:func:`names_agree`), the test import and grouping apply next to a shared
    email or phone: the same surname (or one is the first word of the other's two-word surname:
    "Laura Rodríguez" of "Laura Rodríguez Díaz"), the same given name or one the nickname table
    pairs with it, middle names that do not differ (one side's are among the other's), and the
    same suffix. A name without words agrees only with another without words.

What a name term fits (:func:`fit`)
    Every word of the term must be accounted for by the record: a word of its name, or a word
    of its address (city included) or employer. An EXACT fit needs the given name and the whole
    surname (or the first of two surnames alone), in that order or as "surname, given"; middle
    names may be left out (or given by their initial), a suffix too. A WIDENED fit is one that
    needs the nickname table (:data:`NICKNAMES`) or a single letter read as an initial of the
    given name or surname: such a record is a rival that can make a search ambiguous, never its
    answer. Misspellings fit nothing: a name one letter away is another name.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pipeline.core.contacts.identity import fold

# Courtesy titles say nothing about who is meant; "Dr Jane Roe" is "Jane Roe".
HONORIFICS: Final = frozenset({"mr", "mrs", "ms", "mx", "miss", "dr", "prof", "sir", "dame"})
SUFFIXES: Final = frozenset({"jr", "sr", "ii", "iii", "iv"})
# Words that begin a surname: "Pieter van der Berg", "Ana de la Cruz", "Omar al-Rashid".
PARTICLES: Final = frozenset(
    {"van", "von", "der", "den", "de", "del", "della", "di", "da", "das", "dos", "du", "la",
     "le", "al", "el", "bin", "ibn", "ni", "nic", "mac", "mc", "ter", "ten", "st", "saint"}
)  # fmt: skip

# Common English diminutives and a few Spanish ones (hypocorisms) and the formal names they
# stand for. Only a formal name and its own nicknames are paired: "Al" widens "Albert" and
# "Alfred", but Albert and Alfred stay different names.
_NICKNAMES: Final = """
robert: bob bobby rob robbie bert; william: bill billy will willie liam; james: jim jimmy jamie;
john: jack johnny jon; michael: mike mikey mick; elizabeth: liz lizzie beth betty eliza libby;
katherine: kate katie kathy kat; catherine: kate katie cathy cat; kathleen: kathy kate;
joseph: joe joey; thomas: tom tommy; christopher: chris kit; daniel: dan danny;
anthony: tony; jennifer: jen jenny; patricia: pat patty tricia; susan: sue susie;
deborah: debbie deb; alexander: alex al; alexandra: alex sandra; benjamin: ben benny;
samuel: sam sammy; samantha: sam; nicholas: nick nicky; steven: steve; stephen: steve;
edward: ed eddie ted ned; margaret: peggy maggie meg marge; richard: rick ricky rich dick;
timothy: tim timmy; rebecca: becky becca; victoria: vicky tori; gregory: greg;
andrew: andy drew; matthew: matt; charles: charlie chuck; david: dave; jonathan: jon;
joshua: josh; kenneth: ken kenny; ronald: ron ronnie; donald: don donnie; gerald: jerry;
lawrence: larry; raymond: ray; frederick: fred freddie; albert: al bert; alfred: al alf fred;
peter: pete; philip: phil; douglas: doug; zachary: zach; nathan: nate; nathaniel: nate;
jacob: jake; abigail: abby; barbara: barb; cynthia: cindy; dorothy: dot dottie;
jessica: jess jessie; kimberly: kim; pamela: pam; stephanie: steph; christine: chris tina;
christina: chris tina; teresa: terry tess; theresa: terry tess; judith: judy;
virginia: ginny; frances: fran; jacqueline: jackie; madison: maddie; natalie: nat;
jose: pepe; francisco: paco pancho; guadalupe: lupe; dolores: lola; ignacio: nacho
"""


def _nickname_table(text: str) -> dict[str, frozenset[str]]:
    pairs: dict[str, set[str]] = {}
    for entry in text.replace("\n", " ").split(";"):
        formal, nicknames = entry.split(":")
        for nickname in nicknames.split():
            pairs.setdefault(formal.strip(), set()).add(nickname)
            pairs.setdefault(nickname, set()).add(formal.strip())
    return {name: frozenset(others) for name, others in pairs.items()}


NICKNAMES: Final = _nickname_table(_NICKNAMES)

_NON_WORD: Final = re.compile(r"[\W_]+")


def name_tokens(text: str) -> list[str]:
    """One folded token per whitespace-separated word, its punctuation dropped."""
    tokens = (_NON_WORD.sub("", fold(part)) for part in text.split())
    return [t for t in tokens if t]


@dataclass(frozen=True)
class NameParts:
    given: str = ""
    middle: tuple[str, ...] = ()
    surname: tuple[str, ...] = ()
    suffix: str = ""

    def tokens(self) -> list[str]:
        head = [self.given] if self.given else []
        return (
            head + list(self.middle) + list(self.surname) + ([self.suffix] if self.suffix else [])
        )

    def encode(self) -> str:
        """One text for the store: the parts' tokens, "|" between the parts."""
        return "|".join((self.given, " ".join(self.middle), " ".join(self.surname), self.suffix))

    @classmethod
    def decode(cls, text: str) -> NameParts:
        if not text:
            return cls()
        given, middle, surname, suffix = text.split("|")
        return cls(given, tuple(middle.split()), tuple(surname.split()), suffix)


def parse_name(
    name: str, known_given: frozenset[str] = frozenset(), *, first: str = ""
) -> NameParts:
    """The parts of *name*; *first* (a first-name column) says where the given names end."""
    if first:
        given, tokens = _plain(name_tokens(first)), _plain(name_tokens(name))
        rest = tokens[len(given) :] if tokens[: len(given)] == given else []
        surname, suffix = _split_suffix(rest, keep=1)
        return NameParts(given[0] if given else "", tuple(given[1:]), tuple(surname), suffix)
    if "," in name:
        last, _, after = name.partition(",")
        given, (surname, suffix) = _plain(name_tokens(after)), _split_suffix(name_tokens(last), 1)
        if given and surname:
            return NameParts(given[0], tuple(given[1:]), tuple(surname), suffix)
    tokens, suffix = _split_suffix(_plain(name_tokens(name)), keep=2)
    if not tokens:
        return NameParts()
    middle: list[str] = []
    for token in tokens[1:-1]:
        if token in PARTICLES or token not in known_given:
            break
        middle.append(token)
    return NameParts(tokens[0], tuple(middle), tuple(tokens[1 + len(middle) :]), suffix)


def _plain(tokens: list[str]) -> list[str]:
    return [t for t in tokens if t not in HONORIFICS] or tokens


def _split_suffix(tokens: list[str], keep: int) -> tuple[list[str], str]:
    """*tokens* without a final generational suffix, and the suffix; *keep* tokens stay."""
    if len(tokens) > keep and tokens[-1] in SUFFIXES:
        return tokens[:-1], tokens[-1]
    return tokens, ""


def first_token(name: str) -> str:
    """The given name a name in one column starts with, for the known-given-names lexicon: only
    names of two words or more count (a lone word may be a surname)."""
    parts = parse_name(name)
    return parts.given if parts.surname else ""


# --------------------------------------------------------------------------- agreement


def same_given(a: str, b: str) -> bool:
    """The same given name, or a formal name and one of its nicknames."""
    return a == b or b in NICKNAMES.get(a, ())


def _same_surname(a: Sequence[str], b: Sequence[str]) -> bool:
    if tuple(a) == tuple(b):
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return len(short) == 1 and len(long) == 2 and short[0] == long[0] and long[0] not in PARTICLES


def _middles_agree(a: Sequence[str], b: Sequence[str]) -> bool:
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return all(any(m == n or (len(m) == 1 and n.startswith(m)) for n in long) for m in short)


def names_agree(a: NameParts, b: NameParts) -> bool:
    """Whether two names can be one person's (see the module docstring)."""
    if not (a.given or b.given):
        return not (a.surname or b.surname)
    return (
        same_given(a.given, b.given)
        and _same_surname(a.surname, b.surname)
        and _middles_agree(a.middle, b.middle)
        and a.suffix == b.suffix
    )


def fuller_name(a: NameParts, b: NameParts, a_text: str, b_text: str) -> bool:
    """Whether *a* says more than *b*: more words, then longer ones (Robert over Bob), then
    more accented letters (José over Jose). Equal: False."""

    def rank(parts: NameParts, text: str) -> tuple[int, int, int]:
        tokens = parts.tokens()
        return len(tokens), sum(map(len, tokens)), sum(1 for c in text if not c.isascii())

    return rank(a, a_text) > rank(b, b_text)


# --------------------------------------------------------------------------- fitting a term


class Fit(enum.IntEnum):
    NONE = 0
    WIDENED = 1  # only through a nickname or an initial: a rival, never an answer
    EXACT = 2


@dataclass(frozen=True)
class Term:
    """A name term: its tokens in order (courtesy titles dropped) and whether it has a comma
    ("Roe, Jane": surname first)."""

    tokens: tuple[str, ...]
    comma: bool

    @classmethod
    def of(cls, text: str, limit: int) -> Term:
        tokens = list(dict.fromkeys(name_tokens(text)))
        kept = [t for t in tokens if t not in HONORIFICS] or tokens
        return cls(tuple(kept[:limit]), "," in text)


class _Role(enum.StrEnum):
    """What a word of a term is in a record."""

    GIVEN = "given"
    SURNAME = "surname"
    MIDDLE = "middle"  # a middle name or its initial
    SUFFIX = "suffix"
    CONTEXT = "context"  # a word of the address or employer
    NICKNAME = "given, widened"  # a nickname or an initial of the given name
    INITIAL = "surname, widened"  # an initial of the surname


_WIDENED: Final = (_Role.NICKNAME, _Role.INITIAL)


def fit(term: Term, parts: NameParts, context: frozenset[str]) -> Fit:
    """How the record with name *parts* and address and employer words *context* fits *term*."""
    if not (parts.given and parts.surname):
        return Fit.NONE
    found = [_role(token, parts, context) for token in term.tokens]
    roles = [role for role in found if role is not None]
    if len(roles) < len(found):
        return Fit.NONE
    given = [at for at, role in enumerate(roles) if role in (_Role.GIVEN, _Role.NICKNAME)]
    surname = [at for at, role in enumerate(roles) if role in (_Role.SURNAME, _Role.INITIAL)]
    if len(given) != 1 or not _whole_surname(term, parts, [roles[at] for at in surname]):
        return Fit.NONE
    if given[0] > surname[0] and not term.comma:  # "Roe Jane" is not "Roe, Jane"
        return Fit.NONE
    return Fit.WIDENED if any(role in _WIDENED for role in roles) else Fit.EXACT


def _whole_surname(term: Term, parts: NameParts, roles: list[_Role]) -> bool:
    if _Role.INITIAL in roles:  # "Kofi A.": a lone initial stands for the whole surname
        return roles == [_Role.INITIAL]
    present = [t for t in parts.surname if t in term.tokens]
    if len(present) != len(roles):
        return False
    whole = present == list(parts.surname)
    first_only = (
        len(parts.surname) == 2
        and present == [parts.surname[0]]
        and _same_surname(present, parts.surname)
    )
    return whole or first_only


def _role(token: str, parts: NameParts, context: frozenset[str]) -> _Role | None:
    """What *token* is in the record; None when nothing. The exact roles come first: a word
    that is a word of the record's address is never read as a nickname."""
    if token == parts.given:
        return _Role.GIVEN
    if token in parts.surname:
        return _Role.SURNAME
    if token in parts.middle or (len(token) == 1 and any(m[0] == token for m in parts.middle)):
        return _Role.MIDDLE
    if token == parts.suffix:
        return _Role.SUFFIX
    if token in context:
        return _Role.CONTEXT
    if same_given(token, parts.given) or _initial(token, parts.given):
        return _Role.NICKNAME
    if _initial(token, parts.surname[0]) and len(parts.surname) == 1:
        return _Role.INITIAL
    return None


def _initial(a: str, b: str) -> bool:
    """One of the two is a single letter, the other's first."""
    return a != b and ((len(a) == 1 and b.startswith(a)) or (len(b) == 1 and a.startswith(b)))


def variants(token: str) -> list[str]:
    """The words a record may hold for *token* in a widened fit: its nicknames or formal names,
    and its initial."""
    found = sorted(NICKNAMES.get(token, ()))
    return found + ([token[0]] if len(token) > 1 else [])
