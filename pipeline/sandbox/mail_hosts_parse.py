"""Reading the ``smtp`` section of a world file into :class:`~pipeline.sandbox.mail_hosts.SmtpHost`.

The format is documented in :mod:`pipeline.sandbox.world`. Errors are ValueErrors naming the
host, domain and key at fault.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeVar

from pipeline.sandbox.checks import (
    boolean,
    integer,
    listed,
    loopback_address,
    number,
    string,
    zone_name,
)
from pipeline.sandbox.mail_hosts import (
    DEFAULT_SENDER_REPLY,
    RateLimit,
    ReplyClass,
    ScriptedReply,
    SenderCheck,
    SenderDirectory,
    SenderPolicy,
    SmtpDomain,
    SmtpHost,
    Stage,
)

_HOST_KEYS = frozenset(
    {
        "name",
        "domains",
        "greylist_seconds",
        "max_recipients",
        "throttle_sessions",
        "block",
        "delay_ms",
        "banner_delay_ms",
        "greeting",
        "ehlo",
        "helo",
        "mail_from",
        "rcpt_text",
        "sender_policy",
        "rate_limit",
    }
)
_DOMAIN_KEYS = frozenset({"mailboxes", "full", "disabled", "catch_all", "replies"})
_POLICY_KEYS = frozenset({"check", "reply", "stage"})
_RATE_KEYS = frozenset({"rcpts", "seconds", "reply"})
_LISTS = ("mailboxes", "full", "disabled")
_Choice = TypeVar("_Choice", SenderCheck, Stage)


def smtp_hosts_from_dict(raw: object, resolvable: frozenset[str]) -> Mapping[str, SmtpHost]:
    """The hosts of a world's ``smtp`` object; ``resolvable``: names with mail DNS records."""
    if not isinstance(raw, Mapping):
        raise ValueError("'smtp' must be an object mapping loopback addresses to mail hosts")
    hosts: dict[str, SmtpHost] = {}
    for raw_address, raw_host in raw.items():
        address = loopback_address(raw_address)
        if address in hosts:
            raise ValueError(f"smtp host {raw_address!r}: duplicate of {address!r}")
        try:
            hosts[address] = _host(raw_host)
        except ValueError as exc:
            raise ValueError(f"smtp host {raw_address!r}: {exc}") from exc
    return MappingProxyType(_with_directory(hosts, resolvable))


def _with_directory(hosts: dict[str, SmtpHost], resolvable: frozenset[str]) -> dict[str, SmtpHost]:
    """Hosts with a sender policy get the world's view of senders (DNS names, mailboxes)."""
    if not any(host.sender_policy for host in hosts.values()):
        return hosts
    domains: dict[str, SmtpDomain] = {}
    for host in hosts.values():
        for name, domain in host.domains.items():
            domains.setdefault(name, domain)
    directory = SenderDirectory(resolvable, MappingProxyType(domains))
    return {
        address: dataclasses.replace(host, sender_directory=directory)
        if host.sender_policy
        else host
        for address, host in hosts.items()
    }


def _host(raw: object) -> SmtpHost:
    if not isinstance(raw, Mapping):
        raise ValueError("must be an object")
    _known_keys(raw, _HOST_KEYS)
    if "name" not in raw:
        raise ValueError("missing 'name' (the host name of its banner)")
    return SmtpHost(
        name=string(raw["name"], "name"),
        domains=_domains(raw.get("domains", {})),
        greylist_seconds=number(raw.get("greylist_seconds", 0.0), "greylist_seconds"),
        max_recipients=integer(raw.get("max_recipients", 0), "max_recipients"),
        throttle_sessions=integer(raw.get("throttle_sessions", 0), "throttle_sessions"),
        block=boolean(raw.get("block", False), "block"),
        delay_ms=number(raw.get("delay_ms", 0.0), "delay_ms"),
        banner_delay_ms=number(raw.get("banner_delay_ms", 0.0), "banner_delay_ms"),
        greeting=_optional_reply(raw, "greeting"),
        ehlo=_optional_reply(raw, "ehlo"),
        helo=_optional_reply(raw, "helo"),
        mail_from=_mail_from(raw.get("mail_from", [])),
        rcpt_text=_rcpt_text(raw.get("rcpt_text", {})),
        sender_policy=_policy(raw["sender_policy"]) if "sender_policy" in raw else None,
        rate_limit=_rate_limit(raw["rate_limit"]) if "rate_limit" in raw else None,
    )


def _domains(raw: object) -> Mapping[str, SmtpDomain]:
    if not isinstance(raw, Mapping):
        raise ValueError("'domains' must be an object mapping domain names to mailboxes")
    domains: dict[str, SmtpDomain] = {}
    for raw_name, raw_domain in raw.items():
        name = zone_name(raw_name, "domain")
        if name in domains:
            raise ValueError(f"domain {raw_name!r}: duplicate of another domain named {name!r}")
        try:
            domains[name] = _domain(raw_domain)
        except ValueError as exc:
            raise ValueError(f"domain {raw_name!r}: {exc}") from exc
    return MappingProxyType(domains)


def _domain(raw: object) -> SmtpDomain:
    if not isinstance(raw, Mapping):
        raise ValueError("must be an object")
    _known_keys(raw, _DOMAIN_KEYS)
    lists = {
        key: frozenset(string(item, key) for item in listed(raw.get(key, []), key))
        for key in _LISTS
    }
    replies = raw.get("replies", {})
    if not isinstance(replies, Mapping):
        raise ValueError("'replies' must be an object mapping local parts to replies")
    return SmtpDomain(
        mailboxes=lists["mailboxes"],
        full=lists["full"],
        disabled=lists["disabled"],
        catch_all=boolean(raw.get("catch_all", False), "catch_all"),
        replies={
            string(local, "replies"): ScriptedReply.parse(text, f"replies[{local!r}]")
            for local, text in replies.items()
        },
    )


def _optional_reply(raw: Mapping[str, object], key: str) -> ScriptedReply | None:
    return ScriptedReply.parse(raw[key], key) if key in raw else None


def _mail_from(raw: object) -> tuple[tuple[str, ScriptedReply], ...]:
    rules: list[tuple[str, ScriptedReply]] = []
    for entry in listed(raw, "mail_from"):
        if not isinstance(entry, list | tuple) or len(entry) != 2:
            raise ValueError(f"mail_from entry {entry!r} must be [sender pattern, reply]")
        pattern = string(entry[0], "mail_from pattern")
        rules.append((pattern.casefold(), ScriptedReply.parse(entry[1], f"mail_from {pattern!r}")))
    return tuple(rules)


def _rcpt_text(raw: object) -> Mapping[ReplyClass, ScriptedReply]:
    if not isinstance(raw, Mapping):
        raise ValueError("'rcpt_text' must be an object mapping reply classes to replies")
    texts: dict[ReplyClass, ScriptedReply] = {}
    for key, text in raw.items():
        try:
            kind = ReplyClass(key)
        except ValueError:
            allowed = sorted(c.value for c in ReplyClass)
            raise ValueError(f"rcpt_text key {key!r} is not one of {allowed}") from None
        texts[kind] = ScriptedReply.parse(text, f"rcpt_text.{key}")
    return MappingProxyType(texts)


def _policy(raw: object) -> SenderPolicy:
    if not isinstance(raw, Mapping):
        raise ValueError("'sender_policy' must be an object")
    _known_keys(raw, _POLICY_KEYS, "sender_policy")
    check = _choice(SenderCheck, raw.get("check"), "sender_policy.check")
    stage = _choice(Stage, raw.get("stage", Stage.RCPT.value), "sender_policy.stage")
    text = raw.get("reply")
    policy_reply = (
        ScriptedReply.parse(text, "sender_policy.reply")
        if text is not None
        else DEFAULT_SENDER_REPLY[check]
    )
    return SenderPolicy(check, policy_reply, stage)


def _rate_limit(raw: object) -> RateLimit:
    if not isinstance(raw, Mapping):
        raise ValueError("'rate_limit' must be an object")
    _known_keys(raw, _RATE_KEYS, "rate_limit")
    rcpts = integer(raw.get("rcpts"), "rate_limit.rcpts")
    seconds = number(raw.get("seconds"), "rate_limit.seconds")
    if "reply" in raw:
        return RateLimit(rcpts, seconds, ScriptedReply.parse(raw["reply"], "rate_limit.reply"))
    return RateLimit(rcpts, seconds)


def _choice(kind: type[_Choice], value: object, key: str) -> _Choice:
    try:
        return kind(str(value))
    except ValueError:
        allowed = sorted(member.value for member in kind)
        raise ValueError(f"{key} {value!r} is not one of {allowed}") from None


def _known_keys(raw: Mapping[str, object], allowed: frozenset[str], where: str = "") -> None:
    unknown = set(raw) - allowed
    if unknown:
        prefix = f"{where}: " if where else ""
        raise ValueError(f"{prefix}unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
