"""Where the header is: the first record, unless a report's title rows stand above it."""

from __future__ import annotations

import pytest

from pipeline.core.files.headers import find_header

TITLES = [["Contacts & Accounts"], ["As of 11/26/2026 10:15 AM"], ["Filtered By:", "Show: All"]]
HEADER = ["First Name", "Last Name", "Email", "City"]
ROWS = [["Ann", "Lee", "ann@acme.io", "Berlin"], ["Bo", "", "bo@x.org", ""]]


@pytest.mark.parametrize(
    ("records", "header"),
    [
        ([HEADER, *ROWS], 0),  # a plain list
        ([*TITLES, [""], HEADER, *ROWS], 4),  # a report: title, date, filter, blank row
        ([[""], [], HEADER, *ROWS], 2),  # blank rows above
        ([["email"], ["a@b.com"], ["c@d.com"]], 0),  # one column: its header fills one cell
        ([["Title"], ["email"], ["a@b.com"]], 0),  # one column under a title: not found
        # A header whose rows are wider (a ragged list) stays: no row holding an address can
        # be the header.
        ([["id", "email"], ["1", "a@b.com", "x"], ["2", "c@d.com", "y"]], 0),
        # A wide title line with the rows below it wider still is not followed.
        ([["Report", "Q3"], [], HEADER, *ROWS], 2),
        ([None, HEADER, *ROWS], 1),  # an unreadable record is never the header
        ([], 0),
    ],
)
def test_the_header_is_found(records: list[list[str] | None], header: int) -> None:
    assert find_header(records) == header


def test_a_title_as_wide_as_the_header_is_not_passed_over() -> None:
    """The header must fill more cells than every record above it."""
    records = [["Report", "Q3", "2026", "EMEA"], HEADER, *ROWS]
    assert find_header(records) == 0
