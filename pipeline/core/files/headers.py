"""Where a table's header is: its first record, unless a report's title rows stand above it.

Reports exported from a CRM (Salesforce's formatted reports, HubSpot's report exports, a
sheet someone titled by hand) begin with lines about the report: its name, when it was run,
its filters, a blank row; the header comes after them. :func:`find_header` is the one rule
that finds it, for delimited text and workbooks alike (a workbook's sheet is read as delimited
text): the header is the first record among the first :data:`HEADER_WINDOW` that

1. fills at least two cells, none of which holds an ``@`` (a header names columns; a row
   with an address in it is a record),
2. fills more cells than every record above it (title rows are sparse: a title, a date, a
   filter, one or two cells each), and
3. the rows below follow: of the next :data:`FOLLOW` non-blank records, at least
   :data:`FOLLOW_SHARE` end within its width (a list's rows do not reach past its header).

When no record does, the header is the first non-blank record, as for any plain list (a
one-column list's header fills one cell). The records above the header are not rows of the
list: they go to the rejects as :data:`TITLE_ROW` (or ``empty_row``, the blank ones), so rows in
= rows out + rows rejected still holds. ``--header-row N`` names the header's line instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

HEADER_WINDOW: Final = 50  # records looked at for the header
FOLLOW: Final = 10  # non-blank records below a candidate that must follow it
FOLLOW_SHARE: Final = 0.8
# The records the rule may look at: a reader that has this many (or the whole file) decides as
# one that has them all.
RULE_RECORDS: Final = HEADER_WINDOW + FOLLOW
TITLE_ROW: Final = "title_row"
# Loose on purpose: this finds address-like cells, the syntax check judges each value later.
ADDRESS_LIKE: Final = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
_BLANK: Final = " \t\r\n\u00a0"


def filled(cells: Sequence[str]) -> int:
    """The cells of a record that hold something other than whitespace."""
    return sum(1 for cell in cells if cell.strip(_BLANK))


def width(cells: Sequence[str]) -> int:
    """The place just after a record's last non-blank cell (0 for a blank record)."""
    for at in range(len(cells), 0, -1):
        if cells[at - 1].strip(_BLANK):
            return at
    return 0


def find_header(records: Sequence[Sequence[str] | None]) -> int:
    """The index of the header among *records* (the first records of a table, at least
    :data:`RULE_RECORDS` of them unless the table has fewer); None marks a record that could
    not be read, which is never the header. See the module's doc for the rule."""
    counts = [filled(cells) if cells is not None else 0 for cells in records]
    most_above = 0
    for index, cells in enumerate(records[:HEADER_WINDOW]):
        if cells is None:
            continue
        count = counts[index]
        below = records[index + 1 :]
        if count >= 2 and count > most_above and _names_columns(cells):  # noqa: SIM102
            if _followed(width(cells), below, counts[index + 1 :]):
                return index
        most_above = max(most_above, count)
    return next((i for i, n in enumerate(counts) if n), 0)


def _names_columns(cells: Sequence[str]) -> bool:
    return not any("@" in cell for cell in cells)


def _followed(header: int, below: Sequence[Sequence[str] | None], counts: Sequence[int]) -> bool:
    widths = [width(cells) for cells, n in zip(below, counts, strict=True) if cells and n][:FOLLOW]
    if not widths:
        return True
    return sum(1 for w in widths if w <= header) >= FOLLOW_SHARE * len(widths)
