"""Cells that hold an address in a common wrapping: repaired as a suggestion, never silently.

Exports and hand-kept lists carry addresses wrapped in ways a mail server would refuse. The
cell stays what it is (VERDICT Invalid, ``syntax_invalid``): nobody's list is edited behind
their back. When the one address it holds can be read out, SUGGESTION gets it, and REASON says
which repair, so the fix is one filter away. Tried in this order, each on what the one before
left, and kept only when the result is a valid address:

``fixable_invisible``
    Invisible characters (zero-width space and joiners, BOM, soft hyphen, word joiner), which
    copy-paste from web pages and PDFs leaves in a cell.
``fixable_mailto``
    A ``mailto:`` link (RFC 6068) instead of the address; its ``?subject=...`` part goes too.
``fixable_display_name``
    An RFC 5322 name-addr, ``David Sánchez <david.sanchez@gmail.com>``: the angle-addr is the
    address.
``fixable_several``
    Two or more addresses in one cell (``a@gmail.com; b@yahoo.com``, with ``,`` ``;`` or spaces
    between them): the first is suggested; the rest are for the user to split out.
``fixable_spaces``
    Spaces around the ``@`` or the dots (``lea.dubois @ gmail.com``).
``fixable_comma``
    A comma typed for the dot in the domain (``rjackson@gmail,com``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import polars as pl

from pipeline.core.addresses.shapes import STAND_IN_ADDRESS, cut_shapes, stand_in
from pipeline.core.addresses.syntax import WHITESPACE, Syntax, parse_address
from pipeline.core.verdict import Reason


class Repair(StrEnum):
    """Each repair is also the reason code of the same name."""

    INVISIBLE = Reason.FIXABLE_INVISIBLE.value
    MAILTO = Reason.FIXABLE_MAILTO.value
    DISPLAY_NAME = Reason.FIXABLE_DISPLAY_NAME.value
    SEVERAL = Reason.FIXABLE_SEVERAL.value
    SPACES = Reason.FIXABLE_SPACES.value
    COMMA = Reason.FIXABLE_COMMA.value


@dataclass(frozen=True)
class Repaired:
    repair: Repair | None  # the last repair that was needed; None: nothing found
    address: str  # the address the cell holds, normalized; "" when none


_INVISIBLE: Final = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad]")
_MAILTO: Final = re.compile(r"(?i)^\s*mailto:([^?]*)(?:\?.*)?$")
_ANGLE: Final = re.compile(r"<\s*([^<>\s]+@[^<>\s]+)\s*>")
_SEVERAL: Final = re.compile(r"[^\s,;<>]+@[^\s,;<>]+")
_AROUND: Final = re.compile(r"\s*([@.])\s*")
_NOTHING: Final = Repaired(None, "")


def repair(cell: str) -> Repaired:
    """The address *cell* holds and the repair that reads it out; ``Repaired(None, "")`` when
    the cell holds none (or is an address as it stands)."""
    text, found = cell, None
    for kind, step in _STEPS:
        fixed = step(text)
        if fixed is not None and fixed != text:
            text, found = fixed, kind
            parsed = parse_address(text)
            if parsed.syntax not in (Syntax.INVALID, Syntax.EMPTY):
                return Repaired(found, parsed.email)
    return _NOTHING


def _invisible(text: str) -> str | None:
    return _INVISIBLE.sub("", text)


def _mailto(text: str) -> str | None:
    match = _MAILTO.match(text)
    return match.group(1).strip() if match else None


def _display_name(text: str) -> str | None:
    match = _ANGLE.search(text)
    return match.group(1) if match else None


def _several(text: str) -> str | None:
    found = _SEVERAL.findall(text)
    return found[0] if len(found) > 1 else None


def _spaces(text: str) -> str | None:
    return _AROUND.sub(r"\1", text.strip())


def _comma(text: str) -> str | None:
    local, at, domain = text.rpartition("@")
    return f"{local}@{domain.replace(',', '.')}" if at and "," in domain else None


_STEPS: Final = (
    (Repair.INVISIBLE, _invisible),
    (Repair.MAILTO, _mailto),
    (Repair.DISPLAY_NAME, _display_name),
    (Repair.SEVERAL, _several),
    (Repair.SPACES, _spaces),
    (Repair.COMMA, _comma),
)


def repair_column(raw: pl.Series, syntax: pl.Series) -> pl.DataFrame:
    """REPAIR (a :class:`Repair` value or "") and REPAIRED (the address, or "") for each row;
    only rows whose SYNTAX is invalid are looked at: the common messy shapes with expressions
    (one :func:`repair` per distinct shape, :mod:`pipeline.core.addresses.shapes`), the rest
    once per distinct cell."""
    invalid = syntax == Syntax.INVALID.value
    text = raw.cast(pl.String).fill_null("")
    rows = invalid.arg_true()
    broken = text.gather(rows)
    shaped = _settle(broken.str.strip_chars(WHITESPACE))
    settled = shaped.get_column("_settled")
    rest = broken.filter(~settled)
    cells = rest.unique().to_list()
    found = [repair(cell) for cell in cells]
    lookup = pl.DataFrame(
        {
            "_cell": cells,
            "REPAIR": [r.repair.value if r.repair else "" for r in found],
            "REPAIRED": [r.address for r in found],
        },
        schema={"_cell": pl.String, "REPAIR": pl.String, "REPAIRED": pl.String},
    )
    looked_up = pl.DataFrame({"_cell": rest}).join(
        lookup, on="_cell", how="left", maintain_order="left"
    )
    rest_rows = rows.filter(~settled)
    shaped_rows = rows.filter(settled)
    empty = pl.repeat("", text.len(), dtype=pl.String, eager=True)
    return pl.DataFrame(
        {
            column: empty.scatter(shaped_rows, shaped.filter(settled).get_column(column))
            .scatter(rest_rows, looked_up.get_column(column))
            .alias(column)
            for column in ("REPAIR", "REPAIRED")
        }
    )


def _settle(text: pl.Series) -> pl.DataFrame:
    """``_settled``, REPAIR and REPAIRED for trimmed invalid cells of a common messy shape."""
    cut = cut_shapes(text)
    kinds = cut.get_column("_kind").unique().to_list()
    answers = [_shape_repair(kind) for kind in kinds]
    table = pl.DataFrame(
        {
            "_kind": kinds,
            "_known": [a is not None for a in answers],
            "REPAIR": [a or "" for a in answers],
        },
        schema={"_kind": pl.String, "_known": pl.Boolean, "REPAIR": pl.String},
    )
    address = pl.concat_str("local", pl.lit("@"), pl.col("host").str.to_lowercase())
    return cut.join(table, on="_kind", how="left", maintain_order="left").select(
        # A "?" ends a mailto: link's address (RFC 6068): the stand-in has none.
        _settled=pl.col("_known").fill_null(False)
        & pl.col("_fits")
        & ~pl.col("local").str.contains("?", literal=True).fill_null(True),
        REPAIR="REPAIR",
        REPAIRED=pl.when(pl.col("REPAIR") != "").then(address).otherwise(pl.lit("")),
    )


@functools.lru_cache(maxsize=1024)
def _shape_repair(kind: str | None) -> str | None:
    """The repair of one shape's stand-in ("" none), or None when its answer is not the
    stand-in's own address (then the shape's cells are repaired one by one)."""
    made = stand_in(kind)
    if made is None:
        return None
    found = repair(made[0])
    if found.address not in ("", STAND_IN_ADDRESS):
        return None
    return found.repair.value if found.repair and found.address else ""
