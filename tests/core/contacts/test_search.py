"""Search terms: what kind each is and its normalized value."""

from __future__ import annotations

import pytest

from pipeline.core.contacts.search import classify_term
from pipeline.core.contacts.types import TermKind

# --------------------------------------------------------------------------- terms


@pytest.mark.parametrize(
    ("term", "region", "kind", "value"),
    [
        (" Jane.Roe@MadeUp-Mail.NET ", "US", TermKind.EMAIL, "jane.roe@madeup-mail.net"),
        ("(217) 555-0143", "US", TermKind.PHONE, "+12175550143"),
        ("217.555.0143", "US", TermKind.PHONE, "+12175550143"),
        ("+44 7700 900123", "US", TermKind.PHONE, "+447700900123"),
        ("07700 900123", "GB", TermKind.PHONE, "+447700900123"),
        ("07700 900123", "US", TermKind.NAME, "07700 900123"),  # too long for a US number
        ("555-0143", "US", TermKind.NAME, "555 0143"),  # no area code: possible only locally
        ("1-800-FLOWERS", "US", TermKind.NAME, "1 800 flowers"),  # vanity numbers are text
        ("12 Elm Street", "US", TermKind.NAME, "12 elm street"),
        ("jane@", "US", TermKind.NAME, "jane"),  # an @ alone does not make an address
        ("jane@example.com", "US", TermKind.NAME, "jane example com"),  # reserved domain
        ("Dr. Jane  ROE", "US", TermKind.NAME, "jane roe"),
        ("Zoë Åberlund", "US", TermKind.NAME, "zoe aberlund"),
        ("   ", "US", TermKind.NAME, ""),
    ],
)
def test_classify_term(term: str, region: str, kind: TermKind, value: str) -> None:
    assert classify_term(term, region) == (kind, value)
