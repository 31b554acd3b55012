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

The replies to RCPT are documented in :mod:`pipeline.sandbox.smtp_server`.
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

import idna

RCODES = frozenset({"SERVFAIL", "REFUSED", "NXDOMAIN"})
"""Rcodes a zone may be forced to answer with."""

_ZONE_KEYS = frozenset({"mx", "a", "aaaa", "rcode", "timeout", "latency_ms", "ttl"})
_WORLD_KEYS = frozenset({"zones", "latency_ms", "smtp"})
_SMTP_HOST_KEYS = frozenset(
    {
        "name",
        "domains",
        "greylist_seconds",
        "max_recipients",
        "throttle_sessions",
        "block",
        "delay_ms",
        "banner_delay_ms",
    }
)
_SMTP_DOMAIN_KEYS = frozenset({"mailboxes", "full", "disabled", "catch_all"})
_SMTP_LISTS = ("mailboxes", "full", "disabled")
# RFC 5321 §4.5.3.1.1: a local part is at most 64 octets.
_MAX_LOCAL_PART_OCTETS = 64
_LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
# RFC 2181 §8: a TTL is an unsigned 31-bit value.
_MAX_TTL = 2**31 - 1
# RFC 1035 §3.3.9: an MX preference is a 16-bit unsigned integer.
_MAX_PREFERENCE = 0xFFFF
# RFC 1035 §2.3.4: at most 255 octets on the wire, i.e. 253 characters in dotted text.
_MAX_NAME_LENGTH = 253


def normalize_name(name: str) -> str:
    """Lower-case ``name`` and drop one trailing dot: the form world keys are stored in."""
    # RFC 4343: DNS names compare case-insensitively (ASCII only); the trailing dot only marks a
    # name as fully qualified and does not change which node it names.
    return name[:-1].lower() if name.endswith(".") and name != "." else name.lower()


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
class SmtpDomain:
    """The local parts one mail host knows for one domain.

    Local parts are stored case-folded: RFC 5321 §2.4 lets a server treat them case-sensitively,
    but practically every real one does not, and a prober must cope with that.
    """

    mailboxes: frozenset[str] = frozenset()
    full: frozenset[str] = frozenset()
    disabled: frozenset[str] = frozenset()
    catch_all: bool = False

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for key in _SMTP_LISTS:
            given = getattr(self, key)
            if isinstance(given, str):
                # A bare string would silently become a set of one-letter local parts.
                raise ValueError(f"{key} must be a collection of local parts, not {given!r}")
            folded = frozenset(_check_local_part(local, key) for local in given)
            for local in folded:
                if local in seen:
                    raise ValueError(f"local part {local!r} is in both {seen[local]} and {key}")
                seen[local] = key
            # Frozen: the normalised set replaces the given one once, before anyone can see it.
            object.__setattr__(self, key, folded)
        if self.catch_all and (self.full or self.disabled):
            raise ValueError("full and disabled have no effect on a catch_all domain")


@dataclass(frozen=True)
class SmtpHost:
    """One sandbox mail server: what it accepts and how it misbehaves (see module docstring)."""

    name: str
    domains: Mapping[str, SmtpDomain] = field(default_factory=lambda: MappingProxyType({}))
    greylist_seconds: float = 0.0
    max_recipients: int = 0
    throttle_sessions: int = 0
    block: bool = False
    delay_ms: float = 0.0
    banner_delay_ms: float = 0.0

    def __post_init__(self) -> None:
        if not _is_host_name(self.name):
            raise ValueError(f"name {self.name!r} is not an ASCII host name")
        domains: dict[str, SmtpDomain] = {}
        for raw_name, domain in self.domains.items():
            name = _zone_name(raw_name, "domain")
            if name in domains:
                raise ValueError(f"domain {raw_name!r}: duplicate of another domain named {name!r}")
            domains[name] = domain
        object.__setattr__(self, "domains", MappingProxyType(domains))
        for key in ("greylist_seconds", "delay_ms", "banner_delay_ms"):
            value = getattr(self, key)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{key} {value!r} must be a finite number >= 0")
        for key in ("max_recipients", "throttle_sessions"):
            if getattr(self, key) < 0:
                raise ValueError(f"{key} {getattr(self, key)!r} must be >= 0")


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


def loopback_address(raw: object) -> str:
    """``raw`` as a canonical IPv4 address string; ValueError unless it is in 127.0.0.0/8."""
    # The sandbox must never listen on, or send a prober to, a real network interface.
    if not isinstance(raw, str):
        raise ValueError(f"smtp host address {raw!r} must be a string")
    try:
        address = ipaddress.IPv4Address(raw)
    except ValueError as exc:
        raise ValueError(f"smtp host address {raw!r} is not an IPv4 address: {exc}") from exc
    if address not in _LOOPBACK:
        raise ValueError(f"smtp host address {raw!r} is not a loopback address (127.0.0.0/8)")
    return str(address)


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
        name = _zone_name(raw_name)
        if name in zones:
            raise ValueError(f"zone {raw_name!r}: duplicate of another zone named {name!r}")
        try:
            zones[name] = _zone_from_dict(raw_zone)
        except ValueError as exc:
            raise ValueError(f"zone {raw_name!r}: {exc}") from exc
    latency = _number(data.get("latency_ms", 0.0), "world latency_ms")
    if not (math.isfinite(latency) and latency >= 0):
        raise ValueError(f"world latency_ms {latency!r} must be a finite number >= 0")
    smtp = _smtp_from_dict(data.get("smtp", {}))
    return World(zones=MappingProxyType(zones), latency_ms=latency, smtp=smtp)


def _smtp_from_dict(raw: object) -> Mapping[str, SmtpHost]:
    if not isinstance(raw, Mapping):
        raise ValueError("'smtp' must be an object mapping loopback addresses to mail hosts")
    hosts: dict[str, SmtpHost] = {}
    for raw_address, raw_host in raw.items():
        address = loopback_address(raw_address)
        if address in hosts:
            raise ValueError(f"smtp host {raw_address!r}: duplicate of {address!r}")
        try:
            hosts[address] = _smtp_host_from_dict(raw_host)
        except ValueError as exc:
            raise ValueError(f"smtp host {raw_address!r}: {exc}") from exc
    return MappingProxyType(hosts)


def _smtp_host_from_dict(raw: object) -> SmtpHost:
    if not isinstance(raw, Mapping):
        raise ValueError("must be an object")
    unknown = set(raw) - _SMTP_HOST_KEYS
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_SMTP_HOST_KEYS)}")
    if "name" not in raw:
        raise ValueError("missing 'name' (the host name of its banner)")
    raw_domains = raw.get("domains", {})
    if not isinstance(raw_domains, Mapping):
        raise ValueError("'domains' must be an object mapping domain names to mailboxes")
    domains: dict[str, SmtpDomain] = {}
    for raw_name, raw_domain in raw_domains.items():
        name = _zone_name(raw_name, "domain")
        if name in domains:
            raise ValueError(f"domain {raw_name!r}: duplicate of another domain named {name!r}")
        try:
            domains[name] = _smtp_domain_from_dict(raw_domain)
        except ValueError as exc:
            raise ValueError(f"domain {raw_name!r}: {exc}") from exc
    return SmtpHost(
        name=_string(raw["name"], "name"),
        domains=MappingProxyType(domains),
        greylist_seconds=_number(raw.get("greylist_seconds", 0.0), "greylist_seconds"),
        max_recipients=_integer(raw.get("max_recipients", 0), "max_recipients"),
        throttle_sessions=_integer(raw.get("throttle_sessions", 0), "throttle_sessions"),
        block=_boolean(raw.get("block", False), "block"),
        delay_ms=_number(raw.get("delay_ms", 0.0), "delay_ms"),
        banner_delay_ms=_number(raw.get("banner_delay_ms", 0.0), "banner_delay_ms"),
    )


def _smtp_domain_from_dict(raw: object) -> SmtpDomain:
    if not isinstance(raw, Mapping):
        raise ValueError("must be an object")
    unknown = set(raw) - _SMTP_DOMAIN_KEYS
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_SMTP_DOMAIN_KEYS)}")
    lists = {
        key: frozenset(_string(item, key) for item in _list(raw.get(key, []), key))
        for key in _SMTP_LISTS
    }
    return SmtpDomain(
        mailboxes=lists["mailboxes"],
        full=lists["full"],
        disabled=lists["disabled"],
        catch_all=_boolean(raw.get("catch_all", False), "catch_all"),
    )


def _check_local_part(local: object, key: str) -> str:
    if not isinstance(local, str) or not local:
        raise ValueError(f"{key} value {local!r} must be a non-empty string")
    if "@" in local or any(char.isspace() for char in local):
        raise ValueError(f"{key} value {local!r} must be a bare local part (no '@', no spaces)")
    if len(local.encode("utf-8")) > _MAX_LOCAL_PART_OCTETS:
        raise ValueError(f"{key} value {local!r} is longer than {_MAX_LOCAL_PART_OCTETS} octets")
    return local.casefold()


def _is_host_name(name: object) -> bool:
    if not isinstance(name, str):
        return False
    name = normalize_name(name)
    labels = name.split(".")
    return bool(name) and name.isascii() and len(name) <= _MAX_NAME_LENGTH and all(labels)


def _zone_name(raw: object, what: str = "zone name") -> str:
    if not isinstance(raw, str) or not raw.strip("."):
        raise ValueError(f"{what} {raw!r} must be a non-empty string")
    name = normalize_name(raw)
    if not name.isascii():
        # Resolvers query the A-label (RFC 5891 §4), so a U-label key could never match.
        hint = idna.encode(name, uts46=True).decode("ascii")
        raise ValueError(f"{what} {raw!r} is not ASCII; write its A-label form {hint!r}")
    if len(name) > _MAX_NAME_LENGTH or any(not label for label in name.split(".")):
        raise ValueError(f"{what} {raw!r} is not a valid DNS name")
    return name


def _zone_from_dict(raw: object) -> Zone:
    if not isinstance(raw, Mapping):
        raise ValueError("must be an object")
    unknown = set(raw) - _ZONE_KEYS
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_ZONE_KEYS)}")
    timeout = _boolean(raw.get("timeout", False), "timeout")
    rcode = raw.get("rcode")
    if rcode is not None and not isinstance(rcode, str):
        raise ValueError(f"rcode must be a string, not {rcode!r}")
    return Zone(
        mx=tuple(_mx_entry(entry) for entry in _list(raw.get("mx", []), "mx")),
        a=tuple(_string(item, "a") for item in _list(raw.get("a", []), "a")),
        aaaa=tuple(_string(item, "aaaa") for item in _list(raw.get("aaaa", []), "aaaa")),
        rcode=rcode.upper() if rcode is not None else None,
        timeout=timeout,
        latency_ms=_number(raw.get("latency_ms", 0.0), "latency_ms"),
        ttl=_integer(raw.get("ttl", 300), "ttl"),
    )


def _mx_entry(entry: object) -> tuple[int, str]:
    if not isinstance(entry, list | tuple) or len(entry) != 2:
        raise ValueError(f"mx entry {entry!r} must be [preference, exchange]")
    preference, exchange = entry
    return _integer(preference, "mx preference"), _string(exchange, "mx exchange")


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


def _list(value: object, key: str) -> list[object]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"{key} must be a list, not {value!r}")
    return list(value)


def _string(value: object, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key} value {value!r} must be a string")
    return value


def _boolean(value: object, key: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, not {value!r}")
    return value


def _integer(value: object, key: str) -> int:
    # bool is a subclass of int; "ttl": true is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} {value!r} must be an integer")
    return value


def _number(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} {value!r} must be a number")
    return float(value)
