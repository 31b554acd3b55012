"""RCPT replies, read by enhanced status code first and phrase second (table-driven)."""

from __future__ import annotations

import pytest

from pipeline.core.mailboxes.smtp import Mailbox, Reply, classify


@pytest.mark.parametrize(
    ("code", "message", "outcome"),
    [
        (250, "2.1.5 OK", Mailbox.OK),
        (251, "User not local; will forward", Mailbox.OK),
        (
            550,
            "5.1.1 The email account that you tried to reach does not exist.",
            Mailbox.NO_SUCH_USER,
        ),
        (550, "5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found", Mailbox.NO_SUCH_USER),
        (553, "5.1.6 Mailbox has moved", Mailbox.NO_SUCH_USER),
        (550, "5.2.1 The email account that you tried to reach is disabled.", Mailbox.DISABLED),
        (452, "4.2.2 The email account that you tried to reach is over quota.", Mailbox.FULL),
        (552, "5.2.2 Mailbox full", Mailbox.FULL),
        (452, "4.5.3 Too many recipients", Mailbox.TOO_MANY),
        (451, "4.7.1 Greylisted, please try again in 300 seconds", Mailbox.DEFERRED),
        (450, "4.2.0 Recipient address rejected: Greylisted", Mailbox.DEFERRED),
        (421, "4.7.0 Try again later, closing connection.", Mailbox.BLOCKED),
        (550, "5.7.1 Service unavailable; client host blocked using Spamhaus", Mailbox.BLOCKED),
        (554, "5.7.1 Relay access denied", Mailbox.BLOCKED),
        (452, "4.7.28 Our system has detected an unusual rate of mail", Mailbox.BLOCKED),
        # No enhanced code: phrases decide.
        (550, "User unknown", Mailbox.NO_SUCH_USER),
        (550, "No such user here", Mailbox.NO_SUCH_USER),
        (550, "Requested action not taken: mailbox unavailable", Mailbox.NO_SUCH_USER),
        (552, "Mailbox quota exceeded - over quota", Mailbox.FULL),
        (550, "Account disabled", Mailbox.DISABLED),
        (554, "Your IP is listed on a blacklist", Mailbox.BLOCKED),
        (452, "Too many recipients", Mailbox.TOO_MANY),
        (450, "Requested mail action not taken", Mailbox.DEFERRED),
        (550, "Computer says no", Mailbox.REJECTED),
    ],
)
def test_classify(code: int, message: str, outcome: Mailbox) -> None:
    assert classify(Reply(code, message)) is outcome


def test_enhanced_code_is_read_from_the_start_of_the_message() -> None:
    assert Reply(550, "5.1.1 <x@y.com>: Recipient address rejected").enhanced == "5.1.1"
    assert Reply(550, "User unknown (5.1.1 is not at the start)").enhanced == ""
