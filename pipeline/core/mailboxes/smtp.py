"""SMTP RCPT probing: one careful session with one mail server, and what its replies mean.

A probe never sends DATA: per recipient it says MAIL FROM, RCPT TO and RSET, and reads the RCPT
reply. Replies are read by their enhanced status code (RFC 3463) first, because the basic code
is coarse (550 is both "no such user" and "you are blocked"), and by phrase tables only when a
server sends no enhanced code.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import aiosmtplib


class Mailbox(enum.StrEnum):
    """What one RCPT (or the attempt to make one) told us about one address."""

    OK = "mailbox_ok"
    NO_SUCH_USER = "no_such_user"
    DISABLED = "mailbox_disabled"
    FULL = "mailbox_full"
    DEFERRED = "deferred"  # 450/451: greylisting or a transient problem; ask again later
    GREYLISTED = "greylisted"  # still deferred after every retry
    BLOCKED = "smtp_blocked"  # the server refuses us by policy (5.7.x, 421, 554 banner)
    TOO_MANY = "too_many_recipients"  # 452 4.5.3: this session is full, use another
    REJECTED = "smtp_rejected"  # a 5xx we cannot read
    UNREACHABLE = "smtp_unreachable"
    TIMEOUT = "smtp_timeout"
    CATCH_ALL = "catch_all"  # the domain accepts any local part: a 250 proves nothing
    UNVERIFIABLE = "provider_unverifiable"  # a provider known to accept every RCPT
    NOT_VERIFIED = "not_verified_budget"  # the budget ran out before this address
    API_ERROR = "api_error"  # the remote API backend got no usable answer for this address


_ENHANCED = re.compile(r"^([245])\.(\d{1,3})\.(\d{1,3})\b")

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
        match = _ENHANCED.match(self.message.strip())
        return ".".join(match.groups()) if match else ""


def classify(reply: Reply) -> Mailbox:
    """What an RCPT reply says about the mailbox."""
    if 200 <= reply.code < 300:
        return Mailbox.OK
    enhanced = reply.enhanced
    if enhanced in _BY_ENHANCED:
        return _BY_ENHANCED[enhanced]
    if reply.code == 421:
        return Mailbox.BLOCKED  # the server is closing on us: throttling or a block
    if enhanced[2:4] == "7.":  # x.7.x: security or policy status (RFC 3463 §3.8)
        # Greylisting answers 450/451 4.7.1: it asks for patience, not for us to go away.
        return Mailbox.DEFERRED if reply.code in (450, 451) else Mailbox.BLOCKED
    for pattern, outcome in _PHRASES:
        # A 4xx is temporary by definition (RFC 5321 §4.2.1): it can say "full" or "too many",
        # never that the mailbox does not exist.
        if pattern.search(reply.message) and (reply.code >= 500 or outcome in _TRANSIENT):
            return outcome
    return Mailbox.DEFERRED if reply.code < 500 else Mailbox.REJECTED


_TRANSIENT = frozenset({Mailbox.TOO_MANY, Mailbox.FULL})


@dataclass(frozen=True)
class SmtpSettings:
    port: int = 25
    helo: str = "localhost"
    mail_from: str = ""
    timeout: float = 20.0
    loopback_only: bool = False  # the sandbox: never connect anywhere but 127.0.0.0/8 and ::1


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
) -> SessionResult:
    """Ask *host* about *recipients* in one session; never raises for network trouble.

    *pace* is awaited before each RCPT: it may wait (rate limits) or answer False to stop the
    session (the budget is spent); the recipients not asked are then left out of the result.
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
