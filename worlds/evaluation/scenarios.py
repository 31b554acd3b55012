"""Evaluation world, part 2: company domains on ordinary servers (one per "no such user" wording
of the corpus), servers whose replies hide whether a mailbox exists (sender policies, HELO and
IP blocks, refusing greetings, 421s, rate limits, greylisting), catch-alls, implicit MX, and the
DNS cases where there is nowhere to deliver.
"""

from __future__ import annotations

from worlds.evaluation.builder import Builder, Mix, populate, style_keys, styled, text
from worlds.replies.corpus import Meaning, Stage, by_key, select

_FAMILY_STYLE = {"exim": "exim", "sendmail": "sendmail", "qmail": "qmail", "exchange": "exchange"}
_BUSINESS_FAMILIES = (
    "postfix", "exim", "sendmail", "qmail", "exchange", "dovecot", "cyrus", "courier", "rfc",
    "generic", "messagelabs", "ionos",
)  # fmt: skip
_FULL_KEYS = (
    "postfix.quota_status", "sendmail.mailbox_full", "dovecot.quota_exceeded",
    "dovecot.quota_status_plain", "rfc.storage_exceeded", "rfc.552_mailbox_unavailable",
    "generic.over_quota", "generic.too_many_messages", "gmail.over_quota",
)  # fmt: skip
_DISABLED_KEYS = ("generic.account_inactive", "generic.account_suspended", "gmail.disabled")
_TRANSIENT_KEYS = ("rfc.local_error", "gmail.temporarily_rejected", "rfc.system_storage")
_SMALL = Mix(8, 3)


def businesses(b: Builder) -> None:
    """One company domain per recipient-unknown wording, each on a server of its family."""
    wordings = select(
        stage=Stage.RCPT, meanings=[Meaning.NO_SUCH_USER], families=_BUSINESS_FAMILIES
    )
    # Yahoo's own domains are not probed (they accept every RCPT); its words are, elsewhere.
    wordings += (by_key("yahoo.no_account_short"), by_key("yahoo.no_account"))
    for i, (reply, domain) in enumerate(zip(wordings, b.companies(len(wordings)), strict=True)):
        style = _FAMILY_STYLE.get(reply.family, "postfix")
        full = _FULL_KEYS[i % len(_FULL_KEYS)]
        disabled = _DISABLED_KEYS[i % len(_DISABLED_KEYS)]
        transient = _TRANSIENT_KEYS[i % len(_TRANSIENT_KEYS)]
        host = f"mail.{domain}"
        styled(b, host, style, unknown=reply.key, full=full, disabled=disabled)
        b.mx(domain, [host])
        keys = style_keys(style, unknown=reply.key, full=full, disabled=disabled, rate=transient)
        mix = Mix(14, 4, disabled=1 if i % 2 else 0, full=1, rate=1 if i % 3 == 0 else 0)
        populate(b, host, domain, mix, keys)
    # A full mailbox in words a reader may take for "no such user" (552 = storage, RFC 5321).
    _relabel(b, "rfc.552_mailbox_unavailable", "full", "full_552")
    _relabel(b, "rate", "rate_limited_rcpt", "transient_rcpt", keys=_TRANSIENT_KEYS)


def hidden_existence(b: Builder) -> None:
    """Servers whose every answer is about us, so no reply tells whether a mailbox exists."""
    for key in ("postfix.unknown_sender_domain", "postfix.unknown_sender_domain",
                "postfix.unknown_sender_domain_450", "postfix.non_fqdn_sender",
                "exim.sender_verify_unrouteable", "exim.sender_verify_unrouteable",
                "exim.sender_verify_no_such_user", "exim.sender_verify_cpanel",
                "exim.sender_verify_callout", "exim.sender_verify_defer"):  # fmt: skip
        style = "exim" if key.startswith("exim") else "postfix"
        policy = {"check": "unknown_domain", "reply": text(key)}
        _hidden(b, style, "sender_refused_rcpt", key, sender_policy=policy)
    for key in ("postfix.unverified_sender", "postfix.unverified_sender_plain",
                "postfix.unverified_sender_pending"):  # fmt: skip
        policy = {"check": "unverified", "reply": text(key)}
        _hidden(b, "postfix", "sender_refused_rcpt", key, sender_policy=policy)
    for key in ("postfix.sender_access_denied", "postfix.spf_fail", "postfix.sender_not_owned"):
        _hidden(b, "postfix", "sender_refused_rcpt", key, block=True, blocked=key)
    for key in ("mailfrom.address_rejected", "mailfrom.non_fqdn"):
        policy = {"check": "unknown_domain", "stage": "mail", "reply": text(key)}
        _hidden(b, "postfix", "sender_refused_mail", key, sender_policy=policy, mail_from=[])
    for reply in select(stage=Stage.MAIL, meanings=[Meaning.SENDER_REFUSED]):
        if reply.key not in ("mailfrom.address_rejected", "mailfrom.non_fqdn"):
            _hidden(b, "exim", "sender_refused_mail", reply.key, mail_from=[["*", reply.text]])
    _hidden(b, "postfix", "sender_refused_mail", "mailfrom.user_unknown",
            mail_from=[["*", text("mailfrom.user_unknown")]])  # fmt: skip
    for reply in select(stage=Stage.RCPT, meanings=[Meaning.HOST_BLOCKED]):
        cls = "helo_refused_rcpt" if "helo" in reply.text.lower() else "host_blocked_rcpt"
        _hidden(b, "postfix", cls, reply.key, block=True, blocked=reply.key)
    _refusing_stages(b)
    _throttling(b)


def _refusing_stages(b: Builder) -> None:
    for key in ("postfix.unknown_helo_at_ehlo", "exim.bad_ehlo"):
        _hidden(b, "postfix", "ehlo_refused", key, ehlo=text(key), helo=text(key))
    for reply in select(stage=Stage.GREETING, meanings=[Meaning.HOST_BLOCKED]):
        if reply.family != "gmx":  # gmx.net itself uses one
            _hidden(b, "postfix", "greeting_5xx", reply.key, greeting=reply.text)
    _hidden(b, "postfix", "greeting_5xx", "gmx.policy_restrictions",
            greeting=text("gmx.policy_restrictions"))  # fmt: skip
    for reply in select(stage=Stage.GREETING, meanings=[Meaning.RATE_LIMITED, Meaning.TRANSIENT]):
        _hidden(b, "postfix", "greeting_421", reply.key, greeting=reply.text)
    for key in ("postfix.relay_denied", "sendmail.relaying_denied", "qmail.rcpthosts",
                "exchange.unable_to_relay", "eop.tenant_relay"):  # fmt: skip
        # The MX points at a server that does not take mail for the domain: mail bounces.
        domain = b.companies(1)[0]
        host = f"mx.{domain}"
        styled(b, host, "postfix", relay=key)
        b.mx(domain, [host])
        for local in b.people(domain, 5):
            b.listed(local, domain, False, "relay_denied", reply=key)


def _throttling(b: Builder) -> None:
    _hidden(b, "outlook", "rcpt_421_close", "outlook.ip_rate_limited", block=True,
            blocked="outlook.ip_rate_limited")  # fmt: skip
    for key, cls in (
        ("gmail.try_again_closing", "rcpt_421_close"),
        ("gmail.unsolicited_rate", "rcpt_421_close"),
        ("postfix.recipient_rate", "rate_limited_host"),
        ("eop.server_busy", "rate_limited_host"),
    ):
        # The first RCPTs of each minute are answered; the rest get the limit's reply.
        limit = {"rcpts": 4, "seconds": 60, "reply": text(key)}
        _open(b, "gmail" if key.startswith("gmail") else "postfix", cls, rate_limit=limit)
    for key in ("postfix.postgrey", "sendmail.milter_greylist", "exim.greylistd",
                "zerospam.greylisted", "fsf.greylisted", "improvmx.try_later",
                "postfix.unverified_recipient_pending"):  # fmt: skip
        # Below the prober's first retry delay (2.5 s in pipeline/sandbox/data/sandbox.toml).
        _open(b, "postfix", "greylisted", greylist_seconds=1.5, greylisted=key)
    for style in ("postfix", "exim", "exchange", "sendmail", "gmail", "postfix", "exim", "eop"):
        domain = b.companies(1)[0]
        host = f"mx.{domain}"
        styled(b, host, style)
        b.mx(domain, [host])
        populate(b, host, domain, Mix(10), style_keys(style), cls="catch_all")
        b.serve(host, domain, catch_all=True)
        for local in b.people(domain, 3):  # nobody has these; the catch-all takes them anyway
            b.listed(local, domain, True, "catch_all", reply=style_keys(style)["ok"])
    for _ in range(3):
        # No MX: RFC 5321 §5.1 delivers to the domain's own A record.
        domain = b.companies(1)[0]
        styled(b, domain, "postfix")
        populate(b, domain, domain, Mix(9, 3), style_keys("postfix"), cls="implicit_mx")


def dns_cases(b: Builder) -> None:
    """Domains with nowhere to deliver, and domains whose DNS fails (deliverability unknown)."""
    cases: list[tuple[str, dict[str, object] | None]] = [
        ("nxdomain", None), ("nxdomain", None), ("nxdomain", None), ("nxdomain", None),
        ("nxdomain", None), ("nxdomain", None), ("nxdomain", None), ("nxdomain", None),
        ("null_mx", {"mx": [[0, "."]]}), ("null_mx", {"mx": [[0, "."]]}),
        ("null_mx", {"mx": [[0, "."]]}), ("no_mail_records", {}), ("no_mail_records", {}),
        ("mx_ip_literal", {"mx": [[10, "192.0.2.25"]]}),
        ("mx_ip_literal", {"mx": [[10, "198.51.100.7"], [20, "203.0.113.9"]]}),
        ("implicit_mx_private", {"a": ["10.20.30.40"]}),
        ("implicit_mx_private", {"a": ["192.168.1.10"]}),
        ("implicit_mx_private", {"a": ["172.16.5.4"]}),
        ("implicit_mx_loopback", {"a": ["127.0.0.1"]}),
        ("implicit_mx_reserved", {"a": ["0.0.0.0"]}),
        ("implicit_mx_reserved", {"a": ["240.0.0.1"]}),
        ("implicit_mx_reserved", {"a": ["192.0.2.44"]}),
        ("implicit_mx_reserved", {"a": ["169.254.10.10"]}),
        ("implicit_mx_reserved", {"a": ["100.64.1.1"]}),
        ("dns_temporary", {"rcode": "SERVFAIL"}), ("dns_temporary", {"rcode": "SERVFAIL"}),
        ("dns_temporary", {"rcode": "REFUSED"}), ("dns_temporary", {"timeout": True}),
    ]  # fmt: skip
    for cls, zone in cases:
        domain = b.companies(1)[0]
        if zone is not None:
            b.zone(domain, **zone)
        for local in b.people(domain, 4):
            b.listed(local, domain, cls == "dns_temporary", cls)
    _unusable_mx(b)


def _unusable_mx(b: Builder) -> None:
    # An IP literal naming a world mail server that would accept anything: only a resolver
    # that wrongly takes the literal as an address reaches it (RFC 5321 §5.1 wants names).
    literal = b.host("literal-target.example.net", "postfix")
    for kind in ("mx_ip_literal", "mx_nxdomain_hosts", "mx_nxdomain_hosts", "mx_nxdomain_hosts",
                 "mx_no_address", "mx_no_address", "mx_no_address"):  # fmt: skip
        domain = b.companies(1)[0]
        if kind == "mx_ip_literal":
            b.mx(domain, [literal])
            b.serve("literal-target.example.net", domain, catch_all=True)
        else:
            hosts = [f"mx1.{domain}", f"mx2.{domain}"]
            b.mx(domain, hosts)
            for host in hosts if kind == "mx_no_address" else ():
                b.zone(host)
        for local in b.people(domain, 4):
            b.listed(local, domain, False, kind)


def _hidden(b: Builder, style: str, cls: str, key: str, **settings: object) -> None:
    """A company domain whose server answers every probe with the refusal ``key``."""
    domain = b.companies(1)[0]
    host = f"mx.{domain}"
    styled(b, host, style, **settings)
    b.mx(domain, [host])
    populate(b, host, domain, _SMALL, style_keys(style), hidden=(cls, key))


def _open(b: Builder, style: str, cls: str, **settings: object) -> None:
    """A company domain whose server delays or throttles some answers, and tells the truth."""
    domain = b.companies(1)[0]
    host = f"mx.{domain}"
    styled(b, host, style, **settings)
    b.mx(domain, [host])
    populate(b, host, domain, Mix(10, 3), style_keys(style), cls=cls)


def _relabel(b: Builder, reply: str, old: str, new: str, keys: tuple[str, ...] = ()) -> None:
    wanted = set(keys) or {reply}
    for i, row in enumerate(b.rows):
        if row.cls == old and row.reply in wanted:
            b.rows[i] = type(row)(row.email, row.deliverable, new, row.reply, row.intended)
