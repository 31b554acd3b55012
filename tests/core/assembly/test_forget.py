"""An opt-out or an erasure carried to every store that holds the person: the contact store,
the mailbox cache and the bounce ledger."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline.core.addresses.syntax import parse_address
from pipeline.core.assembly.forget import Request, forget
from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.bounces.types import BounceEvent, BounceKind
from pipeline.core.config import BouncesConfig, ContactsConfig, VerifyConfig
from pipeline.core.contacts.store import ContactStore
from pipeline.core.history.keys import hashes_of
from pipeline.core.history.store import RunHistory
from pipeline.core.history.types import RunStart
from pipeline.core.mailboxes.cache import MailboxCache
from pipeline.core.mailboxes.types import Mailbox, MailboxResult, RemoteAnswer
from pipeline.core.verdict import Verdict
from tests.conftest import REPO

SAMPLE = REPO / "sample_data" / "contacts.csv"
ZOE = "zoe.aberlund@fictional-post.net"
OTHER = "someone.else@fictional-post.net"


def stores(cache: Path) -> tuple[Path, Path, Path]:
    return cache / "contacts.sqlite", cache / "mailboxes.sqlite", cache / "bounces.sqlite"


@pytest.fixture
def zoe_everywhere(tmp_path: Path) -> Path:
    """Zoë in every store: the contact store, the mailbox cache and the bounce ledger."""
    root = tmp_path / "cache"
    contacts, mailboxes, bounces = stores(root)
    with ContactStore(contacts, ContactsConfig()) as store:
        store.import_file(SAMPLE, "sample")
        lookup = store.search("Zoe Aberlund")
        store.audit(key_id="k1", client_ip="", term="Zoe Aberlund", lookup=lookup)
    with MailboxCache(mailboxes, VerifyConfig()) as answers:
        for address in (ZOE, OTHER):
            answers.put(parse_address(address).key, MailboxResult(Mailbox.OK, "250 2.1.5 Ok"))
            answers.put_remote_answer(
                parse_address(address).key, "api", RemoteAnswer(Verdict.VALID)
            )
    with BounceLedger(bounces, BouncesConfig()) as ledger:
        ledger.add(
            BounceEvent(a, parse_address(a).key, a.split("@")[1], BounceKind.SOFT, "4.2.2", 1.0,
                        "mailbox full", "r.csv")
            for a in (ZOE, OTHER)
        )  # fmt: skip
    return root


def counts(cache: Path) -> tuple[int, int, int]:
    contacts, mailboxes, bounces = stores(cache)
    with MailboxCache(mailboxes, VerifyConfig()) as answers:
        cached = len(answers.get_many([ZOE, OTHER])) + len(
            answers.remote_answers([ZOE, OTHER], "api")
        )
    with BounceLedger(bounces, BouncesConfig()) as ledger:
        events = len(ledger.events(ZOE)) + len(ledger.events(OTHER))
    with ContactStore(contacts, ContactsConfig()) as store:
        audited = sum(1 for r in store.audit_records() if r["term_hmac"])
    return cached, events, audited


def test_forget_by_phone_and_name(zoe_everywhere: Path) -> None:
    contacts, mailboxes, bounces = stores(zoe_everywhere)
    with (
        ContactStore(contacts, ContactsConfig()) as store,
        MailboxCache(mailboxes, VerifyConfig()) as answers,
        BounceLedger(bounces, BouncesConfig()) as ledger,
    ):
        done = forget(Request.ERASE, store, answers, ledger, phone="+1 206 555 0105", name="Zoë")
        assert (done.contacts.records, done.mailbox_answers, done.bounce_events) == (1, 2, 1)
        assert done.contacts.email_keys == (ZOE,)


def test_an_erasure_reaches_the_run_history(zoe_everywhere: Path) -> None:
    """Zoë, named by her phone number, is taken out of every run that decided her address."""
    contacts = stores(zoe_everywhere)[0]
    kept = pl.DataFrame(
        {"HASH": hashes_of([ZOE, OTHER]), "VERDICT": ["Valid"] * 2, "REASON": ["", ""],
         "SCORE": [0.9, 0.9]},
        schema_overrides={"HASH": pl.UInt64},
    )  # fmt: skip
    with RunHistory(zoe_everywhere / "history.sqlite") as history:
        history.begin(RunStart("r1", "crm", False, 1.0, "d", "1"))
        history.add_part("r1", 0, kept)
        history.finish("r1", 2, {})
        with ContactStore(contacts, ContactsConfig()) as store:
            done = forget(
                Request.ERASE, store, None, None, phone="+1 206 555 0105", history=history
            )
        assert done.history_entries == 1
        assert history.kept("r1")["HASH"].to_list() == hashes_of([OTHER])
