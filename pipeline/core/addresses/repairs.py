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

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import polars as pl

from pipeline.core.addresses.syntax import Syntax, parse_address
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
    only rows whose SYNTAX is invalid are looked at, once per distinct cell."""
    text = raw.cast(pl.String).fill_null("")
    broken = text.filter(syntax == Syntax.INVALID.value).unique().to_list()
    found = {cell: repair(cell) for cell in broken}
    kinds = {cell: r.repair.value if r.repair else "" for cell, r in found.items()}
    addresses = {cell: r.address for cell, r in found.items()}
    invalid = syntax == Syntax.INVALID.value
    return pl.DataFrame(
        {
            "REPAIR": text.replace_strict(kinds, default="", return_dtype=pl.String),
            "REPAIRED": text.replace_strict(addresses, default="", return_dtype=pl.String),
        }
    ).with_columns(pl.when(invalid).then(pl.all()).otherwise(pl.lit("")).name.keep())
