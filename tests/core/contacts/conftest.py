"""A store holding the sample contacts, copied for each test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.contacts.store import ContactStore
from pipeline.core.contacts.types import ContactImport
from tests.core.contacts.common import (
    CONFIG,
    SAMPLE,
    Clock,
)


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ContactImport]:
    path = tmp_path_factory.mktemp("contacts") / "contacts.sqlite"
    with ContactStore(path, CONFIG, clock=Clock()) as store:
        report = store.import_file(SAMPLE, SAMPLE.name)
    return path, report


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(
    sample_db: tuple[Path, ContactImport], tmp_path: Path, clock: Clock
) -> Iterator[ContactStore]:
    """A store holding the sample file, of this test's own."""
    path = tmp_path / "contacts.sqlite"
    shutil.copy(sample_db[0], path)
    with ContactStore(path, CONFIG, clock=clock) as opened:
        yield opened
