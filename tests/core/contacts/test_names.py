"""Name rules: reading names into parts, agreeing names, and what a name term fits."""

from __future__ import annotations

import pytest

from pipeline.core.contacts.names import (
    Fit,
    NameParts,
    Term,
    fit,
    name_tokens,
    names_agree,
    parse_name,
)

KNOWN = frozenset({"john", "michael", "laura", "mary", "kathleen", "jose", "maria"})


def parts(name: str, first: str = "") -> NameParts:
    return parse_name(name, KNOWN, first=first)


@pytest.mark.parametrize(
    ("name", "first", "expected"),
    [
        ("John Michael Smith", "", ("john", ("michael",), ("smith",), "")),
        # A Spanish second surname is no middle name: Rodríguez begins no name in the store.
        ("Laura Rodríguez Díaz", "", ("laura", (), ("rodriguez", "diaz"), "")),
        ("José María García López", "", ("jose", ("maria",), ("garcia", "lopez"), "")),
        ("Pieter van der Berg", "", ("pieter", (), ("van", "der", "berg"), "")),
        ("Mary de la Cruz", "", ("mary", (), ("de", "la", "cruz"), "")),
        ("Smith, John Michael", "", ("john", ("michael",), ("smith",), "")),
        ("John Smith Jr.", "", ("john", (), ("smith",), "jr")),
        ("Dr. Jane Roe", "", ("jane", (), ("roe",), "")),
        ("Sean O'Brien", "", ("sean", (), ("obrien",), "")),
        ("Marie-Claire Dubois", "", ("marieclaire", (), ("dubois",), "")),
        ("Zoë Åberlund", "", ("zoe", (), ("aberlund",), "")),
        ("Søren Kjærgaard", "", ("soren", (), ("kjaergaard",), "")),
        ("Madonna", "", ("madonna", (), (), "")),
        # A first-name column says where the given names end.
        ("Tobias Quill Wrenfield", "Tobias Quill", ("tobias", ("quill",), ("wrenfield",), "")),
        ("Ana Sofía Ruiz", "Ana", ("ana", (), ("sofia", "ruiz"), "")),
    ],
)
def test_parse_name(name: str, first: str, expected: tuple[object, ...]) -> None:
    assert parts(name, first) == NameParts(*expected)  # type: ignore[arg-type]


def test_parts_survive_the_store() -> None:
    for name in ("John Michael Smith", "Laura Rodríguez Díaz", "John Smith Jr.", ""):
        assert NameParts.decode(parts(name).encode()) == parts(name)


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        ("John Smith", "JOHN SMITH", True),
        ("José García", "Jose Garcia", True),  # accents and case
        ("Robert Smith", "Bob Smith", True),  # the nickname table
        ("John Smith", "John Michael Smith", True),  # a middle name left out
        ("Laura Rodríguez", "Laura Rodríguez Díaz", True),  # the first surname alone
        ("Laura Díaz", "Laura Rodríguez Díaz", False),  # the second surname is not her name
        ("John Smith", "Jane Smith", False),  # a household
        ("John Smith", "John Smyth", False),  # one letter is another name
        ("John Michael Smith", "John Mark Smith", False),
        ("John Smith", "John Smith Jr.", False),  # father and son
        ("Al Jones", "Alfred Jones", True),
        ("Albert Jones", "Alfred Jones", False),  # a shared nickname does not make one name
        ("John Smith", "J. Smith", False),  # an initial is no evidence
        ("", "", True),
        ("", "John Smith", False),
    ],
)
def test_names_agree(a: str, b: str, agree: bool) -> None:
    assert names_agree(parts(a), parts(b)) is agree
    assert names_agree(parts(b), parts(a)) is agree


# Records: name, and the words of their address and employer.
RECORDS = {
    "laura": ("Laura Rodríguez Díaz", "12 Oak St, Orlando, FL 32801, USA"),
    "mary": ("Mary Brown", "Columbus, OH"),
    "mia": ("Mia Brown", "Denver, CO"),
    "kofi": ("Kofi Ali", "Austin, TX"),
    "mark": ("Mark Cooper", "Boston, MA"),
    "amanda": ("Amanda Hall", "Seattle, WA"),
    "julia": ("Julia Gómez", "Miami, FL"),
    "john": ("John Smith", "Dallas, TX Ironbridge Insurance"),
    "roberto": ("Roberto Hernández García", "5 Elm St, Columbus, OH 43215, USA"),
    "robert": ("Robert Smith", "Boston, MA"),
    "bob": ("Bob Jones", "Boston, MA"),
    "middle": ("John Michael Smith", "Dallas, TX"),
    "zoe": ("Zoë Åberlund", "Fernhollow, WA"),
}


def fits(term: str, record: str) -> Fit:
    name, context = RECORDS[record]
    words = frozenset(name_tokens(context))
    return fit(Term.of(term, 8), parts(name), words)


@pytest.mark.parametrize(
    ("term", "record", "expected"),
    [
        # Given name and surname, then words of the city, address or employer.
        ("John Smith", "john", Fit.EXACT),
        ("john smith dallas", "john", Fit.EXACT),
        ("John Smith Ironbridge", "john", Fit.EXACT),
        ("Smith, John", "john", Fit.EXACT),
        ("Smith John", "john", Fit.NONE),  # surname first needs the comma
        ("John Smith", "middle", Fit.EXACT),  # a middle name may be left out
        ("John M. Smith", "middle", Fit.EXACT),
        ("Zoe Aberlund", "zoe", Fit.EXACT),
        ("Laura Rodríguez", "laura", Fit.EXACT),  # the first surname alone
        # Cause: a fuzzy score decided. One letter away is another name: no fit at all.
        ("Mary Cooper", "mark", Fit.NONE),
        ("Amanda Hill", "amanda", Fit.NONE),
        ("Lisa Gómez", "julia", Fit.NONE),
        ("Jhon Smith", "john", Fit.NONE),
        ("Josha Smith", "john", Fit.NONE),
        # Cause: initials and partial names matched inside longer names.
        ("Laura Díaz", "laura", Fit.NONE),
        ("M. Brown", "mary", Fit.WIDENED),  # a rival, never the answer
        ("M. Brown", "mia", Fit.WIDENED),
        ("Kofi A.", "kofi", Fit.WIDENED),
        ("Kofi", "kofi", Fit.NONE),  # a given name alone is nobody
        ("Bob Smith", "robert", Fit.WIDENED),  # the nickname table widens, never decides
        ("Robert Jones", "bob", Fit.WIDENED),
        # Cause: a contradicting city lost to a long name. Every word must be the record's.
        ("Roberto Hernández García Orlando", "roberto", Fit.NONE),
        ("Roberto Hernández García Columbus", "roberto", Fit.EXACT),
        ("John Smith Springfield", "john", Fit.NONE),
    ],
)
def test_what_a_term_fits(term: str, record: str, expected: Fit) -> None:
    assert fits(term, record) is expected
