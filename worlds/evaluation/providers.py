"""Evaluation world, part 1: mailbox providers, Google Workspace and Microsoft 365 tenants,
real domains near the providers, and typo domains (squatted, unregistered, misspelt TLDs).
"""

from __future__ import annotations

from worlds.evaluation.builder import Builder, Mix, populate, style_keys, styled, text
from worlds.evaluation.names import (
    MISSPELT_NAME_AND_TLD,
    NEAR_PROVIDER,
    TYPO_TARGETS,
    one_edit_typos,
    shipped_list,
    shipped_pairs,
)

_GMAIL_MX = "gmail-smtp-in.l.google.com"
_WORKSPACE_MX = "aspmx.l.google.com"
_YAHOO_MX = "mta5.am0.yahoodns.net"
_AOL_MX = "mx-aol.mail.gm0.yahoodns.net"
# Parking services' mail hosts: they accept every address of every domain they park.
_PARKING = ("park-mx.above.com", "mx1.sedoparking.com", "mail.h-email.net")
# Squatted typos per provider, not in known_typos.txt / in it, and unregistered ones.
_SQUATTED = {"gmail.com": 4, "yahoo.com": 3, "hotmail.com": 3, "outlook.com": 3}
_UNREGISTERED_PER_TARGET = 1


def providers(b: Builder) -> None:
    _google(b)
    _microsoft(b)
    _yahoo(b)
    others = (
        ("mx01.mail.icloud.com", "postfix", {"unknown": "icloud.user_does_not_exist"},
         {"icloud.com": Mix(128, 22, 2), "me.com": Mix(28, 5), "mac.com": Mix(18, 4)}),
        ("mx-ha03.web.de", "postfix", {"unknown": "rfc.mailbox_unavailable"},
         {"web.de": Mix(70, 14)}),
        ("mx00.emig.gmx.net", "postfix", {"unknown": "rfc.mailbox_unavailable"},
         {"gmx.de": Mix(70, 14)}),
        ("mxs.mail.ru", "postfix", {"unknown": "mailru.user_not_found", "ok": "mailru.ok"},
         {"mail.ru": Mix(70, 14), "list.ru": Mix(18, 4), "bk.ru": Mix(18, 4)}),
        ("mx.yandex.ru", "postfix", {"unknown": "yandex.no_such_user", "rate": "yandex.rate"},
         {"yandex.ru": Mix(48, 10, rate=3), "yandex.com": Mix(15, 3)}),
        ("mx.zoho.com", "postfix", {"unknown": "zoho.user_does_not_exist"},
         {"zoho.com": Mix(25, 5)}),
        ("mx1a1.comcast.net", "sendmail",
         {"unknown": "comcast.not_our_customer", "rate": "comcast.temporarily_unavailable"},
         {"comcast.net": Mix(50, 10, rate=2)}),
        ("mx1.qq.com", "postfix", {"unknown": "qq.not_found"}, {"qq.com": Mix(25, 5)}),
        ("mx.juno.com", "sendmail", {"unknown": "juno.not_valid_user"}, {"juno.com": Mix(12, 3)}),
        ("mx.quartz.synacor.com", "postfix", {"unknown": "synacor.does_not_exist"},
         {"q.com": Mix(12, 3)}),
        ("extmail.bigpond.com", "postfix", {"unknown": "bigpond.recipient_rejected"},
         {"bigpond.com": Mix(15, 3)}),
        ("mx.virginmedia.com", "postfix", {"unknown": "virginmedia.mailbox_unknown"},
         {"virginmedia.com": Mix(15, 3)}),
        ("mx1.hanmail.net", "postfix", {"disabled": "hanmail.inactive"},
         {"hanmail.net": Mix(10, 2, disabled=3)}),
        ("mx7.bigmir.net", "exim", {"disabled": "bigmir.frozen"},
         {"bigmir.net": Mix(8, 2, disabled=2)}),
        ("msgin.vvv.facebook.com", "postfix", {"unknown": "facebook.no_longer_available"},
         {"facebook.com": Mix(0, 4)}),
    )  # fmt: skip
    for host, style, overrides, domains in others:
        styled(b, host, style, **_reworded(overrides))
        keys = style_keys(style, **overrides)
        for domain, mix in domains.items():
            b.mx(domain, [host])
            populate(b, host, domain, mix, keys)
    # GMX's own network refuses the prober's address at the greeting (RFC 5321 §3.1).
    _refusing_provider(b, "mx01.emig.gmx.net", "gmx.net", "gmx.block_listed", Mix(35, 7))


def _google(b: Builder) -> None:
    alts = [f"alt{i}.gmail-smtp-in.l.google.com" for i in range(1, 5)]
    address = b.host(_GMAIL_MX, "gmail")
    for alt in alts:
        b.zone(alt, a=[address])  # the same server behind every MX name
    keys = style_keys("gmail", rate="gmail.receiving_rate")
    for domain, mix in (("gmail.com", Mix(880, 140, 15, 10, 20)), ("googlemail.com", Mix(30, 8))):
        b.mx(domain, [_GMAIL_MX, *alts])
        populate(b, _GMAIL_MX, domain, mix, keys)
    b.host(_WORKSPACE_MX, "gmail")
    quick = style_keys("gmail", rate="gmail.receiving_too_quickly")
    for domain in b.companies(10):
        b.mx(domain, [_WORKSPACE_MX])
        populate(b, _WORKSPACE_MX, domain, Mix(22, 5, rate=1), quick)


def _microsoft(b: Builder) -> None:
    consumer = (
        ("hotmail.com", Mix(430, 75), "outlook.mailbox_unavailable"),
        ("outlook.com", Mix(260, 45), "outlook.mailbox_unavailable_bare"),
        ("live.com", Mix(70, 12), "outlook.mailbox_unavailable_bare"),
        ("msn.com", Mix(25, 5), "outlook.mailbox_unavailable_bare"),
    )
    for domain, mix, unknown in consumer:
        host = f"{domain.replace('.', '-')}.olc.protection.outlook.com"
        styled(b, host, "outlook", unknown=unknown)
        b.mx(domain, [host])
        populate(b, host, domain, mix, style_keys("outlook", unknown=unknown))
    # Microsoft 365 tenants: Directory-Based Edge Blocking refuses unknown recipients at RCPT
    # with 5.4.1 "Access denied", the words of a policy refusal (Microsoft Learn, NDR 5.4.1).
    for i, domain in enumerate(b.companies(14)):
        host = f"{domain.replace('.', '-')}.mail.protection.outlook.com"
        unknown = "eop.dbeb_access_denied_old" if i < 2 else "eop.dbeb_access_denied"
        styled(b, host, "eop", unknown=unknown)
        b.mx(domain, [host])
        keys = style_keys("eop", unknown=unknown)
        populate(b, host, domain, Mix(20, 6), keys, miss_cls="exo_dbeb")


def _yahoo(b: Builder) -> None:
    # Yahoo and AOL accept every RCPT and bounce later; the prober does not ask them.
    for host, domains in (
        (_YAHOO_MX, {"yahoo.com": Mix(250, 45), "ymail.com": Mix(20, 4)}),
        (_AOL_MX, {"aol.com": Mix(100, 18)}),
    ):
        b.host(host, "yahoo")
        for domain, mix in domains.items():
            b.mx(domain, [host])
            populate(b, host, domain, mix, style_keys("yahoo"), cls="unverifiable_provider")


def _refusing_provider(b: Builder, host: str, domain: str, greeting: str, mix: Mix) -> None:
    b.host(host, "postfix", greeting=text(greeting))
    b.mx(domain, [host])
    populate(b, host, domain, mix, style_keys("postfix"), hidden=("greeting_5xx", greeting))


def near_providers(b: Builder) -> None:
    """Real domains a typo matcher must leave alone, each with an ordinary mail server."""
    for i, domain in enumerate(NEAR_PROVIDER):
        style = ("postfix", "exchange", "eop", "exim", "gmail")[i % 5]
        host = f"mx.{domain}"
        if style == "eop":
            host = f"{domain.replace('.', '-')}.mail.protection.outlook.com"
        styled(b, host, style)
        b.mx(domain, [host])
        populate(b, host, domain, Mix(7, 1), style_keys(style), cls="near_provider")


def typos(b: Builder) -> None:
    """Squatted typo domains (catch-all parking hosts), unregistered ones, misspelt TLDs."""
    pairs = shipped_pairs("known_typos.txt")
    known = frozenset(pairs)
    real = shipped_list("popular_domains.txt") | shipped_list("free_providers.txt")
    taken = real | set(NEAR_PROVIDER) | set(b.zones)
    avoid = set(known | taken)
    for host in _PARKING:
        b.host(host, "postfix")
    for target in TYPO_TARGETS:
        fresh = [t for t in one_edit_typos(target) if t not in avoid]
        count = _SQUATTED.get(target, 1)
        picked = b.rng.sample(fresh, count + _UNREGISTERED_PER_TARGET)
        for typo in picked[:count]:
            _squatted(b, typo, target, "typo_squatted")
        for typo in picked[count:]:
            _unregistered(b, typo, target, "typo_unregistered")
        avoid.update(picked)
    listed_typos = sorted((t, d) for t, d in pairs.items() if d in TYPO_TARGETS and t not in taken)
    chosen = b.rng.sample(listed_typos, 10)
    for typo, target in chosen[:6]:
        _squatted(b, typo, target, "typo_squatted_known")
    for typo, target in chosen[6:]:
        _unregistered(b, typo, target, "typo_unregistered_known")
    for typo, target in MISSPELT_NAME_AND_TLD:
        _unregistered(b, typo, target, "typo_tld_misspelt")


def _squatted(b: Builder, typo: str, target: str, cls: str) -> None:
    host = b.rng.choice(_PARKING)
    b.mx(typo, [host])
    b.serve(host, typo, catch_all=True)
    for local in b.people(typo, b.rng.randint(3, 5)):
        b.listed(local, typo, False, cls, reply="postfix.rcpt_ok", intended=target)


def _unregistered(b: Builder, typo: str, target: str, cls: str) -> None:
    for local in b.people(typo, b.rng.randint(2, 4)):
        b.listed(local, typo, False, cls, intended=target)


def _reworded(overrides: dict[str, str]) -> dict[str, str]:
    return {kind: key for kind, key in overrides.items() if kind != "rate"}
