"""SMTP RCPT probing: one careful session with one mail server, and what its replies mean.

A probe never sends DATA: per recipient it says MAIL FROM, RCPT TO and RSET, and reads the RCPT
reply. Replies are read by their enhanced status code (RFC 3463) first, because the basic code
is coarse (550 is both "no such user" and "you are blocked"), and by phrase tables only when a
server sends no enhanced code.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import aiosmtplib

from pipeline.core.config import VerifyConfig
from pipeline.core.dns import Resolver, host_addresses, lookup_domain, mail_hosts
from pipeline.core.mailboxes.types import Mailbox, MailboxResult
from pipeline.core.status_codes import leading_status, status_subject

# RFC 3463 §3: class.subject.detail. The subjects and details that decide a mailbox.
_BY_ENHANCED: dict[str, Mailbox] = {
    "5.1.1": Mailbox.NO_SUCH_USER,  # bad destination mailbox address
    "5.1.0": Mailbox.NO_SUCH_USER,  # other address status (used by several providers)
    "5.1.6": Mailbox.NO_SUCH_USER,  # destination mailbox has moved, no forwarding address
    "5.1.10": Mailbox.NO_SUCH_USER,  # RFC 7505: recipient address has null MX
    "5.2.1": Mailbox.DISABLED,  # mailbox disabled, not accepting messages
    "4.2.1": Mailbox.DISABLED,
    "4.2.2": Mailbox.FULL,  # mailbox full
    "5.2.2": Mailbox.FULL,
    "4.5.3": Mailbox.TOO_MANY,  # too many recipients
    "5.5.3": Mailbox.TOO_MANY,
}

# Phrase tables, for servers that send no enhanced code. Order matters: first match wins.
_PHRASES: tuple[tuple[re.Pattern[str], Mailbox], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), outcome)
    for pattern, outcome in (
        (r"too many recipients", Mailbox.TOO_MANY),
        (r"over ?quota|mailbox (is )?full|insufficient storage", Mailbox.FULL),
        (r"disabled|inactive|suspended|deactivated", Mailbox.DISABLED),
        (r"spam|block|blacklist|listed|policy|denied|reputation|not permitted", Mailbox.BLOCKED),
        (
            r"user unknown|unknown user|no such (user|mailbox|recipient)|does not exist|"
            r"not exist|invalid (recipient|mailbox|address)|recipient rejected|"
            r"mailbox unavailable|address rejected|not found|unrouteable",
            Mailbox.NO_SUCH_USER,
        ),
    )
)


@dataclass(frozen=True)
class Reply:
    code: int
    message: str

    @property
    def enhanced(self) -> str:
        return leading_status(self.message)


def classify(reply: Reply) -> Mailbox:
    """What an RCPT reply says about the mailbox."""
    if 200 <= reply.code < 300:
        return Mailbox.OK
    enhanced = reply.enhanced
    if enhanced in _BY_ENHANCED:
        return _BY_ENHANCED[enhanced]
    if reply.code == 421:
        return Mailbox.BLOCKED  # the server is closing on us: throttling or a block
    if status_subject(enhanced).startswith(
        "7."
    ):  # x.7.x: security or policy status (RFC 3463 §3.8)
        # Greylisting answers 450/451 4.7.1: it asks for patience, not for us to go away.
        return Mailbox.DEFERRED if reply.code in (450, 451) else Mailbox.BLOCKED
    for pattern, outcome in _PHRASES:
        # A 4xx is temporary by definition (RFC 5321 §4.2.1): it can say "full" or "too many",
        # never that the mailbox does not exist.
        if pattern.search(reply.message) and (reply.code >= 500 or outcome in _TRANSIENT):
            return outcome
    return Mailbox.DEFERRED if reply.code < 500 else Mailbox.REJECTED


_TRANSIENT = frozenset({Mailbox.TOO_MANY, Mailbox.FULL})


def result_of(reply: Reply, outcome: Mailbox | None = None) -> MailboxResult:
    """The answer a reply gives, with the server's words kept."""
    return MailboxResult(outcome or classify(reply), f"{reply.code} {reply.message}".strip())


@dataclass(frozen=True)
class SmtpSettings:
    port: int = 25
    helo: str = "localhost"
    mail_from: str = ""
    timeout: float = 20.0
    loopback_only: bool = False  # the sandbox: never connect anywhere but 127.0.0.0/8 and ::1


def smtp_settings(verify: VerifyConfig, *, loopback_only: bool = False) -> SmtpSettings:
    """The session settings of a config: EHLO name defaults to this host's fully qualified
    name, the envelope sender to postmaster at that name (RFC 5321 §4.5.1 requires every
    domain to accept mail for postmaster, so bounces about probes have somewhere to go)."""
    helo = verify.helo or socket.getfqdn()
    sender = verify.mail_from or f"postmaster@{helo}"
    return SmtpSettings(verify.port, helo, sender, verify.timeout, loopback_only)


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
    host: str,
    recipients: Sequence[str],
    settings: SmtpSettings,
    pace: Callable[[], Awaitable[bool]] | None = None,
    on_reply: Callable[[str, Reply], None] | None = None,
) -> SessionResult:
    """Ask *host* about *recipients* in one session; never raises for network trouble.

    *pace* is awaited before each RCPT: it may wait (rate limits) or answer False to stop the
    session (the budget is spent); the recipients not asked are then left out of the result.
    *on_reply* hears each recipient's reply the moment it arrives.
    """
    result = SessionResult()
    client = aiosmtplib.SMTP(
        hostname=host,
        port=settings.port,
        timeout=settings.timeout,
        local_hostname=settings.helo,
        start_tls=False,
    )
    try:
        banner = await client.connect()
        result.connected = True
        if banner.code != 220:
            return _ended(result, Reply(banner.code, banner.message))
        await _greet(client, settings.helo)
        for recipient in recipients:
            if pace is not None and not await pace():
                break
            reply = await _ask(client, settings.mail_from, recipient)
            outcome = classify(reply)
            if outcome is Mailbox.TOO_MANY or reply.code == 421:
                return _ended(result, reply)
            result.replies[recipient] = reply
            if on_reply is not None:  # the caller keeps it now: a kill must not lose it
                on_reply(recipient, reply)
        await client.quit()
    except aiosmtplib.SMTPConnectTimeoutError:
        result.failure = Mailbox.TIMEOUT
    except aiosmtplib.SMTPConnectError:
        result.failure = Mailbox.UNREACHABLE
    except (aiosmtplib.SMTPTimeoutError, TimeoutError):
        result.failure = Mailbox.TIMEOUT
    except aiosmtplib.SMTPResponseException as exc:
        _ended(result, Reply(exc.code, exc.message))
    except (aiosmtplib.SMTPException, OSError):
        result.failure = Mailbox.UNREACHABLE if not result.connected else Mailbox.TIMEOUT
    finally:
        client.close()
    return result


def _ended(result: SessionResult, reply: Reply) -> SessionResult:
    result.closing_reply = reply
    outcome = classify(reply)
    result.failure = outcome if outcome is not Mailbox.OK else Mailbox.REJECTED
    return result


async def _greet(client: aiosmtplib.SMTP, helo: str) -> None:
    # RFC 5321 §4.1.1.1: EHLO first; HELO only for servers that do not know EHLO.
    reply = await client.execute_command(b"EHLO", helo.encode("ascii"))
    if reply.code != 250:
        reply = await client.execute_command(b"HELO", helo.encode("ascii"))
    if reply.code != 250:
        raise aiosmtplib.SMTPResponseException(reply.code, reply.message)


async def _ask(client: aiosmtplib.SMTP, mail_from: str, recipient: str) -> Reply:
    sender = await client.execute_command(b"MAIL", f"FROM:<{mail_from}>".encode())
    if sender.code != 250:
        return Reply(sender.code, sender.message)  # a refused sender refuses every recipient
    reply = await client.execute_command(b"RCPT", f"TO:<{recipient}>".encode())
    # RSET between recipients (RFC 5321 §4.1.1.5): each probe is its own transaction.
    await client.execute_command(b"RSET")
    return Reply(reply.code, reply.message)


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
    tried: list[str] = []
    for canary in canaries:
        answer = await lookup_domain(resolver, canary)
        for host in (await mail_hosts(resolver, canary, answer.status))[:1]:
            addresses = await host_addresses(resolver, host)
            if loopback_only:  # the sandbox: nothing but loopback is ever connected to
                addresses = [a for a in addresses if ipaddress.ip_address(a).is_loopback]
            for address in addresses[:1]:
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
