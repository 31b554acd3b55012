"""The bounce ledger: reading reports (tables and RFC 3464 DSNs) and the flags they add up to."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from pipeline.core.bounces.ledger import (
    BounceEvent,
    BounceFlags,
    BounceKind,
    BounceLedger,
    ImportReport,
    read_bounce_file,
)
from pipeline.core.config import BouncesConfig
from pipeline.core.errors import InputError, StoreError
from tests.conftest import REPO

SAMPLE_CSV = REPO / "sample_data" / "bounces.csv"
SAMPLE_MBOX = REPO / "sample_data" / "bounces.mbox"
HARD, SOFT, DELIVERED = BounceKind.HARD, BounceKind.SOFT, BounceKind.DELIVERED
DAY = 86400.0
# The sample reports are dated 2026 and meant to be judged on this day.
SAMPLE_NOW = dt.datetime(2026, 11, 20, tzinfo=dt.UTC).timestamp()
MTIME = 1_790_000_000.0


def utc(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()


def write(tmp_path: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    os.utime(path, (MTIME, MTIME))
    return path


def event(key: str, kind: BounceKind, at: float, status: str = "", reason: str = "") -> BounceEvent:
    return BounceEvent(key, key, key.rpartition("@")[2], kind, status, at, reason, "test")


# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.csv", "email,type,date,reason\nAnn@Gmail.com,hard,2026-10-01T12:00:00Z,gone\n"),
        ("b.csv", "E-Mail;Kind;Timestamp;Diagnostic\nAnn@Gmail.com;hard;1790856000;gone\n"),
        (
            "c.csv",
            "Recipient\tBounce Type\tTime\tMessage\nAnn@Gmail.com\thard\t2026-10-01 12:00\tgone\n",
        ),
        (
            "d.csv",
            "ADDRESS|bounce_type|Bounced_At|REASON\nAnn@Gmail.com|hard|2026-10-01T14:00+02:00|gone\n",
        ),
        (
            "e.csv",
            "\ufeffEmail Address,Status,date,reason\n"
            "Ann@Gmail.com,5.1.1,2026-10-01T12:00:00Z,gone\n",
        ),
        ("f.csv", "id,email,code,date,reason\n7,Ann@Gmail.com,550,2026-10-01T12:00:00Z,gone\n"),
        ("g.csv", "email,smtp_status,date,reason\nAnn@Gmail.com,550,2026-10-01T12:00:00Z,gone\n"),
        (
            "h.txt",
            'email,type,date,reason\nAnn@Gmail.com,hard,"Thu, 1 Oct 2026 12:00:00 +0000",gone\n',
        ),
    ],
)
def test_table_columns_are_found_by_any_spelling(tmp_path: Path, name: str, text: str) -> None:
    events, rejected = read_bounce_file(write(tmp_path, name, text))
    assert rejected == []
    [found] = events
    assert (found.email, found.key, found.domain) == ("Ann@Gmail.com", "ann@gmail.com", "gmail.com")
    assert (found.kind, found.at, found.reason, found.source) == (
        HARD,
        utc("2026-10-01T12:00"),
        "gone",
        name,
    )
    assert found.status == ("5.1.1" if "5.1.1" in text else "")


@pytest.mark.parametrize(
    ("kind", "status", "expected"),
    [
        ("hard", "", (HARD, "")),
        ("Permanent", "", (HARD, "")),
        ("HardBounce", "", (HARD, "")),
        ("soft", "", (SOFT, "")),
        ("transient", "", (SOFT, "")),
        ("Soft bounce", "", (SOFT, "")),
        ("delivered", "", (DELIVERED, "")),
        ("success", "", (DELIVERED, "")),
        ("", "5.1.1", (HARD, "5.1.1")),
        ("", "smtp; 550-5.1.1 user unknown", (HARD, "5.1.1")),
        ("", "4.2.2", (SOFT, "4.2.2")),
        ("", "2.0.0", (DELIVERED, "2.0.0")),
        ("", "550", (HARD, "")),
        ("", "554 rejected", (HARD, "")),
        ("", "451", (SOFT, "")),
        ("", "421 try again later", (SOFT, "")),
        ("", "250 ok", (DELIVERED, "")),
        ("soft", "5.2.2", (SOFT, "5.2.2")),  # an explicit type wins over the status class
        ("hard", "n/a", (HARD, "")),
        ("bogus", "5.1.1", "unknown bounce type 'bogus'"),
        ("", "999", "status '999' is no SMTP status code"),
        ("", "5.1", "status '5.1' is no SMTP status code"),
        ("", "", "neither a bounce type nor an SMTP status"),
    ],
)
def test_kind_from_type_or_status(
    tmp_path: Path, kind: str, status: str, expected: tuple[BounceKind, str] | str
) -> None:
    path = write(tmp_path, "b.csv", f'email,type,status\nann@gmail.com,{kind},"{status}"\n')
    events, rejected = read_bounce_file(path)
    if isinstance(expected, str):
        assert events == []
        assert len(rejected) == 1
        assert rejected[0][0] == "b.csv line 2"
        assert expected in rejected[0][1]
    else:
        assert rejected == []
        assert [(e.kind, e.status) for e in events] == [expected]


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("2026-10-01T12:00:00Z", utc("2026-10-01T12:00")),
        ("2026-10-01T14:00:00+02:00", utc("2026-10-01T12:00")),
        ("2026-10-01 12:00:00", utc("2026-10-01T12:00")),  # no zone: UTC
        ("2026-10-01", utc("2026-10-01T00:00")),
        ("1790856000", utc("2026-10-01T12:00")),
        ("1790856000.5", utc("2026-10-01T12:00") + 0.5),
        ("Thu, 01 Oct 2026 12:00:00 GMT", utc("2026-10-01T12:00")),
        ("", MTIME),  # no date: the file's modification time
        ("  ", MTIME),
    ],
)
def test_dates(tmp_path: Path, cell: str, expected: float) -> None:
    events, rejected = read_bounce_file(
        write(tmp_path, "b.csv", f'email,type,date\na@b.com,hard,"{cell}"\n')
    )
    assert rejected == []
    assert [e.at for e in events] == [expected]


def test_bad_rows_are_rejected_with_their_line_and_reason(tmp_path: Path) -> None:
    text = (
        "email,type,date,reason\n"
        "good@gmail.com,hard,2026-10-01,ok\n"
        "no-at-sign.com,hard,2026-10-01,x\n"
        ",hard,2026-10-01,x\n"
        "\n"
        "x@localhost,hard,2026-10-01,x\n"
        "late@gmail.com,hard,last tuesday,x\n"
        "wide@gmail.com,hard,2026-10-01,x,extra\n"
        '"multi@gmail.com",soft,2026-10-02,"line one\nline two"\n'
        "odd@gmail.com,maybe,2026-10-01,x\n"
    )
    events, rejected = read_bounce_file(write(tmp_path, "b.csv", text))
    assert [(e.key, e.reason) for e in events] == [
        ("good@gmail.com", "ok"),
        ("multi@gmail.com", "line one line two"),
    ]
    assert [where for where, _ in rejected] == [
        "b.csv line 8",
        "b.csv line 3",
        "b.csv line 4",
        "b.csv line 6",
        "b.csv line 7",
        "b.csv line 11",
    ]
    reasons = dict(rejected)
    assert "row has 5 fields but the header has 4" in reasons["b.csv line 8"]
    assert "no address in 'no-at-sign.com'" in reasons["b.csv line 3"]
    assert "empty" in reasons["b.csv line 4"]
    assert "special-use" in reasons["b.csv line 6"]
    assert "unreadable date 'last tuesday'" in reasons["b.csv line 7"]
    assert "unknown bounce type 'maybe'" in reasons["b.csv line 11"]


def test_a_table_without_type_or_status_rejects_every_row(tmp_path: Path) -> None:
    events, rejected = read_bounce_file(
        write(tmp_path, "b.csv", "email,date\na@b.com,\nc@d.com,\n")
    )
    assert events == []
    assert [why for _, why in rejected] == [
        "the file has no type or status column: hard or soft?"
    ] * 2


def test_windows_1252_is_read(tmp_path: Path) -> None:
    text = "email;type;reason\nfrancois@orange.fr;soft;bo\u00eete pleine\n"
    events, _ = read_bounce_file(write(tmp_path, "b.csv", text, encoding="cp1252"))
    assert [e.reason for e in events] == ["bo\u00eete pleine"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,name\n1,Ann\n", "Its columns are: 'id', 'name'"),
        ("", r"Its columns are: \(none\)"),
    ],
)
def test_a_table_without_an_email_column_is_an_input_error(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        read_bounce_file(write(tmp_path, "b.csv", text))


@pytest.mark.parametrize("name", ["absent.csv", "absent.mbox"])
def test_a_missing_file_is_an_input_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(InputError, match="Cannot read the bounce file"):
        read_bounce_file(tmp_path / name)


def test_parquet_with_typed_columns(tmp_path: Path) -> None:
    path = tmp_path / "b.parquet"
    pl.DataFrame(
        {
            "Recipient": ["Ann@Gmail.com", "bob@yahoo.com", "broken", "eve@aol.com", None],
            "SMTP_Status": [550, 421, 550, 250, 550],
            "Timestamp": [dt.datetime(2026, 10, 1, 12), None, None, None, None],
        }
    ).write_parquet(path)
    os.utime(path, (MTIME, MTIME))
    events, rejected = read_bounce_file(path)
    assert [(e.key, e.kind, e.at) for e in events] == [
        ("ann@gmail.com", HARD, utc("2026-10-01T12:00")),
        ("bob@yahoo.com", SOFT, MTIME),
        ("eve@aol.com", DELIVERED, MTIME),
    ]
    assert [where for where, _ in rejected] == ["b.parquet row 3", "b.parquet row 5"]


def test_a_broken_parquet_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="as Parquet"):
        read_bounce_file(write(tmp_path, "b.parquet", "PAR1 not really"))


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


# --------------------------------------------------------------------------- the ledger


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[BounceLedger]:
    with BounceLedger(tmp_path / "bounces.sqlite", BouncesConfig(), lambda: SAMPLE_NOW) as opened:
        yield opened


def test_importing_twice_adds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bounces.sqlite"
    with BounceLedger(path, BouncesConfig()) as ledger:
        first = ledger.import_file(SAMPLE_CSV)
        assert first == ImportReport(read=32, added=32, duplicates=0, rejected=[])
        mbox = ledger.import_file(SAMPLE_MBOX)
        assert (mbox.read, mbox.added, mbox.duplicates, len(mbox.rejected)) == (6, 6, 0, 1)
    with BounceLedger(path, BouncesConfig()) as ledger:  # and across reopening
        assert ledger.import_file(SAMPLE_CSV) == ImportReport(32, 0, 32, [])
        assert ledger.import_file(SAMPLE_MBOX).added == 0


def test_add_counts_duplicates_within_one_batch_and_skips_keyless_events(
    ledger: BounceLedger,
) -> None:
    one = event("a@b.com", HARD, 1.0, "5.1.1", "gone")
    other_reason = event("a@b.com", HARD, 1.0, "5.1.1", "user unknown")
    keyless = BounceEvent("??", "", "", HARD, "", 1.0, "", "test")
    assert ledger.add([one, one, other_reason, keyless]) == (2, 1)
    assert ledger.add([]) == (0, 0)


@pytest.mark.parametrize(
    ("history", "known"),
    [
        ([(HARD, 1)], True),
        ([(HARD, 1), (DELIVERED, 2)], False),
        ([(DELIVERED, 1), (HARD, 2)], True),
        ([(HARD, 1), (DELIVERED, 2), (HARD, 3)], True),
        ([(HARD, 2), (DELIVERED, 2)], False),  # a delivery as new as the bounce clears it
        ([(SOFT, 1)], False),
        ([(DELIVERED, 1)], False),
    ],
)
def test_a_later_delivery_clears_a_known_bounce(
    ledger: BounceLedger, history: list[tuple[BounceKind, int]], known: bool
) -> None:
    ledger.add(event("a@b.com", kind, SAMPLE_NOW - 10 * DAY + at) for kind, at in history)
    last_hard = max(
        (SAMPLE_NOW - 10 * DAY + at for kind, at in history if kind is HARD), default=None
    )
    assert ledger.flags(["a@b.com"]) == {"a@b.com": BounceFlags(known, False, last_hard)}


@pytest.mark.parametrize(
    ("soft_days_ago", "delivered_days_ago", "config", "suspected"),
    [
        ([1, 2, 3], None, BouncesConfig(), True),
        ([1, 2], None, BouncesConfig(), False),
        ([1, 2, 89.9], None, BouncesConfig(), True),
        ([1, 2, 90.1], None, BouncesConfig(), False),  # the third is outside the window
        ([1, 2, 3], 2.5, BouncesConfig(), False),  # only two since the last delivery
        ([1, 2, 3], 10, BouncesConfig(), True),
        ([1, 2], None, BouncesConfig(soft_threshold=2), True),
        ([1, 2, 20], None, BouncesConfig(soft_window_days=10), False),
    ],
)
def test_repeated_soft_bounces_within_the_window(
    tmp_path: Path,
    soft_days_ago: list[float],
    delivered_days_ago: float | None,
    config: BouncesConfig,
    suspected: bool,
) -> None:
    now = SAMPLE_NOW
    events = [event("a@b.com", SOFT, now - days * DAY) for days in soft_days_ago]
    if delivered_days_ago is not None:
        events.append(event("a@b.com", DELIVERED, now - delivered_days_ago * DAY))
    with BounceLedger(tmp_path / "b.sqlite", config, lambda: now) as ledger:
        ledger.add(events)
        assert ledger.flags(["a@b.com"])["a@b.com"] == BounceFlags(False, suspected, None)


def test_the_window_moves_with_the_clock(tmp_path: Path) -> None:
    now = [SAMPLE_NOW]
    with BounceLedger(tmp_path / "b.sqlite", BouncesConfig(), lambda: now[0]) as ledger:
        ledger.add(event("a@b.com", SOFT, SAMPLE_NOW - days * DAY) for days in (1, 2, 3))
        assert ledger.flags(["a@b.com"])["a@b.com"].suspected
        now[0] += 88 * DAY
        assert not ledger.flags(["a@b.com"])["a@b.com"].suspected


def dead_domain_events(hard: int, soft: int, cleared: int = 0) -> list[BounceEvent]:
    """*hard* addresses of closed.net with a hard bounce, *soft* with a soft one only, and
    *cleared* whose hard bounce a later delivery cleared."""
    events = [event(f"h{i}@closed.net", HARD, SAMPLE_NOW - DAY) for i in range(hard)]
    events += [event(f"s{i}@closed.net", SOFT, SAMPLE_NOW - DAY) for i in range(soft)]
    for i in range(cleared):
        events += [
            event(f"c{i}@closed.net", HARD, SAMPLE_NOW - 2 * DAY),
            event(f"c{i}@closed.net", DELIVERED, SAMPLE_NOW - DAY),
        ]
    return events


@pytest.mark.parametrize(
    ("hard", "soft", "cleared", "config", "dead"),
    [
        (10, 0, 0, BouncesConfig(), True),
        (9, 0, 0, BouncesConfig(), False),  # too few addresses to judge
        (10, 10, 0, BouncesConfig(), True),  # exactly half
        (10, 11, 0, BouncesConfig(), False),  # less than half
        (10, 0, 11, BouncesConfig(), False),  # cleared bounces do not count
        (9, 0, 1, BouncesConfig(), False),
        (3, 3, 0, BouncesConfig(domain_min_addresses=3, domain_hard_rate=0.5), True),
        (10, 1, 0, BouncesConfig(domain_hard_rate=0.95), False),
    ],
)
def test_a_domain_whose_addresses_bounce_makes_all_its_addresses_suspected(
    tmp_path: Path, hard: int, soft: int, cleared: int, config: BouncesConfig, dead: bool
) -> None:
    with BounceLedger(tmp_path / "b.sqlite", config, lambda: SAMPLE_NOW) as ledger:
        ledger.add(dead_domain_events(hard, soft, cleared))
        found = ledger.flags(["h0@closed.net", "s0@closed.net", "new@closed.net", "x@open.net"])
    assert found["h0@closed.net"] == BounceFlags(True, dead, SAMPLE_NOW - DAY)
    if soft:
        assert found["s0@closed.net"] == BounceFlags(False, dead, None)
    # An address the ledger never saw is flagged only through its domain.
    assert found.get("new@closed.net") == (BounceFlags(False, True, None) if dead else None)
    assert "x@open.net" not in found


def test_the_sample_reports_at_the_sample_date(ledger: BounceLedger) -> None:
    ledger.import_file(SAMPLE_CSV)
    ledger.import_file(SAMPLE_MBOX)
    keys = [e.key for e in ledger.events(limit=-1)] + ["someone.new@oldtown-isp.net"]
    found = ledger.flags(keys)
    closed_isp = {k for k in found if k.endswith("@oldtown-isp.net")}
    assert len(closed_isp) == 12 + 2 + 1
    assert {k for k, f in found.items() if f.known} == {
        "dlopez@gmail.com",
        "noreply@contoso-bank.co.uk",
        "linda.sato1966@icloud.com",
        "tom@empty-records.com",
        "jonas.jones2004@initech.io",
        "lmuller@northwind-traders.com",
        "sarahfischer@northwind-traders.com",
        *(
            k
            for k in closed_isp
            if k
            not in {
                "richard.hill@oldtown-isp.net",
                "susan.green@oldtown-isp.net",
                "someone.new@oldtown-isp.net",
            }
        ),
    }
    assert {k for k, f in found.items() if f.suspected} == {
        "olga.patel@hotmail.com",
        "priya.laurent@orange.fr",
        *closed_isp,
    }
    # Cleared by a later delivery; three soft bounces but one too old; single soft bounces.
    for key in ("lmartinez@outlook.com", "ivanov.m@gmail.com", "yuki.harris@live.com"):
        assert not found[key].known and not found[key].suspected


def test_flags_for_a_hundred_thousand_keys(ledger: BounceLedger) -> None:
    ledger.add(dead_domain_events(hard=50, soft=0))
    ledger.add(event(f"user{i}@gmail.com", SOFT, SAMPLE_NOW - i * 60) for i in range(0, 1000, 7))
    keys = [f"user{i}@gmail.com" for i in range(100_000)] + ["h1@closed.net", "x@closed.net"]
    found = ledger.flags(keys)
    assert len(found) == len(range(0, 1000, 7)) + 2
    assert found["user7@gmail.com"] == BounceFlags(False, False, None)
    assert found["x@closed.net"] == BounceFlags(False, True, None)


def test_events_newest_first_by_any_spelling(ledger: BounceLedger) -> None:
    ledger.add(
        [
            event("ann@gmail.com", HARD, 3.0, "5.1.1"),
            event("ann@gmail.com", SOFT, 1.0, "4.2.2"),
            event("ann@gmail.com", DELIVERED, 2.0, "2.0.0"),
            event("bob@gmail.com", SOFT, 4.0),
        ]
    )
    assert [e.at for e in ledger.events("  ANN@GMAIL.COM ")] == [3.0, 2.0, 1.0]
    assert [e.key for e in ledger.events(limit=2)] == ["bob@gmail.com", "ann@gmail.com"]
    assert ledger.events("nobody@gmail.com") == []
    assert ledger.events("ann@gmail.com", limit=1) == [event("ann@gmail.com", HARD, 3.0, "5.1.1")]


def test_ledger_store_location(tmp_path: Path) -> None:
    from pipeline.core.sqlite import store_beside

    cache = tmp_path / "domains.sqlite"
    assert store_beside(cache, "bounces", BouncesConfig().db) == tmp_path / "bounces.sqlite"
    assert store_beside(cache, "bounces", BouncesConfig(db="/srv/b.sqlite").db) == Path(
        "/srv/b.sqlite"
    )
    sandbox = tmp_path / "sandbox-domains.sqlite"
    assert store_beside(sandbox, "bounces") == tmp_path / "sandbox-bounces.sqlite"


def test_an_unusable_ledger_file_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(StoreError, match="Cannot open the bounce ledger"):
        BounceLedger(tmp_path / "dir.sqlite", BouncesConfig())


def test_scope_is_the_keys_with_events_and_the_dead_domains(tmp_path: Path) -> None:
    from pipeline.core.bounces.ledger import BounceLedger
    from pipeline.core.config import BouncesConfig

    with BounceLedger(tmp_path / "scope.sqlite", BouncesConfig()) as ledger:
        assert ledger.scope() == (set(), set())  # an empty ledger costs a batch nothing
        ledger.import_file(REPO / "sample_data" / "bounces.csv")
        keys, dead = ledger.scope()
    assert "dlopez@gmail.com" in keys
    assert dead == {"oldtown-isp.net"}
