"""The mail servers of a sandbox world: which mailboxes each knows and what it says at each stage.

The JSON form is documented in :mod:`pipeline.sandbox.world`; the replies a server sends, and in
which order it decides them, in :mod:`pipeline.sandbox.smtp_server`. This module holds the typed,
validated configuration only.

A scripted reply is written as the server sends it, one line per line of a multi-line reply
(RFC 5321 §4.2.1), each line starting with the same code: ``"550-5.1.1 first\\n550 5.1.1 last"``
or ``"550 5.1.1 first\\n550 5.1.1 last"`` are the same reply; the server puts the hyphens in.
A reply's text may name the session's values, filled in when it is sent: ``{rcpt}`` (the
recipient as sent), ``{local}``, ``{domain}``, ``{sender}`` (the MAIL FROM address),
``{sender_domain}``, ``{helo}`` (the client's EHLO/HELO name), ``{client}`` (the client's IP
address) and ``{host}`` (the server's name).
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pipeline.sandbox.checks import check_local_part, is_host_name, zone_name

_LINE = re.compile(r"^([2-5][0-9][0-9])(?:[ -](.*))?$")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_SMTP_LISTS = ("mailboxes", "full", "disabled")


@dataclass(frozen=True)
class ScriptedReply:
    """One SMTP reply: its code and the text of each of its lines (without the code)."""

    code: int
    lines: tuple[str, ...]

    @classmethod
    def parse(cls, raw: object, key: str) -> ScriptedReply:
        """Read ``"550 5.1.1 text"`` (lines separated by newlines); ValueError naming ``key``."""
        if not isinstance(raw, str) or not raw.strip():
            raise ValueError(f"{key} must be a reply such as '550 5.1.1 No such user', not {raw!r}")
        codes: set[str] = set()
        lines: list[str] = []
        for line in raw.replace("\r\n", "\n").strip("\n").split("\n"):
            match = _LINE.match(line)
            if match is None:
                raise ValueError(f"{key} line {line!r} does not start with a reply code 200-599")
            codes.add(match.group(1))
            lines.append(match.group(2) or "")
        if len(codes) > 1:
            # RFC 5321 §4.2.1: every line of a multi-line reply carries the same code.
            raise ValueError(f"{key} mixes reply codes {sorted(codes)} in one reply")
        return cls(int(codes.pop()), tuple(lines))

    @property
    def text(self) -> str:
        """The reply as written in a world file (one line per line)."""
        return "\n".join(f"{self.code} {line}".rstrip() for line in self.lines)

    def render(self, values: Mapping[str, str]) -> str:
        """The reply on the wire, placeholders filled in, lines joined with CRLF."""

        def fill(match: re.Match[str]) -> str:
            return values.get(match.group(1), match.group(0))

        texts = [_PLACEHOLDER.sub(fill, line) for line in self.lines]
        marks = ["-"] * (len(texts) - 1) + [" "]
        return "\r\n".join(
            f"{self.code}{mark}{text}".rstrip() for mark, text in zip(marks, texts, strict=True)
        )


def reply(text: str) -> ScriptedReply:
    """A :class:`ScriptedReply` from its written form (for defaults and tests)."""
    return ScriptedReply.parse(text, "reply")


class ReplyClass(enum.StrEnum):
    """The RCPT answers a host gives from its own tables; ``rcpt_text`` may reword each."""

    OK = "ok"
    UNKNOWN = "unknown"
    DISABLED = "disabled"
    FULL = "full"
    RELAY = "relay"
    BLOCKED = "blocked"
    GREYLISTED = "greylisted"
    TOO_MANY = "too_many"


# RFC 5321 §4.2 reply codes with RFC 3463 enhanced status codes.
DEFAULT_RCPT_TEXT: Mapping[ReplyClass, ScriptedReply] = MappingProxyType(
    {
        ReplyClass.OK: reply("250 2.1.5 OK"),
        ReplyClass.UNKNOWN: reply("550 5.1.1 No such user here"),
        ReplyClass.DISABLED: reply("550 5.2.1 Mailbox disabled, not accepting messages"),
        ReplyClass.FULL: reply("452 4.2.2 Mailbox full"),
        ReplyClass.RELAY: reply("550 5.7.1 Relay access denied"),
        ReplyClass.BLOCKED: reply("550 5.7.1 Message rejected: blocked by policy"),
        ReplyClass.GREYLISTED: reply("451 4.7.1 Greylisted, please try again later"),
        ReplyClass.TOO_MANY: reply("452 4.5.3 Too many recipients"),
    }
)


class SenderCheck(enum.StrEnum):
    """Postfix's sender restrictions that a host can emulate (postconf(5))."""

    UNKNOWN_DOMAIN = "unknown_domain"  # reject_unknown_sender_domain
    UNVERIFIED = "unverified"  # reject_unverified_sender (address verification, verify(8))


class Stage(enum.StrEnum):
    MAIL = "mail"
    RCPT = "rcpt"


DEFAULT_SENDER_REPLY: Mapping[SenderCheck, ScriptedReply] = MappingProxyType(
    {
        # Postfix's wording; the code is unknown_address_reject_code (often set to 550).
        SenderCheck.UNKNOWN_DOMAIN: reply(
            "550 5.1.8 <{sender}>: Sender address rejected: Domain not found"
        ),
        SenderCheck.UNVERIFIED: reply(
            "550 5.1.7 <{sender}>: Sender address rejected: undeliverable address"
        ),
    }
)


@dataclass(frozen=True)
class SenderDirectory:
    """What a host can learn about a sender from the rest of the world (DNS, other hosts)."""

    resolvable: frozenset[str] = frozenset()  # names with an MX (not null) or an A/AAAA record
    domains: Mapping[str, SmtpDomain] = field(default_factory=lambda: MappingProxyType({}))

    def domain_exists(self, domain: str) -> bool:
        # Postfix refuses a name without a dot before asking DNS (reject_non_fqdn_sender does the
        # same with its own wording); "localhost" is never a sender's real domain.
        name = domain.lower().rstrip(".")
        return "." in name and name != "localhost" and name in self.resolvable

    def deliverable(self, local: str, domain: str) -> bool:
        """Whether a probe of the sender address would get 250 (verify(8))."""
        if not self.domain_exists(domain):
            return False
        known = self.domains.get(domain.lower().rstrip("."))
        if known is None:
            return False
        folded = local.casefold()
        return folded == "postmaster" or known.catch_all or folded in known.mailboxes


@dataclass(frozen=True)
class SenderPolicy:
    check: SenderCheck
    reply: ScriptedReply
    stage: Stage = Stage.RCPT  # Postfix's smtpd_delay_reject=yes: sender refusals come at RCPT


@dataclass(frozen=True)
class RateLimit:
    """At most ``rcpts`` RCPTs answered in any ``seconds``; the others get ``reply``."""

    rcpts: int
    seconds: float
    reply: ScriptedReply = field(
        default_factory=lambda: reply("450 4.7.1 Too many recipients recently, try again later")
    )

    def __post_init__(self) -> None:
        if self.rcpts < 1 or not (math.isfinite(self.seconds) and self.seconds > 0):
            raise ValueError("rate_limit needs rcpts >= 1 and seconds > 0")


@dataclass(frozen=True)
class SmtpDomain:
    """The local parts one mail host knows for one domain.

    Local parts are stored case-folded: RFC 5321 §2.4 lets a server treat them case-sensitively,
    but practically every real one does not, and a prober must cope with that. ``replies`` gives
    single local parts a reply of their own (any code; a 2xx accepts), ahead of the lists.
    """

    mailboxes: frozenset[str] = frozenset()
    full: frozenset[str] = frozenset()
    disabled: frozenset[str] = frozenset()
    catch_all: bool = False
    replies: Mapping[str, ScriptedReply] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for key in _SMTP_LISTS:
            given = getattr(self, key)
            if isinstance(given, str):
                # A bare string would silently become a set of one-letter local parts.
                raise ValueError(f"{key} must be a collection of local parts, not {given!r}")
            folded = frozenset(check_local_part(local, key) for local in given)
            for local in folded:
                if local in seen:
                    raise ValueError(f"local part {local!r} is in both {seen[local]} and {key}")
                seen[local] = key
            # Frozen: the normalised set replaces the given one once, before anyone can see it.
            object.__setattr__(self, key, folded)
        if self.catch_all and (self.full or self.disabled):
            raise ValueError("full and disabled have no effect on a catch_all domain")
        replies = {check_local_part(k, "replies"): v for k, v in self.replies.items()}
        object.__setattr__(self, "replies", MappingProxyType(replies))


@dataclass(frozen=True)
class SmtpHost:
    """One sandbox mail server: what it accepts and how it misbehaves (see world.py)."""

    name: str
    domains: Mapping[str, SmtpDomain] = field(default_factory=lambda: MappingProxyType({}))
    greylist_seconds: float = 0.0
    max_recipients: int = 0
    throttle_sessions: int = 0
    block: bool = False
    delay_ms: float = 0.0
    banner_delay_ms: float = 0.0
    greeting: ScriptedReply | None = None
    ehlo: ScriptedReply | None = None
    helo: ScriptedReply | None = None
    mail_from: tuple[tuple[str, ScriptedReply], ...] = ()
    rcpt_text: Mapping[ReplyClass, ScriptedReply] = field(
        default_factory=lambda: MappingProxyType({})
    )
    sender_policy: SenderPolicy | None = None
    sender_directory: SenderDirectory = field(default_factory=SenderDirectory)
    rate_limit: RateLimit | None = None

    def __post_init__(self) -> None:
        if not is_host_name(self.name):
            raise ValueError(f"name {self.name!r} is not an ASCII host name")
        domains: dict[str, SmtpDomain] = {}
        for raw_name, domain in self.domains.items():
            name = zone_name(raw_name, "domain")
            if name in domains:
                raise ValueError(f"domain {raw_name!r}: duplicate of another domain named {name!r}")
            domains[name] = domain
        object.__setattr__(self, "domains", MappingProxyType(domains))
        object.__setattr__(self, "rcpt_text", MappingProxyType(dict(self.rcpt_text)))
        for key in ("greylist_seconds", "delay_ms", "banner_delay_ms"):
            value = getattr(self, key)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{key} {value!r} must be a finite number >= 0")
        for key in ("max_recipients", "throttle_sessions"):
            if getattr(self, key) < 0:
                raise ValueError(f"{key} {getattr(self, key)!r} must be >= 0")
        for key in ("ehlo", "helo"):
            refusal = getattr(self, key)
            if refusal is not None and refusal.code < 400:
                raise ValueError(f"{key} must be a refusal (4xx or 5xx), not {refusal.text!r}")
        if (
            self.greeting is not None
            and self.greeting.code not in (220, 421)
            and (self.greeting.code < 500)
        ):
            raise ValueError(f"greeting must be 220, 421 or 5xx, not {self.greeting.text!r}")

    def text(self, kind: ReplyClass) -> ScriptedReply:
        """This host's wording of ``kind``."""
        return self.rcpt_text.get(kind, DEFAULT_RCPT_TEXT[kind])
