"""Every file the project creates holding keys, people, secrets or addresses is its owner's
alone, whatever the umask: the stores and the caches, their folders too."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.config import BouncesConfig, CacheConfig, ContactsConfig, VerifyConfig
from pipeline.core.contacts.store import ContactStore
from pipeline.core.db.sqlite import SqliteFile
from pipeline.core.domains.cache import DomainCache
from pipeline.core.mailboxes.cache import MailboxCache
from pipeline.service.accounts.store import ServiceStore
from tests.conftest import at_once

OPENERS: dict[str, Callable[[Path], SqliteFile | ServiceStore | ContactStore | BounceLedger]] = {
    "service store (key hashes, counters)": ServiceStore,
    "contact store (people, the suppression secret, the audit)": lambda p: ContactStore(
        p, ContactsConfig()
    ),
    "bounce ledger (addresses)": lambda p: BounceLedger(p, BouncesConfig()),
    "domain cache": lambda p: DomainCache(p, CacheConfig()),
    "mailbox cache (addresses)": lambda p: MailboxCache(p, VerifyConfig()),
}


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize("what", OPENERS)
def test_created_for_its_owner_alone(tmp_path: Path, what: str) -> None:
    path = tmp_path / "new" / "folder" / "file.sqlite"
    with umask(0o022), OPENERS[what](path) as store:
        store.ping()  # written through: the -wal and -shm files exist too
    made = [p for p in path.parent.iterdir() if p.name.startswith("file.sqlite")]
    assert path in made
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in made} == {p.name: "0o600" for p in made}
    for folder in (tmp_path / "new", tmp_path / "new" / "folder"):
        assert oct(folder.stat().st_mode & 0o777) == "0o700", folder


def test_a_new_file_opened_by_several_at_once(tmp_path: Path) -> None:
    """Several instances starting on one new store switch it to WAL together; SQLite answers
    all but one "database is locked" without waiting, and each must wait its turn instead."""
    failures: list[Exception] = []
    for round_ in range(40):
        path = tmp_path / f"store{round_}.sqlite"

        def open_store(path: Path = path) -> None:
            with SqliteFile(path, "CREATE TABLE IF NOT EXISTS t(x);", what="t", remedy=""):
                pass

        failures += at_once(6, open_store)
        with SqliteFile(path, "", what="t", remedy="") as store:
            assert store.query("PRAGMA journal_mode") == [("wal",)]
    assert failures == []
