"""The sandbox mail servers, spoken to over real sockets by an SMTP client (aiosmtplib)."""

from __future__ import annotations

import asyncio
import csv
import json
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiosmtplib import SMTP, SMTPConnectResponseError, SMTPResponse

from pipeline.sandbox.files import SANDBOX_WORLD
from pipeline.sandbox.smtp_server import SandboxSMTP
from pipeline.sandbox.world import SmtpDomain, SmtpHost, World, load_world, world_from_dict

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"

ACME = "127.0.0.2"
LIMITED = "127.0.0.3"
THROTTLED = "127.0.0.4"
BLOCKING = "127.0.0.5"
SLOW = "127.0.0.6"
GREYLISTING = "127.0.0.7"
UNSERVED = "127.0.0.9"  # an MX host's address with no server behind it
GREYLIST_SECONDS = 30
SLOW_REPLY = 0.3
SLOW_BANNER = 0.2

ACME_DOMAIN = {"mailboxes": ["alice", "Bob", "info"], "full": ["carol"], "disabled": ["dave"]}
WORLD: dict[str, Any] = {
    "smtp": {
        ACME: {
            "name": "mx1.acme-widgets.com",
            "domains": {
                "acme-widgets.com": ACME_DOMAIN,
                "catchall.example": {"catch_all": True},
                "xn--bcher-kva.de": {"mailboxes": ["kontakt", "josé"]},
            },
        },
        LIMITED: {"name": "mx.limited.test", "domains": {"limited.test": {"catch_all": True}}},
        THROTTLED: {
            "name": "mx.throttled.test",
            "domains": {"throttled.test": {"catch_all": True}},
            "throttle_sessions": 1,
        },
        BLOCKING: {
            "name": "mx.blocking.test",
            "domains": {"acme-widgets.com": ACME_DOMAIN},
            "block": True,
        },
        SLOW: {
            "name": "mx.slow.test",
            "domains": {"slow.test": {"mailboxes": ["ann"]}},
            "delay_ms": SLOW_REPLY * 1000,
            "banner_delay_ms": SLOW_BANNER * 1000,
        },
        GREYLISTING: {
            "name": "mx.grey.test",
            "domains": {"grey.test": {"mailboxes": ["ann", "bob"]}},
            "greylist_seconds": GREYLIST_SECONDS,
        },
    }
}
WORLD["smtp"][LIMITED]["max_recipients"] = 3


class FakeClock:
    """A monotonic clock the tests move by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class Harness:
    smtp: SandboxSMTP
    clock: FakeClock


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    clock = FakeClock()
    with SandboxSMTP(world_from_dict(WORLD).smtp, clock=clock) as smtp:
        yield Harness(smtp, clock)


def run(coro: Callable[[], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        return await coro()

    return asyncio.run(main())


def client_for(host: str, port: int) -> SMTP:
    return SMTP(hostname=host, port=port, local_hostname="verifier.test", timeout=2)


async def opened(host: str, port: int, sender: str = "probe@verifier.test") -> SMTP:
    """A session past EHLO and MAIL FROM, ready for RCPTs."""
    client = client_for(host, port)
    await client.connect()
    try:
        await client.ehlo()
        response = await client.execute_command(f"MAIL FROM:<{sender}>".encode())
    except BaseException:
        client.close()
        raise
    assert response.code == 250, response
    return client


async def rcpt(client: SMTP, recipient: str) -> SMTPResponse:
    return await client.execute_command(f"RCPT TO:<{recipient}>".encode())


def probe(host: str, port: int, *recipients: str, sender: str = "probe@verifier.test") -> list[str]:
    """``"CODE text"`` of each RCPT, all in one session."""

    async def session() -> list[str]:
        client = await opened(host, port, sender)
        try:
            return [str(await rcpt(client, recipient)) for recipient in recipients]
        finally:
            await client.quit()

    result: list[str] = run(session)
    return result


def test_banner_and_ehlo_advertise_the_host(harness: Harness) -> None:
    async def session() -> tuple[SMTPResponse, SMTPResponse, SMTPResponse]:
        client = client_for(ACME, harness.smtp.port)
        banner = await client.connect()
        ehlo = await client.ehlo()
        helo = await client.execute_command(b"HELO verifier.test")
        await client.quit()
        return banner, ehlo, helo

    banner, ehlo, helo = run(session)
    assert (banner.code, banner.message) == (220, "mx1.acme-widgets.com ESMTP")
    assert ehlo.code == 250 and ehlo.message.startswith("mx1.acme-widgets.com\n")
    assert {"ENHANCEDSTATUSCODES", "SMTPUTF8"} <= set(ehlo.message.splitlines())
    assert (helo.code, helo.message) == (250, "mx1.acme-widgets.com")


@pytest.mark.parametrize(
    ("recipient", "reply"),
    [
        ("alice@acme-widgets.com", "250 2.1.5"),
        ("ALICE@Acme-Widgets.COM", "250 2.1.5"),  # local part and domain case-insensitive
        ("bob@acme-widgets.com", "250 2.1.5"),
        ("carol@acme-widgets.com", "452 4.2.2 Mailbox full"),
        ("dave@acme-widgets.com", "550 5.2.1 Mailbox disabled"),
        ("zoe@acme-widgets.com", "550 5.1.1 No such user"),
        ("alice@elsewhere.com", "550 5.7.1 Relay access denied"),
        ("anyone.at.all@catchall.example", "250 2.1.5"),
        ("kontakt@xn--bcher-kva.de", "250 2.1.5"),
        ("postmaster", "250 2.1.5"),  # RFC 5321 §4.5.1
        ("alice", "550 5.1.3"),
    ],
)
def test_rcpt_replies(harness: Harness, recipient: str, reply: str) -> None:
    [answer] = probe(ACME, harness.smtp.port, recipient)
    assert answer.startswith(reply)


def test_smtputf8_recipient_with_a_u_label_domain(harness: Harness) -> None:
    async def session() -> list[SMTPResponse]:
        client = client_for(ACME, harness.smtp.port)
        await client.connect()
        await client.ehlo()
        answers = [
            await client.execute_command(b"MAIL FROM:<probe@verifier.test> SMTPUTF8"),
            await client.execute_command("RCPT TO:<JOSÉ@Bücher.de>".encode()),
            await client.execute_command("RCPT TO:<müller@bücher.de>".encode()),
        ]
        await client.quit()
        return answers

    mail, josé, müller = run(session)
    assert (mail.code, josé.code, müller.code) == (250, 250, 550)


def test_null_sender_is_accepted(harness: Harness) -> None:
    assert probe(ACME, harness.smtp.port, "alice@acme-widgets.com", sender="")[0].startswith("250")


def test_session_commands(harness: Harness) -> None:
    async def session() -> list[SMTPResponse]:
        client = client_for(ACME, harness.smtp.port)
        await client.connect()
        await client.ehlo()
        answers = [
            await rcpt(client, "alice@acme-widgets.com"),  # before MAIL
            await client.execute_command(b"MAIL FROM:<a@verifier.test>"),
            await client.execute_command(b"NOOP"),
            await client.execute_command(b"RSET"),
            await rcpt(client, "alice@acme-widgets.com"),  # RSET ended the transaction
            await client.execute_command(b"QUIT"),
        ]
        client.close()
        return answers

    before, mail, noop, rset, after_rset, quit_ = run(session)
    assert before.code == 503 and after_rset.code == 503
    assert str(mail) == "250 2.1.0 Sender OK"
    assert str(noop) == str(rset) == "250 2.0.0 OK"
    assert str(quit_) == "221 2.0.0 Bye"


def test_data_is_refused_and_counted() -> None:
    with SandboxSMTP(world_from_dict(WORLD).smtp) as smtp:

        async def session() -> list[SMTPResponse]:
            client = await opened(ACME, smtp.port)
            answers = [
                await client.execute_command(b"DATA"),  # no recipient yet
                await rcpt(client, "alice@acme-widgets.com"),
                await client.execute_command(b"DATA"),
            ]
            await client.quit()
            return answers

        early, accepted, data = run(session)
        assert str(early).startswith("554 5.5.1") and str(data).startswith("554 5.5.1")
        assert accepted.code == 250
        assert smtp.data_attempts() == 2


def test_max_recipients_per_session(harness: Harness) -> None:
    port = harness.smtp.port
    recipients = [f"user{i}@limited.test" for i in range(5)]
    answers = probe(LIMITED, port, *recipients)
    assert [answer[:3] for answer in answers] == ["250"] * 3 + ["452"] * 2
    assert answers[3] == "452 4.5.3 Too many recipients"

    async def reset_does_not_help() -> list[SMTPResponse]:
        client = await opened(LIMITED, port)
        for recipient in recipients[:3]:
            await rcpt(client, recipient)
        await client.execute_command(b"RSET")
        await client.execute_command(b"MAIL FROM:<probe@verifier.test>")
        answer = await rcpt(client, recipients[3])
        await client.quit()
        return [answer]

    assert [answer.code for answer in run(reset_does_not_help)] == [452]
    assert probe(LIMITED, port, recipients[4])[0].startswith("250")  # a new session is fine


async def read_banner(host: str, port: int) -> tuple[bytes, bytes]:
    """The banner line and whatever follows it before the server closes (or 0.3 s pass)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        banner = await asyncio.wait_for(reader.readline(), 2)
        try:
            rest = await asyncio.wait_for(reader.read(), 0.3)
        except TimeoutError:
            rest = b"<still open>"
        return banner, rest
    finally:
        writer.close()
        await writer.wait_closed()


def test_throttling_turns_away_extra_sessions() -> None:
    with SandboxSMTP(world_from_dict(WORLD).smtp) as smtp:
        port = smtp.port

        async def scenario() -> tuple[tuple[bytes, bytes], str, str, int]:
            first = await opened(THROTTLED, port)
            turned_away = await read_banner(THROTTLED, port)
            still_served = str(await rcpt(first, "x@throttled.test"))
            await first.quit()
            # The slot is free as soon as the server has seen the first session end.
            attempts = 0
            later: SMTP | None = None
            while later is None:
                attempts += 1
                try:
                    later = await opened(THROTTLED, port)
                except SMTPConnectResponseError:
                    assert attempts < 50, "the throttled host never let a new session in"
                    await asyncio.sleep(0.01)
            after = str(await rcpt(later, "x@throttled.test"))
            await later.quit()
            return turned_away, still_served, after, attempts

        (banner, rest), still_served, after, attempts = run(scenario)
        assert banner.startswith(b"421 4.7.0 ") and rest == b""  # closed after the 421
        assert still_served.startswith("250") and after.startswith("250")
        assert smtp.sessions(THROTTLED) == 2 + attempts
        assert smtp.max_concurrent_sessions(THROTTLED) == 2  # the 421'd one was open, briefly
        assert smtp.sessions(ACME) == 0


def test_blocking_host_rejects_every_recipient(harness: Harness) -> None:
    answers = probe(BLOCKING, harness.smtp.port, "alice@acme-widgets.com", "zoe@acme-widgets.com")
    assert all(answer.startswith("550 5.7.1") for answer in answers)
    assert "blocked by policy" in answers[0]


def test_slow_host_delays_banner_and_each_reply(harness: Harness) -> None:
    # Raw lines: aiosmtplib's connect() sends EHLO too, which would blur the banner's delay.
    # Each time runs from before the connection or the command that starts the server's
    # pause (taken after it, the server could already be pausing: a time under the pause).
    async def timed(reader: asyncio.StreamReader, start: float) -> tuple[float, list[bytes]]:
        lines = [await reader.readline()]
        while lines[-1][3:4] == b"-":  # RFC 5321 §4.2 multi-line reply
            lines.append(await reader.readline())
        return time.monotonic() - start, lines

    async def session() -> list[tuple[float, list[bytes]]]:
        start = time.monotonic()
        reader, writer = await asyncio.open_connection(SLOW, harness.smtp.port)
        try:
            replies = [await timed(reader, start)]
            for command in (b"EHLO verifier.test\r\n", b"NOOP\r\n", b"QUIT\r\n"):
                start = time.monotonic()
                writer.write(command)
                replies.append(await timed(reader, start))
            return replies
        finally:
            writer.close()
            await writer.wait_closed()

    (banner, _), (ehlo, lines), (noop, _), (quit_, _) = run(session)
    # Each bound above is what a server that also waited the other delay, or waited per line,
    # could not beat; the margins are whole delays, not scheduling guesses.
    assert SLOW_BANNER <= banner < SLOW_BANNER + SLOW_REPLY
    assert len(lines) > 2 and SLOW_REPLY <= ehlo < len(lines) * SLOW_REPLY  # once, not per line
    assert noop >= SLOW_REPLY and quit_ >= SLOW_REPLY


def test_greylisting_defers_the_first_attempt_of_a_pair(harness: Harness) -> None:
    port, clock = harness.smtp.port, harness.clock
    assert probe(GREYLISTING, port, "ann@grey.test")[0].startswith("451 4.7.1")
    clock.now += GREYLIST_SECONDS - 1
    assert probe(GREYLISTING, port, "ANN@grey.test")[0].startswith("451 4.7.1")
    # Another sender, and a mailbox that does not exist, are new pairs: deferred too.
    answers = probe(GREYLISTING, port, "ann@grey.test", "nobody@grey.test", sender="b@x.test")
    assert [answer[:3] for answer in answers] == ["451", "451"]
    clock.now += 1
    assert probe(GREYLISTING, port, "ann@grey.test")[0].startswith("250 2.1.5")
    assert probe(GREYLISTING, port, "bob@grey.test")[0].startswith("451")  # still new
    clock.now += GREYLIST_SECONDS
    answers = probe(GREYLISTING, port, "ann@grey.test", "nobody@grey.test", sender="b@x.test")
    assert [answer[:9] for answer in answers] == ["250 2.1.5", "550 5.1.1"]
    # Relaying is refused before greylisting: no point in a retry.
    assert probe(GREYLISTING, port, "ann@other.test")[0].startswith("550 5.7.1")


def test_address_without_server_refuses_connections(harness: Harness) -> None:
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((UNSERVED, harness.smtp.port), timeout=1).close()


def test_counters_and_reset() -> None:
    with SandboxSMTP(world_from_dict(WORLD).smtp) as smtp:
        probe(ACME, smtp.port, "alice@acme-widgets.com", "Zoe@acme-widgets.com")
        probe(BLOCKING, smtp.port, "alice@acme-widgets.com")
        assert smtp.rcpts() == [
            (ACME, "alice@acme-widgets.com", 250),
            (ACME, "Zoe@acme-widgets.com", 550),
            (BLOCKING, "alice@acme-widgets.com", 550),
        ]
        assert smtp.rcpt_count() == 3
        assert smtp.rcpt_count("ALICE@acme-widgets.com") == 2
        assert smtp.rcpt_count("nobody@acme-widgets.com") == 0
        assert (smtp.sessions(ACME), smtp.sessions(BLOCKING), smtp.sessions(SLOW)) == (1, 1, 0)
        assert smtp.max_concurrent_sessions(ACME) == 1
        assert smtp.data_attempts() == 0
        smtp.reset_counts()
        assert smtp.rcpts() == [] and smtp.rcpt_count() == 0
        assert smtp.sessions(ACME) == smtp.max_concurrent_sessions(ACME) == 0


def test_concurrent_sessions_are_counted() -> None:
    with SandboxSMTP(world_from_dict(WORLD).smtp) as smtp:

        async def three_at_once() -> None:
            clients = [await opened(ACME, smtp.port) for _ in range(3)]
            for client in clients:
                await client.quit()

        run(three_at_once)
        assert smtp.sessions(ACME) == smtp.max_concurrent_sessions(ACME) == 3


def test_every_host_shares_the_requested_port() -> None:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        free = int(probe_socket.getsockname()[1])
    hosts = world_from_dict(WORLD).smtp
    with SandboxSMTP(hosts, port=free) as smtp:
        assert smtp.port == free
        for address in (ACME, LIMITED, BLOCKING):
            with socket.create_connection((address, free), timeout=1) as conn:
                assert conn.recv(4) == b"220 "


def test_stop_closes_open_and_waiting_sessions() -> None:
    hosts = {
        ACME: SmtpHost(name="mx.acme.test"),
        SLOW: SmtpHost(name="mx.slow.test", banner_delay_ms=10_000),
    }
    smtp = SandboxSMTP(hosts)
    with pytest.raises(RuntimeError, match="not been started"):
        _ = smtp.port
    smtp.start()
    try:
        with pytest.raises(RuntimeError, match="already running"):
            smtp.start()
        idle = socket.create_connection((ACME, smtp.port), timeout=2)
        waiting = socket.create_connection((SLOW, smtp.port), timeout=2)
        with idle, waiting:
            assert idle.recv(100).startswith(b"220 mx.acme.test")
            deadline = time.monotonic() + 2
            while smtp.sessions(SLOW) == 0 and time.monotonic() < deadline:
                time.sleep(0.005)  # until the server has taken the connection
            started = time.monotonic()
            smtp.stop()
            assert time.monotonic() - started < 1
            assert idle.recv(100) == b"" and waiting.recv(100) == b""
    finally:
        smtp.stop()
    smtp.stop()  # stopping again does nothing
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((ACME, smtp.port), timeout=1).close()


def test_no_hosts_binds_nothing() -> None:
    with SandboxSMTP({}, port=2525) as smtp:
        assert smtp.port == 2525


@pytest.mark.parametrize("address", ["10.0.0.1", "0.0.0.0", "::1", "mx.example.com"])
def test_only_loopback_addresses_are_served(address: str) -> None:
    with pytest.raises(ValueError, match=r"smtp host address"):
        SandboxSMTP({address: SmtpHost(name="mx.test")})


# --- the world file's "smtp" section -------------------------------------------------------


def test_world_smtp_section_is_parsed_and_normalised() -> None:
    world = world_from_dict(
        {
            "smtp": {
                "127.0.0.2": {
                    "name": "mx1.acme-widgets.com",
                    "domains": {"Acme-Widgets.COM.": {"mailboxes": ["Alice"], "full": ["Carol"]}},
                    "greylist_seconds": 0.5,
                    "max_recipients": 3,
                    "throttle_sessions": 2,
                    "block": True,
                    "delay_ms": 10,
                    "banner_delay_ms": 20,
                }
            }
        }
    )
    assert dict(world.smtp) == {
        "127.0.0.2": SmtpHost(
            name="mx1.acme-widgets.com",
            domains={
                "acme-widgets.com": SmtpDomain(
                    mailboxes=frozenset({"alice"}), full=frozenset({"carol"})
                )
            },
            greylist_seconds=0.5,
            max_recipients=3,
            throttle_sessions=2,
            block=True,
            delay_ms=10.0,
            banner_delay_ms=20.0,
        )
    }
    assert world_from_dict({"zones": {}}).smtp == {}
    assert World().smtp == {}
    minimal = world_from_dict({"smtp": {"127.1.2.3": {"name": "mx.test"}}}).smtp["127.1.2.3"]
    assert minimal == SmtpHost(name="mx.test")
    assert (minimal.greylist_seconds, minimal.max_recipients, minimal.block) == (0.0, 0, False)


def test_load_world_reports_bad_smtp_config_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "world.json"
    path.write_text(json.dumps({"smtp": {"127.0.0.2": {"name": "mx", "blok": True}}}))
    with pytest.raises(ValueError, match=r"world\.json: smtp host '127\.0\.0\.2': unknown key"):
        load_world(path)


def host(**config: Any) -> dict[str, Any]:
    return {"smtp": {"127.0.0.2": {"name": "mx.test", **config}}}


def domain(**config: Any) -> dict[str, Any]:
    return host(domains={"a.com": config})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"smtp": []}, "'smtp' must be an object"),
        ({"smtp": {"localhost": {"name": "mx"}}}, "'localhost' is not an IPv4 address"),
        ({"smtp": {"192.0.2.1": {"name": "mx"}}}, "'192.0.2.1' is not a loopback address"),
        ({"smtp": {"127.0.0.2": []}}, "smtp host '127.0.0.2': must be an object"),
        ({"smtp": {"127.0.0.2": {}}}, "smtp host '127.0.0.2': missing 'name'"),
        (host(name=5), "smtp host '127.0.0.2': name value 5 must be a string"),
        (host(name="bad name..x"), "name 'bad name..x' is not an ASCII host name"),
        (host(greylist=5), "unknown key(s) ['greylist']"),
        (host(domains=["a.com"]), "'domains' must be an object"),
        (host(domains={"bücher.de": {}}), "'xn--bcher-kva.de'"),
        (host(domains={"A.com": {}, "a.com": {}}), "duplicate"),
        (host(domains={"a.com": []}), "domain 'a.com': must be an object"),
        (domain(mailbox=["x"]), "domain 'a.com': unknown key(s) ['mailbox']"),
        (domain(mailboxes="alice"), "mailboxes must be a list"),
        (domain(full=[5]), "domain 'a.com': full value 5 must be a string"),
        (domain(disabled=["a@b.com"]), "bare local part"),
        (domain(mailboxes=[""]), "mailboxes value '' must be a non-empty string"),
        (domain(mailboxes=["l" * 65]), "longer than 64 octets"),
        (domain(mailboxes=["ann"], full=["ANN"]), "'ann' is in both mailboxes and full"),
        (domain(catch_all="yes"), "catch_all must be true or false"),
        (domain(catch_all=True, disabled=["x"]), "no effect on a catch_all domain"),
        (host(greylist_seconds=-1), "greylist_seconds -1.0 must be a finite number >= 0"),
        (host(max_recipients=2.5), "max_recipients 2.5 must be an integer"),
        (host(throttle_sessions=-1), "throttle_sessions -1 must be >= 0"),
        (host(block=1), "block must be true or false"),
        (host(delay_ms="fast"), "delay_ms 'fast' must be a number"),
        (host(banner_delay_ms=float("inf")), "banner_delay_ms inf must be a finite number"),
    ],
)
def test_world_rejects_bad_smtp_config(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        world_from_dict(data)
    assert message in str(caught.value)


def test_dataclasses_validate_when_built_directly() -> None:
    with pytest.raises(ValueError, match="not a loopback address"):
        World(smtp={"8.8.8.8": SmtpHost(name="mx.test")})
    with pytest.raises(ValueError, match="collection of local parts"):
        SmtpDomain(mailboxes="alice")  # type: ignore[arg-type]
    assert SmtpDomain(mailboxes=frozenset({"ALICE"})).mailboxes == {"alice"}


# --- the sample world ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_world() -> World:
    return load_world(SANDBOX_WORLD)


def sample_addresses() -> set[str]:
    with (SAMPLE / "list.csv").open(encoding="utf-8", newline="") as handle:
        return {row["Email Address"] for row in csv.DictReader(handle)}


def primary_mx_address(world: World, domain: str) -> str:
    zone = world.lookup(domain)
    assert zone is not None and zone.mx, domain
    exchange = min(zone.mx)[1]
    host_zone = world.lookup(exchange)
    assert host_zone is not None and len(host_zone.a) == 1, exchange
    return host_zone.a[0]


def test_sample_world_mx_hosts_have_loopback_addresses(sample_world: World) -> None:
    for address, config in sample_world.smtp.items():
        zone = sample_world.lookup(config.name)
        assert zone is not None and zone.a == (address,), config.name
        for served in config.domains:
            served_zone = sample_world.lookup(served)
            assert served_zone is not None, served
            assert config.name in {exchange for _, exchange in served_zone.mx}, served


@pytest.mark.parametrize(
    ("email", "reply"),
    [
        ("thomas.robinson+lists@outlook.com", "250 2.1.5"),
        ("John.Doe@GMAIL.COM", "250 2.1.5"),
        ("info@acme-widgets.com", "250 2.1.5"),
        ("josé@web.de", "250 2.1.5"),  # SMTPUTF8 local part
        ("dlopez@gmail.com", "550 5.1.1"),
        ("noreply@contoso-bank.co.uk", "550 5.1.1"),
        ("olga.patel@hotmail.com", "452 4.2.2"),
        ("linda.sato1966@icloud.com", "550 5.2.1"),
        ("mike.jones@gmial.com", "250 2.1.5"),  # catch-all squatter
        ("admin@globex-corp.com", "250 2.1.5"),  # catch-all company
        ("support@initech.io", "451 4.7.1"),  # greylisting
        ("lmuller@comcast.net", "550 5.7.1"),  # blocked
        ("dave.wilson@faraway-isp.com.au", "refused"),
    ],
)
def test_sample_world_scenarios(sample_world: World, email: str, reply: str) -> None:
    assert email in sample_addresses()
    local, _, domain_part = email.rpartition("@")
    address = primary_mx_address(sample_world, domain_part.lower())
    if reply == "refused":
        assert address not in sample_world.smtp
        return
    # Only the host that matters is started: the whole sample world would be slower.
    with SandboxSMTP({address: sample_world.smtp[address]}) as smtp:
        [answer] = probe(address, smtp.port, f"{local}@{domain_part}")
    assert answer.startswith(reply)


def test_sample_world_throttling_host(sample_world: World) -> None:
    address = primary_mx_address(sample_world, "web.de")
    with SandboxSMTP({address: sample_world.smtp[address]}) as smtp:

        async def second_session() -> bytes:
            first = await opened(address, smtp.port)
            try:
                banner, _ = await read_banner(address, smtp.port)
            finally:
                await first.quit()
            return banner

        assert run(second_session).startswith(b"421 4.7.0")


def test_sample_world_special_hosts(sample_world: World) -> None:
    by_name = {config.name: config for config in sample_world.smtp.values()}
    assert by_name["mx1.contoso-bank.co.uk"].max_recipients == 3
    assert by_name["smtp-in.orange.fr"].delay_ms > 0
    assert by_name["smtp-in.orange.fr"].banner_delay_ms > 0
    # gmx.de's first MX refuses; the other, of the same preference, takes the mail.
    assert primary_mx_address(sample_world, "gmx.de") not in sample_world.smtp
    backup = next(
        a for a, config in sample_world.smtp.items() if config.name == "mx01.emig.gmx.net"
    )
    with SandboxSMTP({backup: sample_world.smtp[backup]}) as smtp:
        [answer] = probe(backup, smtp.port, "müller.hans@gmx.de")
    assert answer.startswith("250 2.1.5")
