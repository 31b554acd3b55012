"""RFC 3464 delivery status notifications (.eml, mbox) become events."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.bounces.reports import read_bounce_file
from pipeline.core.bounces.types import BounceEvent, BounceKind
from tests.core.bounces.common import (
    DELIVERED,
    HARD,
    SAMPLE_MBOX,
    SOFT,
    utc,
    write,
)

# --------------------------------------------------------------------------- DSNs

DSN = """\
Return-Path: <>
Date: Mon, 02 Nov 2026 09:15:01 +0000
From: MAILER-DAEMON@mta.example.net (Mail Delivery System)
Subject: Undelivered Mail Returned to Sender
To: news@example.net
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
\tboundary="B1"

--B1
Content-Type: text/plain; charset=us-ascii

Your message could not be delivered.

--B1
Content-Type: message/delivery-status

Reporting-MTA: dns; mta.example.net
Arrival-Date: Mon, 02 Nov 2026 09:14:58 +0000
{recipients}
--B1
Content-Type: text/rfc822-headers

From: news@example.net
Subject: Hello

--B1--
"""


def dsn(*blocks: str) -> str:
    return DSN.format(recipients="".join(f"\n{block}\n" for block in blocks))


def block(address: str, action: str, status: str, *extra: str) -> str:
    lines = [f"Final-Recipient: rfc822; {address}", f"Action: {action}", f"Status: {status}"]
    return "\n".join([*lines, *extra])


@pytest.mark.parametrize(
    ("recipient", "expected"),
    [
        (block("Ann@Gmail.com", "failed", "5.1.1"), (HARD, "5.1.1")),
        (block("ann@gmail.com", "failed", "5.2.2 (mailbox full)"), (HARD, "5.2.2")),
        (block("ann@gmail.com", "failed", "4.4.7"), (SOFT, "4.4.7")),
        (block("ann@gmail.com", "delayed", "4.2.2"), (SOFT, "4.2.2")),
        (block("ann@gmail.com", "delivered", "2.0.0"), (DELIVERED, "2.0.0")),
        (block("ann@gmail.com", "Failed (bad mailbox)", "5.1.1"), (HARD, "5.1.1")),
        (block("ann@gmail.com", "failed", ""), (HARD, "")),
        (block("<ann@gmail.com>", "failed", "5.1.1"), (HARD, "5.1.1")),
        (
            "Original-Recipient: rfc822;ann@gmail.com\nAction: failed\nStatus: 5.1.1",
            (HARD, "5.1.1"),
        ),
        (block("ann@gmail.com", "relayed", "2.0.0"), None),
        (block("ann@gmail.com", "expanded", "2.0.0"), None),
        (block("ann@gmail.com", "bounced", "5.1.1"), "unknown Action 'bounced'"),
        (block("not an address", "failed", "5.1.1"), "recipient 'not an address' is no address"),
        ("Final-Recipient: x400; c=us;a=x;p=y\nAction: failed\nStatus: 5.1.1", "type 'x400'"),
        ("Action: failed\nStatus: 5.1.1", "no Final-Recipient field"),
    ],
)
def test_dsn_recipient_blocks(
    tmp_path: Path, recipient: str, expected: tuple[BounceKind, str] | str | None
) -> None:
    events, rejected = read_bounce_file(write(tmp_path, "one.eml", dsn(recipient)))
    if expected is None:
        assert (events, rejected) == ([], [])
    elif isinstance(expected, str):
        assert events == []
        [(where, why)] = rejected
        assert where == "one.eml, recipient 1"
        assert expected in why
    else:
        assert rejected == []
        [found] = events
        assert (found.key, found.domain, found.kind, found.status) == (
            "ann@gmail.com",
            "gmail.com",
            *expected,
        )


def test_a_single_eml_dsn_with_several_recipients(tmp_path: Path) -> None:
    text = dsn(
        block(
            "ann@gmail.com",
            "failed",
            "5.1.1",
            "Diagnostic-Code: smtp; 550-5.1.1 The email account that you tried to reach does",
            "    not exist.",
            "Last-Attempt-Date: Mon, 02 Nov 2026 09:14:59 +0000",
        ),
        block(
            "bob@yahoo.com", "delayed", "4.4.1", "Diagnostic-Code: X-Postfix; connection timed out"
        ),
    )
    # Named like neither: recognised by its header.
    events, rejected = read_bounce_file(write(tmp_path, "bounce.txt", text))
    assert rejected == []
    assert events == [
        BounceEvent(
            "ann@gmail.com",
            "ann@gmail.com",
            "gmail.com",
            HARD,
            "5.1.1",
            utc("2026-11-02T09:14:59"),  # Last-Attempt-Date
            "550-5.1.1 The email account that you tried to reach does not exist.",
            "bounce.txt",
        ),
        BounceEvent(
            "bob@yahoo.com",
            "bob@yahoo.com",
            "yahoo.com",
            SOFT,
            "4.4.1",
            utc("2026-11-02T09:14:58"),  # Arrival-Date
            "connection timed out",
            "bounce.txt",
        ),
    ]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (
            "From: a@b.com\nSubject: Out of office\nContent-Type: text/plain\n\nAway.\n",
            "not a delivery status notification (RFC 3464): text/plain, subject 'Out of office'",
        ),
        (DSN.format(recipients=""), "the delivery status has no per-recipient fields"),
    ],
)
def test_messages_that_are_no_usable_dsn_are_rejected(tmp_path: Path, text: str, why: str) -> None:
    assert read_bounce_file(write(tmp_path, "m.eml", text)) == ([], [("m.eml", why)])


def test_the_sample_mbox() -> None:
    events, rejected = read_bounce_file(SAMPLE_MBOX)
    assert [(e.key, e.kind, e.status, e.at) for e in events] == [
        # Postfix: no Last-Attempt-Date, so the Arrival-Date.
        ("jonas.jones2004@initech.io", HARD, "5.1.1", utc("2026-10-13T14:02:09")),
        # Exchange-style, no dates in the report at all: the message's Date.
        ("lmuller@northwind-traders.com", HARD, "5.1.10", utc("2026-10-28T09:41:17")),
        ("sarahfischer@northwind-traders.com", HARD, "5.1.10", utc("2026-10-28T09:41:17")),
        # Success report; its second recipient was "relayed" and is skipped.
        ("ashleycarter@fastmail.com", DELIVERED, "2.0.0", utc("2026-11-06T12:00:38")),
        # "failed" after retrying a temporary error is soft.
        ("allen.k@orange.fr", SOFT, "4.4.1", utc("2026-11-05T08:14:55")),
        # Sendmail's delay warning, with Last-Attempt-Date.
        ("carol@slow-dns-co.com", SOFT, "4.4.3", utc("2026-11-14T06:29:58")),
    ]
    assert {e.source for e in events} == {"bounces.mbox"}
    assert events[0].reason.startswith("550 5.1.1 <jonas.jones2004@initech.io>: Recipient address")
    assert rejected == [
        (
            "bounces.mbox message 6",
            "not a delivery status notification (RFC 3464): text/plain, "
            "subject 'Abwesenheitsnotiz: Your November update'",
        )
    ]


def test_an_mbox_is_recognised_by_its_first_line(tmp_path: Path) -> None:
    copy = tmp_path / "bounces"
    copy.write_bytes(SAMPLE_MBOX.read_bytes())
    events, _ = read_bounce_file(copy)
    assert len(events) == 6
