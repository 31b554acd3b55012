"""SMTP RCPT probing: one careful session with one mail server.

A probe never sends DATA: per recipient it says MAIL FROM, RCPT TO and RSET, and reads the RCPT
reply. Each reply keeps the stage it answered, because what it means depends on it
(:mod:`pipeline.core.mailboxes.replies`): a refusal before RCPT is about us, not the mailbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import aiosmtplib

from pipeline.core.config import VerifyConfig
from pipeline.core.domains.dns import DnsAnswer, Resolver, host_addresses, lookup_domain
from pipeline.core.mailboxes.identity import identity_of
from pipeline.core.mailboxes.replies import Reply, Stage, classify
from pipeline.core.mailboxes.types import Mailbox, MailboxResult

__all__ = ["Reply", "SessionResult", "SmtpSettings", "Stage", "classify", "probe_session"]


def result_of(reply: Reply, outcome: Mailbox | None = None) -> MailboxResult:
    """The answer a reply gives, with the server's words kept."""
    return MailboxResult(outcome or classify(reply), reply.text)


@dataclass(frozen=True)
class SmtpSettings:
    """How a session connects and names itself; the names come from :func:`identity_of`
    (made by :func:`smtp_settings`), never from a default here."""

    port: int
    helo: str
    mail_from: str
    timeout: float
    loopback_only: bool = False  # the sandbox: never connect anywhere but 127.0.0.0/8 and ::1


def smtp_settings(verify: VerifyConfig, *, loopback_only: bool = False) -> SmtpSettings:
    """The session settings of a config, with its names (:func:`identity_of`)."""
    who = identity_of(verify, sandbox=loopback_only)
    return SmtpSettings(verify.port, who.helo, who.mail_from, verify.timeout, loopback_only)


@dataclass
class SessionResult:
    """One session's outcome: a reply per recipient asked, and whether the host let us in."""

    replies: dict[str, Reply] = field(default_factory=dict)
    connected: bool = False
    failure: Mailbox | None = None  # set when the session ended early for a host-level reason
    closing_reply: Reply | None = None  # the banner or reply that ended it, if any

    def unasked(self, recipients: Sequence[str]) -> list[str]:
        return [r for r in recipients if r not in self.replies]


async def probe_session(
    address: str,
    recipients: Sequence[str],
    settings: SmtpSettings,
    pace: Callable[[], Awaitable[bool]] | None = None,
    exchange: str = "",
    on_reply: Callable[[str, Reply], None] | None = None,
) -> SessionResult:
    """Ask the server at *address* (the MX host *exchange*) about *recipients* in one session;
    never raises for network trouble.

    *pace* is awaited before each RCPT: it may wait (rate limits) or answer False to stop the
    session (the budget is spent); the recipients not asked are then left out of the result.
    *on_reply* hears each recipient's reply the moment it arrives. The session ends early on a
    refusal at the greeting, EHLO or MAIL FROM (the same for every recipient), on 421 (the
    server closes the connection, RFC 5321 §3.8) and on a full transaction (452 4.5.3).
    """
    result = SessionResult()
    session = _Session(settings, exchange)
    client = aiosmtplib.SMTP(
        hostname=address,
        port=settings.port,
        timeout=settings.timeout,
        local_hostname=settings.helo,
        start_tls=False,
    )
    try:
        banner = await client.connect()
        result.connected = True
        if banner.code != 220:
            return _ended(result, session.reply(banner.code, banner.message, Stage.GREETING))
        refused = await _greet(client, session)
        if refused is not None:
            return _ended(result, refused)
        for recipient in recipients:
            if pace is not None and not await pace():
                break
            reply = await _ask(client, session, recipient)
            if reply.stage is not Stage.RCPT or reply.code == 421:
                return _ended(result, reply)
            if classify(reply) is Mailbox.TOO_MANY:
                return _ended(result, reply)
            result.replies[recipient] = reply
            if on_reply is not None:  # the caller keeps it now: a kill must not lose it
                on_reply(recipient, reply)
        with contextlib.suppress(aiosmtplib.SMTPException):
            await client.quit()  # the answers are in; a quarrel over QUIT changes none of them
    except aiosmtplib.SMTPConnectResponseError as exc:  # a banner other than 220
        result.connected = True
        _ended(result, session.reply(exc.code, exc.message, Stage.GREETING))
    except aiosmtplib.SMTPConnectTimeoutError:
        result.failure = Mailbox.TIMEOUT
    except aiosmtplib.SMTPConnectError:
        result.failure = Mailbox.UNREACHABLE
    except (aiosmtplib.SMTPTimeoutError, TimeoutError):
        result.failure = Mailbox.TIMEOUT
    except (aiosmtplib.SMTPException, OSError):
        result.failure = Mailbox.UNREACHABLE if not result.connected else Mailbox.TIMEOUT
    finally:
        client.close()
    return result


@dataclass(frozen=True)
class _Session:
    settings: SmtpSettings
    exchange: str

    def reply(self, code: int, message: str, stage: Stage, recipient: str = "") -> Reply:
        return Reply(code, message, stage, self.settings.mail_from, recipient, self.exchange)


def _ended(result: SessionResult, reply: Reply) -> SessionResult:
    result.closing_reply = reply
    outcome = classify(reply)
    result.failure = outcome if outcome is not Mailbox.OK else Mailbox.REJECTED
    return result


async def _greet(client: aiosmtplib.SMTP, session: _Session) -> Reply | None:
    """EHLO, or HELO for servers that do not know it (RFC 5321 §4.1.1.1); the refusal, if any."""
    helo = session.settings.helo.encode("ascii")
    reply = await client.execute_command(b"EHLO", helo)
    if reply.code != 250 and reply.code != 421:
        reply = await client.execute_command(b"HELO", helo)
    if reply.code == 250:
        return None
    return session.reply(reply.code, reply.message, Stage.HELLO)


async def _ask(client: aiosmtplib.SMTP, session: _Session, recipient: str) -> Reply:
    mail_from = session.settings.mail_from
    sender = await client.execute_command(b"MAIL", f"FROM:<{mail_from}>".encode())
    if sender.code != 250:
        return session.reply(sender.code, sender.message, Stage.MAIL, recipient)
    reply = await client.execute_command(b"RCPT", f"TO:<{recipient}>".encode())
    if reply.code != 421:  # after a 421 the server has closed the connection: nothing to reset
        # RSET between recipients (RFC 5321 §4.1.1.5): each probe is its own transaction.
        await client.execute_command(b"RSET")
    return session.reply(reply.code, reply.message, Stage.RCPT, recipient)


@dataclass(frozen=True)
class Reachability:
    ok: bool
    detail: str


async def smtp_reachable(
    resolver: Resolver,
    canaries: Sequence[str],
    port: int,
    timeout: float,
    loopback_only: bool = False,
) -> Reachability:
    """Whether a canary domain's mail host answers with an SMTP banner on *port*."""
    answers = [await lookup_domain(resolver, canary) for canary in canaries]
    hosts = await canary_hosts(resolver, answers, loopback_only)
    return await banners(hosts, port, timeout)


async def canary_hosts(
    resolver: Resolver, answers: Sequence[DnsAnswer], loopback_only: bool = False
) -> list[tuple[str, str]]:
    """(host, address) of each canary's best mail host, from the canaries' MX answers (the
    resolver's health check asked them: they are not asked again)."""
    found: list[tuple[str, str]] = []
    for answer in answers:
        hosts = answer.exchanges or ((answer.mx,) if answer.mx else ())
        for host in hosts[:1]:
            addresses = await host_addresses(resolver, host)
            if loopback_only:  # the sandbox: nothing but loopback is ever connected to
                addresses = [a for a in addresses if ipaddress.ip_address(a).is_loopback]
            found.extend((host, address) for address in addresses[:1])
    return found


async def banners(hosts: Sequence[tuple[str, str]], port: int, timeout: float) -> Reachability:
    """Whether one of *hosts* ((host, address) pairs) answers with an SMTP banner on *port*:
    what tells that port 25 is open from this process, without a DNS query."""
    tried: list[str] = []
    for host, address in hosts:
        banner = await _banner(address, port, timeout)
        if banner.startswith("220"):
            return Reachability(True, f"{host} ({address}:{port}) answered")
        tried.append(f"{host} ({address}:{port}): {banner}")
    return Reachability(
        False,
        "no mail server could be reached on port "
        f"{port} ({'; '.join(tried) or 'no mail host of the canary domains resolved'}). "
        "Outbound port 25 is blocked on many networks and clouds: verify from a host that may "
        "send mail, or run with --verify none.",
    )


async def _banner(address: str, port: int, timeout: float) -> str:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), timeout)
    except (OSError, TimeoutError) as exc:
        return f"cannot connect ({exc.__class__.__name__})"
    try:
        line = await asyncio.wait_for(reader.readline(), timeout)
        return line.decode("ascii", "replace").strip() or "no banner"
    except (OSError, TimeoutError):
        return "no banner in time"
    finally:
        writer.close()
