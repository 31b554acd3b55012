"""The pieces the evaluation world is assembled from: mail-host styles and a builder that keeps
the world (DNS zones, mail hosts) and its truth (one row per listed address) consistent.

A *style* is the set of corpus replies one kind of server sends (Gmail's, Postfix's...). The
builder gives each mail host a loopback address and an A record for it, so the prober reaches
it the way it would reach a real MX host, and records for each address it lists whether mail to
it would be delivered, which scenario it belongs to and which corpus reply decides it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from worlds.evaluation.names import company_domains, local_parts
from worlds.replies.corpus import by_key

# World mail hosts start at 127.0.0.2: 127.0.0.1 is where the sandbox DNS server listens, and in
# this world it stands for "loopback", the address no real domain's mail can be delivered to.
_FIRST_HOST = 2
_PER_BLOCK = 250


@dataclass(frozen=True)
class TruthRow:
    """What is true of one listed address."""

    email: str
    deliverable: bool  # mail sent to it would reach the person meant
    cls: str  # the scenario (see worlds.evaluation.world)
    reply: str = ""  # the corpus key of the reply that decides it, "" when none does
    intended: str = ""  # for a typo domain: the domain the person meant


@dataclass(frozen=True)
class Style:
    """The corpus replies of one kind of mail server."""

    greeting: str
    ok: str
    unknown: str
    disabled: str = ""
    full: str = ""
    sender_ok: str = ""


STYLES: Mapping[str, Style] = {
    "gmail": Style(
        "gmail.greeting", "gmail.rcpt_ok", "gmail.no_such_user", "gmail.disabled",
        "gmail.over_quota", "gmail.sender_ok",
    ),
    "outlook": Style(
        "outlook.greeting", "outlook.rcpt_ok", "outlook.mailbox_unavailable", "",
        "", "outlook.sender_ok",
    ),
    "eop": Style(
        "outlook.greeting", "outlook.rcpt_ok", "eop.dbeb_access_denied", "", "",
        "outlook.sender_ok",
    ),
    "exchange": Style(
        "exchange.greeting", "exchange.rcpt_ok", "exchange.recipient_filter", "", "",
        "exchange.sender_ok",
    ),
    "postfix": Style(
        "postfix.greeting", "postfix.rcpt_ok", "postfix.unknown_virtual_mailbox", "",
        "postfix.quota_status", "postfix.sender_ok",
    ),
    "exim": Style(
        "exim.greeting_cpanel", "exim.rcpt_accepted", "exim.no_such_user_here", "", "",
        "exim.sender_ok",
    ),
    "sendmail": Style(
        "sendmail.greeting", "sendmail.rcpt_ok", "sendmail.user_unknown", "",
        "sendmail.mailbox_full", "sendmail.sender_ok",
    ),
    "qmail": Style("qmail.greeting", "postfix.rcpt_ok", "qmail.chkuser_no_mailbox"),
    "yahoo": Style("yahoo.greeting", "yahoo.rcpt_ok", "yahoo.no_account", "yahoo.disabled", "",
                   "yahoo.sender_ok"),
}  # fmt: skip


class Builder:
    """Collects zones, mail hosts and truth rows; every address goes through :meth:`listed`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.zones: dict[str, dict[str, Any]] = {}
        self.smtp: dict[str, dict[str, Any]] = {}
        self.rows: list[TruthRow] = []
        self._hosts: dict[str, str] = {}  # host name -> loopback address
        self._locals: dict[str, set[str]] = {}
        self._domains: set[str] = set()
        self._count = 0

    # --- DNS -------------------------------------------------------------------------------

    def mx(self, domain: str, hosts: Iterable[str]) -> None:
        """``domain``'s MX records, preference 10, 20, ... in the order given."""
        self.zones[domain] = {"mx": [[10 * (i + 1), h] for i, h in enumerate(hosts)]}

    def zone(self, name: str, **records: Any) -> None:
        self.zones[name] = dict(records)

    # --- mail hosts ----------------------------------------------------------------------

    def host(self, name: str, style: str | None = None, **settings: Any) -> str:
        """The mail host ``name`` (created on first use, with an A record); its address."""
        if name in self._hosts:
            return self._hosts[name]
        address = self._next_address()
        self._hosts[name] = address
        self.zones[name] = {"a": [address]}
        config: dict[str, Any] = {"name": name, "domains": {}}
        if style is not None:
            config.update(_style_settings(STYLES[style]))
        config.update(settings)
        self.smtp[address] = config
        return address

    def host_config(self, name: str) -> dict[str, Any]:
        return self.smtp[self._hosts[name]]

    def serve(self, host: str, domain: str, **settings: Any) -> dict[str, Any]:
        """The entry of ``domain`` on ``host`` (created empty), updated with ``settings``."""
        domains = self.host_config(host)["domains"]
        entry: dict[str, Any] = domains.setdefault(domain, {})
        entry.update(settings)
        return entry

    def mailbox(self, host: str, domain: str, local: str, kind: str = "mailboxes") -> None:
        """Put ``local`` in the ``kind`` list (mailboxes, full, disabled) of ``domain``."""
        entry = self.serve(host, domain)
        entry.setdefault(kind, []).append(local)

    def scripted(self, host: str, domain: str, local: str, reply_key: str) -> None:
        """Give ``local`` a reply of its own (a corpus reply's text)."""
        entry = self.serve(host, domain)
        entry.setdefault("replies", {})[local] = by_key(reply_key).text

    # --- addresses -----------------------------------------------------------------------

    def companies(self, count: int) -> list[str]:
        """``count`` new made-up company domains."""
        return company_domains(self.rng, count, self._domains)

    def people(self, domain: str, count: int) -> list[str]:
        """``count`` new local parts for ``domain``."""
        return local_parts(self.rng, count, self._locals.setdefault(domain, set()))

    def listed(
        self,
        local: str,
        domain: str,
        deliverable: bool,
        cls: str,
        reply: str = "",
        intended: str = "",
    ) -> None:
        self._domains.add(domain)
        self.rows.append(TruthRow(f"{local}@{domain}", deliverable, cls, reply, intended))

    def _next_address(self) -> str:
        index = self._count
        self._count += 1
        block, offset = divmod(index, _PER_BLOCK)
        return f"127.0.{block}.{offset + _FIRST_HOST}"


def text(key: str) -> str:
    """A corpus reply's text, for a host setting."""
    return by_key(key).text


def _style_settings(style: Style) -> dict[str, Any]:
    texts = {"ok": style.ok, "unknown": style.unknown, "disabled": style.disabled}
    texts["full"] = style.full
    settings: dict[str, Any] = {
        "greeting": text(style.greeting),
        "rcpt_text": {kind: text(key) for kind, key in texts.items() if key},
    }
    if style.sender_ok:
        settings["mail_from"] = [["*", text(style.sender_ok)]]
    return settings


@dataclass(frozen=True)
class Mix:
    """How many listed addresses of each kind one domain gets."""

    exist: int
    missing: int = 0
    disabled: int = 0
    full: int = 0
    rate: int = 0  # existing, but the server defers each RCPT for them (per-recipient rate)


def styled(b: Builder, name: str, style: str, **overrides: Any) -> str:
    """Host ``name`` in ``style`` with some RCPT classes reworded (``unknown="corpus.key"``)."""
    base = _style_settings(STYLES[style])["rcpt_text"]
    reworded = {kind: text(key) for kind, key in overrides.items() if kind in _CLASSES}
    settings = {k: v for k, v in overrides.items() if k not in _CLASSES}
    return b.host(name, style, rcpt_text={**base, **reworded}, **settings)


_CLASSES = frozenset({"ok", "unknown", "disabled", "full", "relay", "blocked", "greylisted"})


def populate(
    b: Builder,
    host: str,
    domain: str,
    mix: Mix,
    keys: Mapping[str, str],
    hidden: tuple[str, str] | None = None,
    *,
    cls: str | None = None,
    miss_cls: str | None = None,
) -> None:
    """List ``mix`` addresses of ``domain`` and give ``host`` their mailboxes.

    ``keys`` names the corpus replies for ``ok``, ``unknown``, ``disabled``, ``full`` and
    ``rate``. With ``hidden`` = (scenario, corpus key) a refusal hides every mailbox: each row
    gets that scenario and reply, and is deliverable exactly when its mailbox exists. ``cls``
    names the scenario of every row instead, ``miss_cls`` that of the missing ones.
    """
    b.serve(host, domain)
    kinds = (
        ("ok", mix.exist, "mailboxes", True),
        ("no_such_user", mix.missing, "", False),
        ("disabled", mix.disabled, "disabled", False),
        ("full", mix.full, "full", True),
        ("rate_limited_rcpt", mix.rate, "mailboxes", True),
    )
    for name, count, kind, deliverable in kinds:
        key = keys.get(_KEY_OF[name], "")
        label = miss_cls if miss_cls and name == "no_such_user" else cls or name
        scenario, reply = hidden or (label, key)
        for local in b.people(domain, count):
            if kind:
                b.mailbox(host, domain, local, kind)
            if name == "rate_limited_rcpt":
                b.scripted(host, domain, local, key)
            b.listed(local, domain, deliverable, scenario, reply=reply)


_KEY_OF = {
    "ok": "ok",
    "no_such_user": "unknown",
    "disabled": "disabled",
    "full": "full",
    "rate_limited_rcpt": "rate",
}


def style_keys(style: str, **overrides: str) -> dict[str, str]:
    """The corpus keys of ``style``'s RCPT replies, some replaced."""
    s = STYLES[style]
    keys = {"ok": s.ok, "unknown": s.unknown, "disabled": s.disabled, "full": s.full}
    keys.update(overrides)
    return keys
