"""SMTP replies, read by stage and code class first, enhanced status code next, and phrases
last (table-driven)."""

from __future__ import annotations

import pytest

from pipeline.core.mailboxes.smtp import Mailbox, Reply, Stage, classify


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


S = "postmaster@localhost"  # our sender in the rows below
R = "jane.doe@acme.com"  # the recipient asked about
EOP = "acme-com.mail.protection.outlook.com"  # a Microsoft 365 tenant's exchange
GREETING, HELLO, MAIL, RCPT = Stage.GREETING, Stage.HELLO, Stage.MAIL, Stage.RCPT
OURS, GONE, OFF = Mailbox.SENDER_REFUSED, Mailbox.NO_SUCH_USER, Mailbox.DISABLED
LATER, BLOCKED, FULL, SAYS_NO = Mailbox.DEFERRED, Mailbox.BLOCKED, Mailbox.FULL, Mailbox.REJECTED
DBEB = "550 5.4.1 Recipient address rejected: Access denied. AS(201806281)"


@pytest.mark.parametrize(
    ("stage", "text", "outcome", "exchange"),
    [
        # Before RCPT nothing is about the mailbox, whatever the words (RFC 5321 §3.3).
        (MAIL, "550 User unknown", OURS, ""),
        (MAIL, "550 5.1.1 Invalid email address", OURS, ""),
        (MAIL, f"553 5.1.8 <{S}>: Sender address rejected: Domain not found", OURS, ""),
        (MAIL, f"451 4.1.8 Domain of sender address {S} does not resolve", OURS, ""),
        (MAIL, "452 4.3.1 Insufficient system resources", LATER, ""),
        (MAIL, "530 5.7.1 Client was not authenticated", BLOCKED, ""),
        (MAIL, "421 4.7.0 [TSS04] Messages from 192.0.2.7 temporarily deferred", BLOCKED, ""),
        (HELLO, "501 Syntactically invalid EHLO argument(s)", OURS, ""),
        (GREETING, "554 No SMTP service here", BLOCKED, ""),
        (GREETING, "550 Requested action not taken: mailbox unavailable", BLOCKED, ""),
        # At RCPT: X.1.7 / X.1.8 are about the sender, X.7.x about policy (RFC 3463).
        (RCPT, f"550 5.1.8 <{S}>: Sender address rejected: Domain not found", OURS, ""),
        (RCPT, f"450 4.1.8 <{S}>: Sender address rejected: Domain not found", OURS, ""),
        (RCPT, f"550 5.1.7 <{S}>: Sender address rejected: undeliverable address", OURS, ""),
        (RCPT, f"550 Verification failed for <{S}>\nUnrouteable address\nSender verify failed",
         OURS, ""),
        (RCPT, f"550 Verification failed for <{S}>\nNo Such User Here\nSender verify failed",
         OURS, ""),
        (RCPT, "504 5.5.2 <localhost>: Helo command rejected: need fully-qualified hostname",
         OURS, ""),
        # A reply that names our sender and not the recipient is about our sender.
        (RCPT, f"550 5.1.1 <{S}>: Recipient address rejected: User unknown", OURS, ""),
        (RCPT, f"550 5.1.1 <{R}>: Recipient address rejected: User unknown", GONE, ""),
        (RCPT, "550 5.1.1 Sender IP 192.0.2.7 blocked by local policy", BLOCKED, ""),
        (RCPT, "550 5.1.1 <x@y.com>: Recipient address rejected: User unknown in relay recipient "
         "table", GONE, ""),
        (RCPT, "550 5.7.1 No such user!", BLOCKED, ""),
        (RCPT, "550 5.7.1 No such user!", GONE, "mx.yandex.ru"),  # a documented quirk
        # A 4xx is transient: never "no such user" or "disabled" (RFC 5321 §4.2.1).
        (RCPT, "450 4.2.1 The user you are trying to contact is receiving mail at a rate that",
         LATER, ""),
        (RCPT, "450 4.2.1 The recipient has exceeded message rate limit.", LATER, ""),
        (RCPT, "450 4.1.1 <x@y.com>: Recipient address rejected: unverified address", LATER, ""),
        (RCPT, "450 User unknown, try later", LATER, ""),
        (RCPT, "450 4.7.1 Error: too many recipients from 192.0.2.7", LATER, ""),
        (RCPT, "451 Blocked - see https://www.spamcop.net/bl.shtml?192.0.2.7", BLOCKED, ""),
        (RCPT, "450 4.2.1 Please try again later. (#id-5.9.4)", LATER, ""),
        # 552 is storage (RFC 5321 §4.2.3), even in the words of a missing mailbox.
        (RCPT, "552 Requested action not taken: mailbox unavailable", FULL, ""),
        (RCPT, "552 5.2.2 Mailbox full", FULL, ""),
        # Words of the recipient, when there is no code (qmail puts it at the end).
        (RCPT, "554 Unknown Recipient (#5.1.1)", GONE, ""),
        (RCPT, "550 No such person at this address", GONE, ""),
        (RCPT, f"550 Unknown local part jane.doe in <{R}>", GONE, ""),
        (RCPT, "554 delivery error: This user doesn't have an account", GONE, ""),
        (RCPT, "550 Unrouteable address", GONE, ""),
        (RCPT, "550 Address rejected", SAYS_NO, ""),  # whose address?
        (RCPT, "550 Sender address not found", OURS, ""),
        (RCPT, "553 sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)",
         BLOCKED, ""),
        (RCPT, "550 User not local or invalid address - Relay denied", BLOCKED, ""),
        # Exchange Online's Directory-Based Edge Blocking: "Access denied" means no such user,
        # on Microsoft 365's own exchanges only.
        (RCPT, DBEB, GONE, EOP),
        (RCPT, DBEB, SAYS_NO, "mx.acme.com"),
        (RCPT, "550 5.7.1 Recipient address rejected: Access denied", BLOCKED, EOP),
        # 5.2.1 is "disabled" only when permanent.
        (RCPT, "550 5.2.1 The email account that you tried to reach is disabled.", OFF, ""),
    ],
)  # fmt: skip
def test_stage_and_code_class_decide_first(
    stage: Stage, text: str, outcome: Mailbox, exchange: str
) -> None:
    code, _, message = text.partition(" ")
    assert classify(Reply(int(code), message, stage, S, R, exchange)) is outcome


def test_no_reply_before_rcpt_is_ever_about_the_mailbox() -> None:
    for stage in (Stage.GREETING, Stage.HELLO, Stage.MAIL):
        for code in (421, 450, 451, 452, 500, 501, 530, 550, 551, 552, 553, 554):
            for message in ("5.1.1 User unknown", "No such user", "5.2.1 Mailbox disabled"):
                outcome = classify(Reply(code, message, stage, S, R))
                assert outcome not in (Mailbox.NO_SUCH_USER, Mailbox.DISABLED, Mailbox.OK)


def test_no_4xx_is_ever_invalid() -> None:
    for code in (421, 450, 451, 452):
        for message in ("4.1.1 User unknown", "4.2.1 Mailbox disabled", "No such user here"):
            outcome = classify(Reply(code, message, Stage.RCPT, S, R))
            assert outcome not in (Mailbox.NO_SUCH_USER, Mailbox.DISABLED)
