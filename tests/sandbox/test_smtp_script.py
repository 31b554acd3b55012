"""Scripted sandbox mail servers: replies per stage, sender policies, 421s and rate limits.

Spoken to over real sockets by a line-level client, so multi-line replies and closed connections
are seen exactly as a prober would see them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from pipeline.sandbox.mail_hosts import ScriptedReply, SmtpDomain, SmtpHost, reply
from pipeline.sandbox.smtp_server import SandboxSMTP
from pipeline.sandbox.world import world_from_dict

GREETER = "127.0.0.21"
REFUSER = "127.0.0.22"
CLOSER = "127.0.0.23"
PICKY = "127.0.0.24"
POLICED = "127.0.0.25"
VERIFIER = "127.0.0.26"
EARLY = "127.0.0.27"
LIMITED = "127.0.0.28"
EOF = "EOF"
RATE_WINDOW = 60

SHOP = {"mailboxes": ["ann", "bob"], "full": ["cat"], "disabled": ["dan"]}
WORLD: dict[str, Any] = {
    "zones": {
        "shop.test": {"mx": [[10, "mx.shop.test"]]},
        "mx.shop.test": {"a": ["127.0.0.25"]},
        "a-only.test": {"a": ["192.0.2.1"]},
        "nullmx.test": {"mx": [[0, "."]]},
        "empty.test": {},
    },
    "smtp": {
        GREETER: {
            "name": "mx.greeter.test",
            "greeting": "220-{host} ESMTP Postfix\n220 no UCE, {client}",
            "domains": {"shop.test": SHOP},
            "rcpt_text": {
                "unknown": "550-5.1.1 <{rcpt}>: Recipient address rejected:\n"
                "550 5.1.1 User unknown in virtual mailbox table",
                "full": "552 5.2.2 {local} is over quota",
                "disabled": "550 5.2.1 The email account that you tried to reach is disabled.",
            },
        },
        REFUSER: {"name": "mx.refuser.test", "greeting": "554 5.7.1 {client} blocked, no service"},
        CLOSER: {"name": "mx.closer.test", "greeting": "421 4.7.0 Try again later, closing"},
        PICKY: {
            "name": "mx.picky.test",
            "ehlo": "550 5.7.1 <{helo}>: Helo command rejected: Host not found",
            "mail_from": [
                ["*@vm", "550 5.1.8 <{sender}>: Sender address rejected: Domain not found"],
                ["spam*@*", "550 5.1.1 Invalid email address"],
            ],
            "domains": {
                "shop.test": {
                    **SHOP,
                    "replies": {
                        "Eve": "450-4.2.1 The user you are trying to contact is receiving mail\n"
                        "450 4.2.1 at a rate that prevents additional messages",
                        "gone": "421 4.7.0 Try again later, closing connection.",
                    },
                }
            },
        },
        POLICED: {
            "name": "mx.policed.test",
            "sender_policy": {"check": "unknown_domain"},
            "domains": {"shop.test": SHOP},
        },
        VERIFIER: {
            "name": "mx.verifier.test",
            "sender_policy": {"check": "unverified"},
            "domains": {"other.test": {"mailboxes": ["zed"]}},
        },
        EARLY: {
            "name": "mx.early.test",
            "sender_policy": {
                "check": "unknown_domain",
                "stage": "mail",
                "reply": "550-Verification failed for <{sender}>\n550-Unrouteable address\n"
                "550 Sender verify failed",
            },
            "domains": {"shop.test": SHOP},
        },
        LIMITED: {
            "name": "mx.limited.test",
            "rate_limit": {"rcpts": 2, "seconds": RATE_WINDOW},
            "domains": {"shop.test": SHOP},
        },
    },
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="module")
def smtp(clock: FakeClock) -> Iterator[SandboxSMTP]:
    with SandboxSMTP(world_from_dict(WORLD).smtp, clock=clock) as server:
        yield server


async def _read_reply(reader: asyncio.StreamReader) -> str:
    """One whole reply (all its lines, joined by newlines), or EOF."""
    lines: list[str] = []
    while True:
        try:
            raw = await asyncio.wait_for(reader.readline(), 2)
        except ConnectionResetError:
            raw = b""
        if not raw:
            return "\n".join(lines) if lines else EOF
        line = raw.decode().rstrip("\r\n")
        lines.append(line)
        if line[3:4] != "-":
            return "\n".join(lines)


def dialog(host: str, port: int, commands: Sequence[str]) -> list[str]:
    """The banner, then the reply to each command, in one session; EOF once the server hung up."""

    async def session() -> list[str]:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            replies = [await _read_reply(reader)]
            for command in commands:
                if replies[-1] == EOF:
                    break
                writer.write(f"{command}\r\n".encode())
                await writer.drain()
                replies.append(await _read_reply(reader))
            return replies
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    return asyncio.run(session())


def rcpts(host: str, port: int, sender: str, *recipients: str) -> list[str]:
    """The reply to each RCPT (after EHLO and MAIL FROM) in one session."""
    commands = ["EHLO verifier.test", f"MAIL FROM:<{sender}>"]
    commands += [f"RCPT TO:<{r}>" for r in recipients]
    return dialog(host, port, commands)[3:]


def test_custom_multiline_greeting_names_host_and_client(smtp: SandboxSMTP) -> None:
    banner, ehlo = dialog(GREETER, smtp.port, ["EHLO verifier.test"])
    assert banner == "220-mx.greeter.test ESMTP Postfix\n220 no UCE, 127.0.0.1"
    assert ehlo.startswith("250-mx.greeter.test")


def test_rcpt_text_rewords_classes(smtp: SandboxSMTP) -> None:
    unknown, full, disabled, ok = rcpts(
        GREETER, smtp.port, "a@b.test", "zoe@shop.test", "cat@shop.test", "dan@shop.test",
        "ann@shop.test",
    )  # fmt: skip
    assert unknown == (
        "550-5.1.1 <zoe@shop.test>: Recipient address rejected:\n"
        "550 5.1.1 User unknown in virtual mailbox table"
    )
    assert full == "552 5.2.2 cat is over quota"
    assert disabled.startswith("550 5.2.1 The email account")
    assert ok == "250 2.1.5 OK"


def test_5xx_greeting_answers_503_until_quit(smtp: SandboxSMTP) -> None:
    replies = dialog(REFUSER, smtp.port, ["EHLO verifier.test", "MAIL FROM:<a@b.test>", "QUIT"])
    banner, ehlo, mail, bye = replies
    assert banner == "554 5.7.1 127.0.0.1 blocked, no service"
    assert ehlo.startswith("503 5.5.1") and mail.startswith("503 5.5.1")
    assert bye.startswith("221")


def test_421_greeting_closes_the_connection(smtp: SandboxSMTP) -> None:
    assert dialog(CLOSER, smtp.port, ["EHLO verifier.test"]) == [
        "421 4.7.0 Try again later, closing",
        EOF,
    ]


def test_ehlo_refusal_leaves_helo(smtp: SandboxSMTP) -> None:
    ehlo, mail_early, helo, mail = dialog(
        PICKY,
        smtp.port,
        ["EHLO vm", "MAIL FROM:<a@b.test>", "HELO vm", "MAIL FROM:<a@b.test>"],
    )[1:]
    assert ehlo == "550 5.7.1 <vm>: Helo command rejected: Host not found"
    assert mail_early.startswith("503")  # no greeting accepted yet
    assert helo == "250 mx.picky.test"
    assert mail.startswith("250")


@pytest.mark.parametrize(
    ("sender", "expected"),
    [
        ("postmaster@vm", "550 5.1.8 <postmaster@vm>: Sender address rejected: Domain not found"),
        ("POSTMASTER@VM", "550 5.1.8"),  # patterns compare case-insensitively
        ("spammer@x.test", "550 5.1.1 Invalid email address"),
        ("ann@x.test", "250 2.1.0"),
        ("", "250 2.1.0"),
    ],
)
def test_mail_from_rules(smtp: SandboxSMTP, sender: str, expected: str) -> None:
    mail, rcpt = dialog(
        PICKY, smtp.port, ["HELO verifier.test", f"MAIL FROM:<{sender}>", "RCPT TO:<ann@shop.test>"]
    )[2:]
    assert mail.startswith(expected)
    # A refused sender opens no transaction: the RCPT after it is out of sequence.
    assert rcpt.startswith("250" if expected.startswith("250") else "503")


def test_per_local_part_reply_multiline(smtp: SandboxSMTP) -> None:
    replies = dialog(
        PICKY, smtp.port, ["HELO v.test", "MAIL FROM:<a@b.test>", "RCPT TO:<eve@shop.test>"]
    )
    assert replies[-1] == (
        "450-4.2.1 The user you are trying to contact is receiving mail\n"
        "450 4.2.1 at a rate that prevents additional messages"
    )


def test_421_at_rcpt_closes_the_connection(smtp: SandboxSMTP) -> None:
    replies = dialog(
        PICKY,
        smtp.port,
        ["HELO v.test", "MAIL FROM:<a@b.test>", "RCPT TO:<gone@shop.test>", "RSET"],
    )
    assert replies[-2:] == ["421 4.7.0 Try again later, closing connection.", EOF]


@pytest.mark.parametrize(
    ("sender", "refused"),
    [
        ("postmaster@vm", True),  # no dot: the default sender on a host without a FQDN
        ("someone@localhost", True),
        ("ann@unknown-domain.test", True),  # NXDOMAIN
        ("ann@empty.test", True),  # exists, but no MX/A/AAAA
        ("ann@nullmx.test", True),  # a null MX is no mail domain (RFC 7505)
        ("ann@shop.test", False),
        ("ann@a-only.test", False),  # an A record is enough (implicit MX)
        ("", False),  # the null sender is never refused
    ],
)
def test_unknown_sender_domain_is_refused_at_rcpt(
    smtp: SandboxSMTP, sender: str, refused: bool
) -> None:
    mail, ok, unknown = dialog(
        POLICED,
        smtp.port,
        [
            "EHLO v.test",
            f"MAIL FROM:<{sender}>",
            "RCPT TO:<ann@shop.test>",
            "RCPT TO:<zz@shop.test>",
        ],
    )[2:]
    assert mail.startswith("250")  # the refusal waits for RCPT (smtpd_delay_reject)
    if refused:
        expected = f"550 5.1.8 <{sender}>: Sender address rejected: Domain not found"
        assert ok == unknown == expected
    else:
        assert ok.startswith("250") and unknown.startswith("550 5.1.1")


@pytest.mark.parametrize(
    ("sender", "refused"),
    [
        ("zed@other.test", False),
        ("postmaster@other.test", False),  # RFC 5321 §4.5.1: postmaster always exists
        ("nobody@other.test", True),
        ("postmaster@vm", True),
    ],
)
def test_unverified_sender_is_refused(smtp: SandboxSMTP, sender: str, refused: bool) -> None:
    world = dict(WORLD)
    world["zones"] = {**WORLD["zones"], "other.test": {"mx": [[10, "mx.other.test"]]}}
    with SandboxSMTP(world_from_dict(world).smtp) as server:
        [answer] = rcpts(VERIFIER, server.port, sender, "zed@other.test")
    if refused:
        assert answer == f"550 5.1.7 <{sender}>: Sender address rejected: undeliverable address"
    else:
        assert answer.startswith("250")


def test_sender_policy_at_mail_stage(smtp: SandboxSMTP) -> None:
    mail, rcpt = dialog(
        EARLY, smtp.port, ["EHLO v.test", "MAIL FROM:<postmaster@vm>", "RCPT TO:<ann@shop.test>"]
    )[2:]
    assert mail == (
        "550-Verification failed for <postmaster@vm>\n550-Unrouteable address\n"
        "550 Sender verify failed"
    )
    assert rcpt.startswith("503")


def test_rate_limit_defers_rcpts_over_the_window(smtp: SandboxSMTP, clock: FakeClock) -> None:
    first = rcpts(LIMITED, smtp.port, "a@b.test", "ann@shop.test", "zoe@shop.test", "bob@shop.test")
    assert [r[:3] for r in first] == ["250", "550", "450"]
    assert first[2].startswith("450 4.7.1")
    clock.now += RATE_WINDOW
    assert rcpts(LIMITED, smtp.port, "a@b.test", "bob@shop.test")[0].startswith("250")


def test_scripted_reply_parsing_and_rendering() -> None:
    parsed = ScriptedReply.parse("550-5.1.1 a {rcpt}\r\n550 5.1.1 b", "x")
    assert (parsed.code, parsed.lines) == (550, ("5.1.1 a {rcpt}", "5.1.1 b"))
    assert parsed.render({"rcpt": "r@d"}) == "550-5.1.1 a r@d\r\n550 5.1.1 b"
    assert parsed.text == "550 5.1.1 a {rcpt}\n550 5.1.1 b"
    assert reply("421").render({}) == "421"
    assert reply("250 {unknown} stays").render({}) == "250 {unknown} stays"


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ({"greeting": "hello"}, "does not start with a reply code"),
        ({"greeting": "550 a\n554 b"}, "mixes reply codes"),
        ({"greeting": "250 fine"}, "greeting must be 220, 421 or 5xx"),
        ({"ehlo": "250 fine"}, "ehlo must be a refusal"),
        ({"rcpt_text": {"nosuch": "550 x"}}, "rcpt_text key 'nosuch'"),
        ({"mail_from": [["*"]]}, "must be [sender pattern, reply]"),
        ({"sender_policy": {"check": "spf"}}, "sender_policy.check 'spf'"),
        ({"sender_policy": {"check": "unverified", "stage": "data"}}, "sender_policy.stage"),
        ({"sender_policy": {"check": "unverified", "extra": 1}}, "unknown key(s) ['extra']"),
        ({"rate_limit": {"rcpts": 0, "seconds": 1}}, "rate_limit needs rcpts >= 1"),
        ({"domains": {"d.test": {"replies": {"a@b": "550 x"}}}}, "bare local part"),
        ({"domains": {"d.test": {"replies": {"a": 5}}}}, "replies['a'] must be a reply"),
    ],
)
def test_bad_scripts_are_refused(host: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=r"smtp host '127\.0\.0\.2'") as caught:
        world_from_dict({"smtp": {"127.0.0.2": {"name": "mx.test", **host}}})
    assert message in str(caught.value)


def test_hosts_built_directly_without_a_world() -> None:
    host = SmtpHost(
        "mx.direct.test",
        domains={"d.test": SmtpDomain(mailboxes=frozenset({"a"}), replies={"B": reply("550 x")})},
    )
    assert set(host.domains["d.test"].replies) == {"b"}
    with SandboxSMTP({"127.0.0.2": host}) as server:
        assert rcpts("127.0.0.2", server.port, "s@x.test", "a@d.test", "b@d.test") == [
            "250 2.1.5 OK",
            "550 x",
        ]
