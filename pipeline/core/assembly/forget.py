"""An opt-out or an erasure, carried to every store that holds the person's identifiers.

``listclean contacts suppress`` and ``listclean contacts erase`` name a person by email or phone
(and, to reach records only their name leads to, by name). The contact store finds whom that
reaches (:mod:`pipeline.core.contacts.privacy`) and returns their email addresses; this module
then has the other stores forget those addresses. The wings do not know each other, so the
fan-out lives here, above them.

=================  ==========================================  ===============================
store              suppress                                    erase
=================  ==========================================  ===============================
contact store      records hidden from every search            records deleted; a value they
                                                               shared (a household landline)
                                                               taken out of others' records
suppression list   the identifiers, as keyed digests only: they block later imports and searches
audit log          lookups about the person keep that they happened, not whom they were about
mailbox cache      cached SMTP and remote answers for the addresses deleted (they can be learned
                   again)
paid-answer cache  the paid verifiers' answers for the addresses deleted
bounce ledger      the addresses' bounce events deleted
run history        the addresses' hashes, VERDICT, REASON and SCORE taken out of every run
=================  ==========================================  ===============================

An opt-out is an objection to the service processing the person's data at all, so it reaches
the same stores as an erasure; only the contact records themselves are kept (hidden), so that
the same person imported again stays out. Phone numbers are only ever kept by the contact store
and the audit log.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.contacts.store import ContactStore
from pipeline.core.contacts.types import Reached
from pipeline.core.history.store import RunHistory
from pipeline.core.mailboxes.cache import MailboxCache
from pipeline.core.mailboxes.vendors.store import PaidAnswers


class Request(StrEnum):
    SUPPRESS = "suppress"
    ERASE = "erase"


@dataclass(frozen=True)
class Forgotten:
    contacts: Reached
    mailbox_answers: int  # cached answers deleted (SMTP, remote and paid)
    bounce_events: int  # ledger events deleted
    history_entries: int = 0  # (run, address) entries taken out of the run history


def forget(
    request: Request,
    contacts: ContactStore,
    mailboxes: MailboxCache | None,
    ledger: BounceLedger | None,
    *,
    email: str | None = None,
    phone: str | None = None,
    name: str | None = None,
    paid: PaidAnswers | None = None,
    history: RunHistory | None = None,
) -> Forgotten:
    """Carry out *request* for the person named by *email* / *phone* (and *name*). A store that
    does not exist yet (None) holds nothing to forget."""
    act = contacts.erase if request is Request.ERASE else contacts.suppress
    reached = act(email=email, phone=phone, name=name)
    keys = reached.email_keys
    answers = mailboxes.forget(keys) if mailboxes is not None else 0
    answers += paid.forget(keys) if paid is not None else 0
    events = ledger.forget(keys) if ledger is not None else 0
    entries = history.forget(keys) if history is not None else 0
    return Forgotten(reached, answers, events, entries)
