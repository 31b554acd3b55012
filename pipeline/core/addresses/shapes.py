"""The common messy shapes of a cell, settled with expressions instead of per-row parsing.

Exports and hand-kept lists carry the same few wrappings over and over: a space before or after
the ``@``, a display name (``Anna Smith <anna@gmail.com>``), a ``mailto:`` link, quotes or
brackets around the address, a trailing comma, a doubled ``@``. Each such cell is invalid, and what
:func:`~pipeline.core.addresses.syntax.parse_address` and
:func:`~pipeline.core.addresses.repairs.repair` say of it depends only on its *shape* — which
wrapping, whether the spaces are there, whether the domain ends in a dot — as long as the address
inside is one the fast path would accept on its own (ASCII dot-atom local part, LDH host name
within the length limits, not special-use). So a cell is cut into its parts by one regular
expression; the precise parser and the repairs run once per distinct shape, on a stand-in
address (``a@b.com``) in the same wrapping; and every row of that shape takes the stand-in's
answer, with its own parts put back. A shape whose stand-in does not come out that way is left to
the precise parser, and so is every cell the expression does not cut.

The differential test (``tests/core/addresses/test_shapes.py``) holds both paths to the same
answers on a large, varied set of messy values.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final

import polars as pl

from pipeline.core.addresses.syntax import (
    ADDRESS_MAX_OCTETS,
    DOMAIN_MAX_OCTETS,
    LDH_DOMAIN_RE,
    LOCAL_MAX_OCTETS,
    SPECIAL_USE_RE,
    Syntax,
    parse_address,
)

__all__ = ["STAND_IN_ADDRESS", "cut_shapes", "settle_shapes", "stand_in"]

_ATEXT: Final = r"A-Za-z0-9!#$%&'*+/=?^_`{|}~\-"
_WORD: Final = r"[A-Za-z0-9]+(?:['\-][A-Za-z0-9]+)*"
# One cell, cut into its parts: a display name before "<" or another opening wrapper, the
# local part and the spaces after it, the "@" (sometimes typed twice), the spaces before the
# host, the host, a root dot, and a closing wrapper. No "(" or ")" anywhere: comments take
# the precise parser's own path.
_CUT: Final = (
    rf"^(?:(?P<name>(?:{_WORD} +)*{_WORD} *)?(?P<angle><)"
    r"|(?P<wrap>[Mm][Aa][Ii][Ll][Tt][Oo]:|\"|'|\[))?"
    rf"(?P<local>[{_ATEXT}]+(?:\.[{_ATEXT}]+)*)"
    r"(?P<s1> *)(?P<twice>@?)@(?P<s2> *)"
    r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?)"
    r"(?P<dot>\.?)"
    r"(?P<close>>|\"|'|\]|,|;)?$"
)
_PARTS: Final = ("name", "angle", "wrap", "local", "s1", "twice", "s2", "host", "dot", "close")
_STAND_IN_LOCAL: Final = "a"
_STAND_IN_HOST: Final = "b.com"
STAND_IN_ADDRESS: Final = f"{_STAND_IN_LOCAL}@{_STAND_IN_HOST}"


@dataclass(frozen=True)
class _Answer:
    """What the precise parser says of one shape's stand-in."""

    settled: bool  # False: the shape's rows go to the precise parser
    detail: str
    keeps_domain: bool  # DOMAIN is the host (lower case), else ""


_UNSETTLED: Final = _Answer(False, "", False)


def settle_shapes(text: pl.Series) -> pl.DataFrame:
    """For each trimmed value in *text*: ``_settled`` and, where True, the output columns
    (EMAIL, LOCAL, DOMAIN, KEY, SYNTAX, SYNTAX_DETAIL) the precise parser would give it."""
    cut = cut_shapes(text)
    kinds = cut.get_column("_kind").unique().to_list()
    answers = [_answer(kind) for kind in kinds]
    table = pl.DataFrame(
        {
            "_kind": kinds,
            "_settled": [a.settled for a in answers],
            "SYNTAX_DETAIL": [a.detail for a in answers],
            "_keeps": [a.keeps_domain for a in answers],
        },
        schema={
            "_kind": pl.String,
            "_settled": pl.Boolean,
            "SYNTAX_DETAIL": pl.String,
            "_keeps": pl.Boolean,
        },
    )
    return (
        cut.join(table, on="_kind", how="left", maintain_order="left")
        .with_columns(pl.col("_settled").fill_null(False) & pl.col("_fits"))
        .select(
            "_settled",
            EMAIL=pl.col("_text"),
            LOCAL=pl.concat_str("name", "angle", "wrap", "local", "s1", "twice"),
            DOMAIN=pl.when("_keeps").then(pl.col("host").str.to_lowercase()).otherwise(pl.lit("")),
            KEY=pl.col("_text").str.to_lowercase(),
            SYNTAX=pl.lit(Syntax.INVALID.value),
            SYNTAX_DETAIL="SYNTAX_DETAIL",
        )
    )


def cut_shapes(text: pl.Series) -> pl.DataFrame:
    """The parts of each value, ``_fits`` (the address inside is one the fast path accepts)
    and ``_kind`` (the shape: the parts with the address replaced by the stand-in)."""
    parts = pl.col("_text").str.extract_groups(_CUT)
    local_octets = pl.col("local").str.len_bytes()
    host_octets = pl.col("host").str.len_bytes()
    fits = (
        pl.col("host").str.contains(LDH_DOMAIN_RE)
        # "--" in labels 3-4 is reserved (RFC 5891 §4.2.3.1) and "xn--" needs IDNA checks.
        & ~pl.col("host").str.contains("--", literal=True)
        & ~pl.col("host").str.contains(SPECIAL_USE_RE)
        & (host_octets <= DOMAIN_MAX_OCTETS)
        & (local_octets <= LOCAL_MAX_OCTETS)
        & (local_octets + 1 + host_octets <= ADDRESS_MAX_OCTETS)
        & (pl.col("_text").str.len_bytes() <= ADDRESS_MAX_OCTETS)
    )
    kind = pl.concat_str(
        # Each word of a display name stands for any word; runs of spaces for one space.
        pl.col("name").str.replace_all(_WORD, "n").str.replace_all(" +", " "),
        pl.lit("\x00"),
        pl.col("angle"),
        pl.col("wrap"),
        pl.lit("\x00"),
        pl.col("s1").str.head(1),
        pl.col("twice"),
        pl.lit("\x00"),
        pl.col("s2").str.head(1),
        pl.lit("\x00"),
        pl.col("dot"),
        pl.lit("\x00"),
        pl.col("close"),
    )
    return (
        pl.DataFrame({"_text": text})
        .with_columns(parts.alias("_parts"))
        .unnest("_parts")
        .with_columns(pl.col(p).fill_null("") for p in _PARTS if p not in ("local", "host"))
        .with_columns(
            _fits=(pl.col("local").is_not_null() & fits).fill_null(False),
            _kind=pl.when(pl.col("local").is_not_null()).then(kind),
        )
    )


def stand_in(kind: str | None) -> tuple[str, str] | None:
    """The stand-in cell of one shape and its text before the ``@``; None when there is none
    (no shape, or one that a stand-in could not reproduce)."""
    if kind is None:
        return None
    name, opening, s1, s2, dot, close = kind.split("\x00")
    head = f"{name}{opening}{_STAND_IN_LOCAL}{s1}"
    cell = f"{head}@{s2}{_STAND_IN_HOST}{dot}{close}"
    return (cell, head) if cell == cell.strip() else None


@functools.lru_cache(maxsize=1024)
def _answer(kind: str | None) -> _Answer:
    """The precise answer for one shape, read off its stand-in; unsettled unless the stand-in
    comes out as an invalid cell whose parts are the ones this module puts back."""
    made = stand_in(kind)
    if made is None:
        return _UNSETTLED
    cell, head = made
    parsed = parse_address(cell)
    if (
        parsed.syntax is not Syntax.INVALID
        or parsed.email != cell
        or parsed.local != head
        or parsed.domain not in ("", _STAND_IN_HOST)
    ):
        return _UNSETTLED
    return _Answer(settled=True, detail=parsed.detail, keeps_domain=bool(parsed.domain))
