"""Validation helpers shared by the world's parsers: JSON value types, DNS names, addresses.

Every helper raises ValueError with a sentence naming the offending key and value; the parsers
prefix it with the zone or host it came from.
"""

from __future__ import annotations

import ipaddress

import idna

# RFC 5321 §4.5.3.1.1: a local part is at most 64 octets.
MAX_LOCAL_PART_OCTETS = 64
# RFC 1035 §2.3.4: at most 255 octets on the wire, i.e. 253 characters in dotted text.
MAX_NAME_LENGTH = 253
_LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")


def normalize_name(name: str) -> str:
    """Lower-case ``name`` and drop one trailing dot: the form world keys are stored in."""
    # RFC 4343: DNS names compare case-insensitively (ASCII only); the trailing dot only marks a
    # name as fully qualified and does not change which node it names.
    return name[:-1].lower() if name.endswith(".") and name != "." else name.lower()


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


def check_local_part(local: object, key: str) -> str:
    """``local`` case-folded; ValueError unless it is a bare local part."""
    if not isinstance(local, str) or not local:
        raise ValueError(f"{key} value {local!r} must be a non-empty string")
    if "@" in local or any(char.isspace() for char in local):
        raise ValueError(f"{key} value {local!r} must be a bare local part (no '@', no spaces)")
    if len(local.encode("utf-8")) > MAX_LOCAL_PART_OCTETS:
        raise ValueError(f"{key} value {local!r} is longer than {MAX_LOCAL_PART_OCTETS} octets")
    return local.casefold()


def is_host_name(name: object) -> bool:
    if not isinstance(name, str):
        return False
    name = normalize_name(name)
    labels = name.split(".")
    return bool(name) and name.isascii() and len(name) <= MAX_NAME_LENGTH and all(labels)


def zone_name(raw: object, what: str = "zone name") -> str:
    """``raw`` as a normalised ASCII DNS name; ValueError naming it as ``what`` otherwise."""
    if not isinstance(raw, str) or not raw.strip("."):
        raise ValueError(f"{what} {raw!r} must be a non-empty string")
    name = normalize_name(raw)
    if not name.isascii():
        # Resolvers query the A-label (RFC 5891 §4), so a U-label key could never match.
        hint = idna.encode(name, uts46=True).decode("ascii")
        raise ValueError(f"{what} {raw!r} is not ASCII; write its A-label form {hint!r}")
    if len(name) > MAX_NAME_LENGTH or any(not label for label in name.split(".")):
        raise ValueError(f"{what} {raw!r} is not a valid DNS name")
    return name


def listed(value: object, key: str) -> list[object]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"{key} must be a list, not {value!r}")
    return list(value)


def string(value: object, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key} value {value!r} must be a string")
    return value


def boolean(value: object, key: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, not {value!r}")
    return value


def integer(value: object, key: str) -> int:
    # bool is a subclass of int; "ttl": true is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} {value!r} must be an integer")
    return value


def number(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} {value!r} must be a number")
    return float(value)
