"""`listclean contacts suppress / erase`: the person forgotten in every store that holds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core.addresses.syntax import parse_address
from pipeline.core.assembly.forget import Request, forget
from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.bounces.types import BounceEvent, BounceKind
from pipeline.core.config import BouncesConfig, ContactsConfig, VerifyConfig
from pipeline.core.contacts.store import ContactStore
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
def cache(tmp_path: Path) -> Path:
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


@pytest.mark.parametrize("action", ["suppress", "erase"])
def test_the_command_reaches_every_store(
    cache: Path, action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert counts(cache) == (4, 2, 1)
    args = ["contacts", action, "--email", ZOE.upper(), "--cache-dir", str(cache)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1 record(s) of the person" in out and "2 cached mailbox answer(s)" in out
    assert "1 bounce event(s)" in out and "1 audit record(s)" in out
    assert counts(cache) == (2, 1, 0)  # the other address keeps its answers and events
    with ContactStore(stores(cache)[0], ContactsConfig()) as store:
        assert store.search("Zoe Aberlund").outcome.value in ("suppressed", "no_match")


def test_the_command_needs_an_email_or_a_phone(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["contacts", "erase", "--name", "Zoë Åberlund", "--cache-dir", str(cache)]) == 2
    assert "--email" in capsys.readouterr().err


def test_forget_by_phone_and_name(cache: Path) -> None:
    contacts, mailboxes, bounces = stores(cache)
    with (
        ContactStore(contacts, ContactsConfig()) as store,
        MailboxCache(mailboxes, VerifyConfig()) as answers,
        BounceLedger(bounces, BouncesConfig()) as ledger,
    ):
        done = forget(Request.ERASE, store, answers, ledger, phone="+1 206 555 0105", name="Zoë")
        assert (done.contacts.records, done.mailbox_answers, done.bounce_events) == (1, 2, 1)
        assert done.contacts.email_keys == (ZOE,)
