"""The sandbox "world": which DNS names exist and what each one answers.

A world is plain data, loaded from JSON (or built from a dict) and served by
:class:`pipeline.sandbox.dns_server.SandboxDNS`. The file format::

    {"latency_ms": 0,
     "zones": {
       "gmail.com": {"mx": [[5, "gmail-smtp-in.l.google.com"],
                            [10, "alt1.gmail-smtp-in.l.google.com"]]},
       "nullmx-domain.com": {"mx": [[0, "."]]},
       "a-only.com": {"a": ["192.0.2.10"]},
       "broken.com": {"rcode": "SERVFAIL"},
       "slow.com": {"timeout": true},
       "laggy.com": {"mx": [[10, "mx.laggy.com"]], "latency_ms": 200},
       "empty.com": {}
     }}

Keys of a zone, all optional:

``mx``
    ``[[preference, exchange], ...]`` in the order they are served. An exchange of ``"."`` is a
    null MX (RFC 7505): the domain declares it accepts no mail.
``a`` / ``aaaa``
    IPv4 / IPv6 address strings. A domain with ``a`` but no ``mx`` exercises the implicit MX rule
    of RFC 5321 §5.1.
``rcode``
    ``"SERVFAIL"``, ``"REFUSED"`` or ``"NXDOMAIN"``: every query for the name gets that rcode.
``timeout``
    ``true``: queries for the name are never answered.
``latency_ms``
    Delay before answering. A zone's non-zero value replaces the world's ``latency_ms``, which is
    the delay for every other answer, NXDOMAIN included.
``ttl``
    TTL of the records served (default 300).

A zone with no keys exists but has no records: every query gets NOERROR with an empty answer
(NODATA, RFC 2308 §2.2). A name absent from ``zones`` is NXDOMAIN (RFC 2308 §2.1). Zone names are
matched case-insensitively (RFC 4343) and must be ASCII; write an internationalised name in its
A-label form (``xn--...``, RFC 5890), as a resolver would query it.

Mail servers
------------

The optional top-level ``smtp`` object describes the mail servers that
:class:`pipeline.sandbox.smtp_server.SandboxSMTP` runs, one per loopback address (any address in
127.0.0.0/8; every server listens on the same port). Give each MX host an A record in ``zones``
pointing at its address; an MX host whose address has no entry here refuses connections::

    "smtp": {
      "127.0.0.2": {
        "name": "mx1.acme-widgets.com",
        "domains": {
          "acme-widgets.com": {"mailboxes": ["alice", "bob", "info"], "full": ["carol"],
                               "disabled": ["dave"], "catch_all": false}
        },
        "greylist_seconds": 0, "max_recipients": 0, "throttle_sessions": 0,
        "block": false, "delay_ms": 0, "banner_delay_ms": 0
      }
    }

Keys of a host; only ``name`` is required:

``name``
    The host name the server gives in its 220 banner and its EHLO reply.
``domains``
    The domains it accepts mail for (ASCII, A-labels for IDNs), each with ``mailboxes`` (exist),
    ``full`` (over quota), ``disabled`` (exist but are closed) as lists of local parts, compared
    case-insensitively, and ``catch_all`` (``true``: every local part is accepted). A local part
    may be in at most one list; ``full`` and ``disabled`` cannot be combined with ``catch_all``.
    ``replies`` maps single local parts to a reply of their own, any code (``{"ann": "450 4.2.1
    The user you are trying to contact is receiving mail at a rate ..."}``), ahead of the lists.
``greylist_seconds``
    ``> 0``: the first RCPT of a (sender, recipient) pair is deferred with 451 4.7.1 until this
    many seconds have passed since that first attempt (greylisting).
``max_recipients``
    ``> 0``: RCPTs after this many in one session get 452 4.5.3.
``throttle_sessions``
    ``> 0``: a connection that would make more than this many concurrent sessions gets a
    421 4.7.0 banner and is closed.
``block``
    ``true``: every RCPT gets 550 5.7.1, as when the prober's address is on a blocklist.
``delay_ms`` / ``banner_delay_ms``
    Delay before each reply to a command / before the 220 banner.

Scripted replies, all optional; a reply is written as sent, lines separated by newlines, and may
name session values such as ``{rcpt}`` or ``{sender}`` (see :mod:`pipeline.sandbox.mail_hosts`):

``greeting``
    The banner instead of ``220 <name> ESMTP``: another 220 text, a 421 (sent, then the
    connection is closed) or a 5xx (then every command but QUIT gets 503).
``ehlo`` / ``helo``
    A refusal (4xx/5xx) sent instead of the 250 reply to EHLO / HELO.
``mail_from``
    ``[[sender pattern, reply], ...]``: the first rule whose shell-style pattern matches the
    MAIL FROM address (case-insensitive; the null sender is ``""``) answers it.
``rcpt_text``
    Rewords RCPT reply classes: ``{"unknown": "550 5.1.1 <{rcpt}>: Recipient address
    rejected: User unknown in virtual mailbox table"}``; classes: ok, unknown, disabled, full,
    relay, blocked, greylisted, too_many.
``sender_policy``
    ``{"check": "unknown_domain" | "unverified", "reply": ..., "stage": "rcpt" | "mail"}``:
    Postfix's reject_unknown_sender_domain (the MAIL FROM domain has no MX/A/AAAA record in this
    world, no dot, or is localhost) or reject_unverified_sender (no host of this world would
    accept the sender's mailbox), refused at RCPT (the default, as with smtpd_delay_reject) or
    at MAIL FROM.
``rate_limit``
    ``{"rcpts": N, "seconds": S, "reply": ...}``: at most N RCPTs answered in any S seconds;
    the others get the reply (default ``450 4.7.1``).

Any reply with code 421 closes the connection after it is sent. The order in which the replies
apply is documented in :mod:`pipeline.sandbox.smtp_server`.
"""

from __future__ import annotations

import ipaddress
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pipeline.sandbox.checks import (
    boolean,
    integer,
    listed,
    loopback_address,
    normalize_name,
    number,
    string,
    zone_name,
)
from pipeline.sandbox.mail_hosts import SmtpDomain, SmtpHost
from pipeline.sandbox.mail_hosts_parse import smtp_hosts_from_dict

__all__ = [
    "RCODES",
    "SmtpDomain",
    "SmtpHost",
    "World",
    "Zone",
    "load_world",
    "loopback_address",
    "normalize_name",
    "world_from_dict",
]

RCODES = frozenset({"SERVFAIL", "REFUSED", "NXDOMAIN"})
"""Rcodes a zone may be forced to answer with."""

_ZONE_KEYS = frozenset({"mx", "a", "aaaa", "rcode", "timeout", "latency_ms", "ttl"})
_WORLD_KEYS = frozenset({"zones", "latency_ms", "smtp"})
# RFC 2181 §8: a TTL is an unsigned 31-bit value.
_MAX_TTL = 2**31 - 1
# RFC 1035 §3.3.9: an MX preference is a 16-bit unsigned integer.
_MAX_PREFERENCE = 0xFFFF


@dataclass(frozen=True)
class Zone:
    """What one DNS name answers."""

    mx: tuple[tuple[int, str], ...] = ()
    a: tuple[str, ...] = ()
    aaaa: tuple[str, ...] = ()
    rcode: str | None = None
    timeout: bool = False
    latency_ms: float = 0.0
    ttl: int = 300

    def __post_init__(self) -> None:
        for preference, exchange in self.mx:
            if not 0 <= preference <= _MAX_PREFERENCE:
                raise ValueError(f"mx preference {preference} is outside 0..{_MAX_PREFERENCE}")
            _check_exchange(exchange)
        for address in self.a:
            _check_address(address, ipaddress.IPv4Address, "a")
        for address in self.aaaa:
            _check_address(address, ipaddress.IPv6Address, "aaaa")
        if self.rcode is not None and self.rcode not in RCODES:
            raise ValueError(f"rcode {self.rcode!r} is not one of {sorted(RCODES)}")
        if not (math.isfinite(self.latency_ms) and self.latency_ms >= 0):
            raise ValueError(f"latency_ms {self.latency_ms!r} must be a finite number >= 0")
        if not 0 <= self.ttl <= _MAX_TTL:
            raise ValueError(f"ttl {self.ttl} is outside 0..{_MAX_TTL}")
        has_records = bool(self.mx or self.a or self.aaaa)
        if self.rcode is not None and (has_records or self.timeout):
            raise ValueError("rcode cannot be combined with records or timeout")
        if self.timeout and has_records:
            raise ValueError("timeout cannot be combined with records")


@dataclass(frozen=True)
class World:
    """Every name the sandbox DNS server knows (any other name is NXDOMAIN) and the mail servers.

    ``smtp`` maps a loopback IPv4 address (``"127.0.0.2"``) to the mail server listening there.
    """

    zones: Mapping[str, Zone] = field(default_factory=lambda: MappingProxyType({}))
    latency_ms: float = 0.0
    smtp: Mapping[str, SmtpHost] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        for address in self.smtp:
            loopback_address(address)

    def lookup(self, name: str) -> Zone | None:
        """The zone for ``name`` (case-insensitive, trailing dot ignored), or None."""
        return self.zones.get(normalize_name(name))


def load_world(path: str | Path) -> World:
    """Read and validate a world JSON file (format in this module's docstring)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level must be a JSON object")
    try:
        return world_from_dict(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc


def world_from_dict(data: Mapping[str, Any]) -> World:
    """Build a :class:`World` from parsed JSON; raise ValueError naming the bad zone or key."""
    unknown = set(data) - _WORLD_KEYS
    if unknown:
        raise ValueError(f"unknown world key(s) {sorted(unknown)}; allowed: {sorted(_WORLD_KEYS)}")
    raw_zones = data.get("zones", {})
    if not isinstance(raw_zones, Mapping):
        raise ValueError("'zones' must be an object mapping names to zones")
    zones: dict[str, Zone] = {}
    for raw_name, raw_zone in raw_zones.items():
        name = zone_name(raw_name)
        if name in zones:
            raise ValueError(f"zone {raw_name!r}: duplicate of another zone named {name!r}")
        try:
            zones[name] = _zone_from_dict(raw_zone)
        except ValueError as exc:
            raise ValueError(f"zone {raw_name!r}: {exc}") from exc
    latency = number(data.get("latency_ms", 0.0), "world latency_ms")
    if not (math.isfinite(latency) and latency >= 0):
        raise ValueError(f"world latency_ms {latency!r} must be a finite number >= 0")
    smtp = smtp_hosts_from_dict(data.get("smtp", {}), _resolvable(zones))
    return World(zones=MappingProxyType(zones), latency_ms=latency, smtp=smtp)


def _zone_from_dict(raw: object) -> Zone:
    if not isinstance(raw, Mapping):
        raise ValueError("must be an object")
    unknown = set(raw) - _ZONE_KEYS
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_ZONE_KEYS)}")
    timeout = boolean(raw.get("timeout", False), "timeout")
    rcode = raw.get("rcode")
    if rcode is not None and not isinstance(rcode, str):
        raise ValueError(f"rcode must be a string, not {rcode!r}")
    return Zone(
        mx=tuple(_mx_entry(entry) for entry in listed(raw.get("mx", []), "mx")),
        a=tuple(string(item, "a") for item in listed(raw.get("a", []), "a")),
        aaaa=tuple(string(item, "aaaa") for item in listed(raw.get("aaaa", []), "aaaa")),
        rcode=rcode.upper() if rcode is not None else None,
        timeout=timeout,
        latency_ms=number(raw.get("latency_ms", 0.0), "latency_ms"),
        ttl=integer(raw.get("ttl", 300), "ttl"),
    )


def _mx_entry(entry: object) -> tuple[int, str]:
    if not isinstance(entry, list | tuple) or len(entry) != 2:
        raise ValueError(f"mx entry {entry!r} must be [preference, exchange]")
    preference, exchange = entry
    return integer(preference, "mx preference"), string(exchange, "mx exchange")


def _check_exchange(exchange: str) -> None:
    if exchange == ".":
        return
    name = normalize_name(exchange)
    if not name or not name.isascii() or any(not label for label in name.split(".")):
        raise ValueError(f"mx exchange {exchange!r} is not an ASCII host name or '.'")


def _check_address(
    address: str, kind: type[ipaddress.IPv4Address | ipaddress.IPv6Address], key: str
) -> None:
    try:
        kind(address)
    except ValueError as exc:
        raise ValueError(f"{key} value {address!r} is not a valid address: {exc}") from exc


def _resolvable(zones: Mapping[str, Zone]) -> frozenset[str]:
    """Names a mail server would find mail records for (a sender-domain check passes)."""
    return frozenset(
        name
        for name, zone in zones.items()
        if zone.a or zone.aaaa or any(exchange != "." for _, exchange in zone.mx)
    )
