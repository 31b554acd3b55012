"""The batch path against the precise one, cell by cell, on a large varied set of messy values.

:func:`parse_address` and :func:`repair` are the oracle: whatever the batch settles with
expressions (the fast path, the domain path, the messy shapes) must give every cell exactly
what they give it.
"""

from __future__ import annotations

import random

import polars as pl
import pytest

from pipeline.core.addresses.normalize import normalize_column
from pipeline.core.addresses.repairs import repair, repair_column
from pipeline.core.addresses.shapes import cut_shapes, settle_shapes
from pipeline.core.addresses.syntax import parse_address

LOCALS = [
    "anna",
    "Anna.Smith",
    "o'brien",
    "a+tag",
    "x",
    "first.last42",
    "A_B-C",
    "a..b",
    ".anna",
    "anna.",
    "jos\u00e9",
    "\u00fcber",
    "\u7528\u6237",
    '"quoted name"',
    '"a@b"',
    "a" * 64,
    "b" * 65,
    "mailto",
    "#!$%&*/=?^`{|}~",
    "a(comment)",
    "-",
    "'",
]
HOSTS = [
    "gmail.com",
    "GMAIL.COM",
    "Example.org",
    "example.com",
    "mail.test",
    "localhost",
    "sub.domain.co.uk",
    "xn--bcher-kva.de",
    "XN--BCHER-KVA.DE",
    "b\u00fccher.de",
    "a--b.com",
    "gmail",
    "gmail.c",
    "123.com",
    "host.123",
    "[192.0.2.1]",
    "[IPv6:2001:db8::1]",
    "-bad.com",
    "bad-.com",
    "gmail..com",
    "gmail.com.",
    ("l" * 63 + ".") * 3 + "com",
    "x" * 64 + ".com",
    "gmail,com",
    "\uff47mail.com",
    "foo.onion",
    "home.arpa",
]
SPACES = ["", "", "", " ", "  ", "\t", "\u00a0", "\u200b", " \u3000"]
NAMES = [
    "",
    "Anna",
    "Anna Smith",
    "Anna  Smith ",
    "O'Brien",
    "Jean-Luc",
    "J. Smith",
    "Smith, Anna",
    "\u00c9lodie",
    '"Anna Smith"',
    "anna@home",
    "1",
    "-x",
]
OPENERS = ["", "<", "mailto:", "MAILTO:", "Mailto:", '"', "'", "[", "(", "{", "< "]
CLOSERS = ["", ">", '"', "'", "]", ",", ";", ".", ")", "}", " >", ".,", "?subject=hi", ">>"]


def _messy(rng: random.Random) -> str:
    """One value: an address in some wrapping, with the usual damage, often several kinds."""
    if rng.random() < 0.5:  # near the shapes the batch settles, damaged in the usual ways
        local, host, at = (
            rng.choice(LOCALS[:7]),
            rng.choice(HOSTS[:3] + HOSTS[6:8]),
            rng.choice(["@", "@", "@", "@@"]),
        )
        before, after = rng.choice(["", " ", "  "]), rng.choice(["", "", " "])
    else:
        local, host = rng.choice(LOCALS), rng.choice(HOSTS)
        at = rng.choice(["@", "@", "@", "@@", "@x@", "\uff20"])
        before, after = rng.choice(SPACES), rng.choice(SPACES)
    value = f"{local}{before}{at}{after}{host}"
    roll = rng.random()
    if roll < 0.3:
        name = rng.choice(NAMES)
        value = f"{name}{rng.choice(['', ' ', '  '])}<{value}>"
    elif roll < 0.7:
        value = f"{rng.choice(OPENERS)}{value}{rng.choice(CLOSERS)}"
    if rng.random() < 0.1:
        value = f"{value}, other@{rng.choice(HOSTS)}"
    if rng.random() < 0.05:
        cut = rng.randrange(len(value) + 1)
        value = value[:cut] + rng.choice(["\u200b", "\u00ad", "(c)", "\ufeff"]) + value[cut:]
    return f"{rng.choice(SPACES)}{value}{rng.choice(SPACES)}"


def _values(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [_messy(rng) for _ in range(count)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_normalize_column_equals_the_precise_parser(seed: int) -> None:
    values = _values(seed, 6000)
    frame = normalize_column(pl.Series("email", values))
    for value, row in zip(values, frame.iter_rows(), strict=True):
        p = parse_address(value)
        assert row == (p.email, p.local, p.domain, p.key, p.syntax.value, p.detail), value


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_repair_column_equals_repair(seed: int) -> None:
    values = _values(seed, 6000)
    syntax = normalize_column(pl.Series("email", values)).get_column("SYNTAX")
    table = repair_column(pl.Series("email", values), syntax)
    for value, kind, address, syn in zip(
        values, table["REPAIR"], table["REPAIRED"], syntax, strict=True
    ):
        found = repair(value) if syn == "syntax_invalid" else None
        expected = (
            found.repair.value if found and found.repair else "",
            found.address if found else "",
        )
        assert (kind, address) == expected, value


def test_the_messy_shapes_are_settled_without_the_precise_parser() -> None:
    # The common shapes of real exports, each with an address the fast path accepts.
    values = [
        "anna.smith @gmail.com",
        "anna.smith@ GMAIL.com",
        "Anna Smith <anna.smith@Gmail.com>",
        "<anna@gmail.com>",
        "mailto:anna@gmail.com",
        '"anna@gmail.com"',
        "[anna@gmail.com]",
        "anna@gmail.com,",
        "anna@gmail.com;",
        "anna@@gmail.com",
    ]
    settled = settle_shapes(pl.Series(values)).get_column("_settled")
    assert settled.all()


def test_values_outside_the_shapes_are_left_to_the_precise_parser() -> None:
    values = ["jos\u00e9 @gmail.com", "anna @b\u00fccher.de", "a(c) @gmail.com", "a @localhost"]
    cut = cut_shapes(pl.Series(values))
    assert not cut.get_column("_fits").any()
