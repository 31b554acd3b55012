"""What the contact store's tests share: the sample file, a hand-moved clock, builders."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.config import ContactsConfig
from pipeline.core.contacts.types import Contact, Lookup, Outcome
from tests.conftest import REPO

SAMPLE = REPO / "sample_data" / "contacts.csv"
CONFIG = ContactsConfig()
NOW = 1_790_000_000.0
DAY = 86400.0
HEADER = "First Name,Last Name,Street,City,State,ZIP,Phone,E-mail,Employer,Job Title\n"

MATCH, NO_MATCH = Outcome.MATCH, Outcome.NO_MATCH
AMBIGUOUS, SUPPRESSED = Outcome.AMBIGUOUS, Outcome.SUPPRESSED


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def write_csv(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def matched(lookup: Lookup) -> Contact:
    assert lookup.outcome is MATCH, lookup
    assert lookup.contact is not None
    return lookup.contact
