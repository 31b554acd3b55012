"""Regenerate the sample data: a sandbox DNS world and a dirty mailing list that uses it.

Run from the repository root::

    .venv/bin/python sample_data/generate.py

Outputs (deterministic: fixed seed, no clock):

``world.json``
    Zones for every domain the list uses, in the format of :mod:`pipeline.sandbox.world`.
    Provider and company domains carry realistic MX hosts so the list also means something on
    the real network. Every MX host has an A record on its own loopback address (127.0.0.2 on),
    and the ``smtp`` section runs a mail server there that knows the list's mailboxes, with one
    host per behaviour a prober must handle (see ``SMTP_BEHAVIOUR``); the other addresses are
    from the documentation ranges (RFC 5737, RFC 3849).
``list.csv``
    About 300 rows, UTF-8, comma-delimited, header
    ``id,first_name,last_name,Email Address,company,signup_date``. Roughly 70% are plain good
    addresses; the rest are the dirt a cleaner has to handle (case, spaces, duplicates, typos,
    disposable and role accounts, internationalised addresses, broken syntax, special DNS cases).
``list.parquet``
    The same rows, every column a string.
``bounces.csv``
    The list's bounce history as a sending service exports it: hard bounces (one cleared by a
    later delivery), repeated and single soft bounces, and a closed ISP outside the list whose
    addresses all hard-bounce. Dated 2026; the tests judge it at 2026-11-20.
``bounces.mbox``
    Delivery status notifications (RFC 3464) as they reach the sender's bounce mailbox:
    failed, delayed, delivered and relayed recipients, and one auto-reply that is no bounce.
"""

from __future__ import annotations

import csv
import datetime as dt
import ipaddress
import json
import random
import re
import textwrap
from dataclasses import dataclass
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import idna
import polars as pl
from disposable_email_domains import blocklist

from pipeline.sandbox.world import world_from_dict

HERE = Path(__file__).resolve().parent
SEED = 20240611
COLUMNS = ("id", "first_name", "last_name", "Email Address", "company", "signup_date")
GOOD_ROWS = 212

Row = dict[str, str]

# Real providers with MX hosts as they are published (preferences included).
PROVIDERS: dict[str, list[tuple[int, str]]] = {
    "gmail.com": [
        (5, "gmail-smtp-in.l.google.com"),
        (10, "alt1.gmail-smtp-in.l.google.com"),
        (20, "alt2.gmail-smtp-in.l.google.com"),
        (30, "alt3.gmail-smtp-in.l.google.com"),
        (40, "alt4.gmail-smtp-in.l.google.com"),
    ],
    "googlemail.com": [
        (5, "gmail-smtp-in.l.google.com"),
        (10, "alt1.gmail-smtp-in.l.google.com"),
    ],
    "yahoo.com": [
        (1, "mta5.am0.yahoodns.net"),
        (1, "mta6.am0.yahoodns.net"),
        (1, "mta7.am0.yahoodns.net"),
    ],
    "outlook.com": [(5, "outlook-com.olc.protection.outlook.com")],
    "hotmail.com": [(2, "hotmail-com.olc.protection.outlook.com")],
    "live.com": [(2, "live-com.olc.protection.outlook.com")],
    "icloud.com": [(10, "mx01.mail.icloud.com"), (10, "mx02.mail.icloud.com")],
    "aol.com": [(1, "mx-aol.mail.gm0.yahoodns.net")],
    "gmx.de": [(10, "mx00.emig.gmx.net"), (10, "mx01.emig.gmx.net")],
    "web.de": [(100, "mx-ha03.web.de"), (100, "mx-ha02.web.de")],
    "orange.fr": [(10, "smtp-in.orange.fr")],
    "free.fr": [(10, "mx1.free.fr"), (20, "mx2.free.fr")],
    "yandex.ru": [(10, "mx.yandex.ru")],
    "protonmail.com": [(5, "mail.protonmail.ch"), (10, "mailsec.protonmail.ch")],
    "comcast.net": [(5, "mx1a1.comcast.net"), (5, "mx2c1.comcast.net")],
    "fastmail.com": [
        (10, "in1-smtp.messagingengine.com"),
        (20, "in2-smtp.messagingengine.com"),
    ],
}
# How often each provider appears among the good rows (roughly their real-world share).
PROVIDER_WEIGHTS: dict[str, int] = {
    "gmail.com": 30,
    "yahoo.com": 10,
    "outlook.com": 8,
    "hotmail.com": 8,
    "icloud.com": 6,
    "live.com": 3,
    "aol.com": 3,
    "comcast.net": 3,
    "gmx.de": 4,
    "web.de": 4,
    "orange.fr": 3,
    "free.fr": 2,
    "yandex.ru": 3,
    "protonmail.com": 3,
    "googlemail.com": 2,
    "fastmail.com": 2,
}

# Fictional companies, hosted the ways companies really are (Google Workspace, Microsoft 365,
# own servers).
COMPANIES: dict[str, tuple[str, list[tuple[int, str]]]] = {
    "acme-widgets.com": (
        "Acme Widgets",
        [(1, "aspmx.l.google.com"), (5, "alt1.aspmx.l.google.com"), (5, "alt2.aspmx.l.google.com")],
    ),
    "northwind-traders.com": (
        "Northwind Traders",
        [(0, "northwindtraders-com.mail.protection.outlook.com")],
    ),
    "contoso-bank.co.uk": (
        "Contoso Bank",
        [(10, "mx1.contoso-bank.co.uk"), (20, "mx2.contoso-bank.co.uk")],
    ),
    "globex-corp.com": ("Globex Corporation", [(10, "mail.globex-corp.com")]),
    "initech.io": ("Initech", [(10, "mx.initech.io")]),
    "umbrella-labs.org": ("Umbrella Labs", [(1, "smtp.google.com")]),
}

# Throwaway-mail services; each must be on the disposable_email_domains blocklist.
DISPOSABLE: dict[str, list[tuple[int, str]]] = {
    "mailinator.com": [(1, "mail.mailinator.com"), (1, "mail2.mailinator.com")],
    "guerrillamail.com": [(10, "mx.guerrillamail.com")],
    "sharklasers.com": [(10, "mx.guerrillamail.com")],
    "10minutemail.com": [(10, "mx.10minutemail.com")],
    "yopmail.com": [(1, "mx.yopmail.com")],
    "trashmail.com": [(10, "mx.trashmail.com")],
}

# Internationalised domains (RFC 5890): written in Unicode in the list, served as A-labels.
IDN_DOMAINS: dict[str, list[tuple[int, str]]] = {
    "bücher-shop.de": [(10, "mx.buecher-shop.de")],
    "café-paris.fr": [(10, "mx.cafe-paris.fr")],
}

# Typo-squatters of big providers really do publish MX records.
TYPO_SQUATTERS: dict[str, list[tuple[int, str]]] = {
    "gmial.com": [(10, "mx.gmial.com")],
    "hotmial.com": [(10, "mail.hotmial.com")],
}
# Typos that do not exist (NXDOMAIN), including a mistyped TLD.
TYPOS_ABSENT = ("gmai.com", "yahooo.com", "outlok.com", "gmail.con")

# One domain per DNS behaviour a verifier must handle.
SPECIAL_ZONES: dict[str, dict[str, object]] = {
    # RFC 7505 null MX: the domain accepts no mail.
    "parkedsite.net": {"mx": [[0, "."]]},
    # No MX but an A record: RFC 5321 §5.1 implicit MX. An implicit MX counts only when its
    # address is globally routable (the documentation ranges 192.0.2.0/24 and 2001:db8::/32 are
    # not), so these are global addresses; the sandbox never connects outside loopback.
    "smallbiz-bakery.com": {"a": ["203.0.114.10"]},
    # No MX, only AAAA: the implicit MX rule covers AAAA too.
    "v6only-hosting.net": {"aaaa": ["2001:67c:2e8::25"]},
    # The name exists but has no records at all: NODATA for MX, A and AAAA.
    "empty-records.com": {},
    "broken-dns-co.com": {"rcode": "SERVFAIL"},
    "lame-delegation.net": {"rcode": "REFUSED"},
    # Only one: every query for it costs the demo a full resolver timeout.
    "slow-dns-co.com": {"timeout": True},
    # Answers, slowly; exercises concurrency without timing out.
    "faraway-isp.com.au": {"mx": [[10, "mx.faraway-isp.com.au"]], "latency_ms": 150},
}

# Sandbox mail servers. Each MX host gets the next loopback address from here; all of 127/8 is
# the host itself (RFC 1122 §3.2.1.3), so nothing leaves the machine.
FIRST_SMTP_ADDRESS = ipaddress.IPv4Address("127.0.0.2")
# MX hosts with an address but no server: connecting is refused. faraway-isp.com.au has no other
# MX; gmx.de's other MX (same preference) answers, so a prober must try the next one.
SMTP_DOWN = frozenset({"mx.faraway-isp.com.au", "mx00.emig.gmx.net"})
# Domains whose servers accept every local part: the big accept-all provider (Yahoo, and AOL on
# the same servers), typo squatters harvesting mail, a company with a catch-all, and the
# throwaway services.
CATCH_ALL = frozenset({"yahoo.com", "aol.com", "globex-corp.com", *TYPO_SQUATTERS, *DISPOSABLE})
# How particular MX hosts misbehave, in the world's ``smtp`` keys.
SMTP_BEHAVIOUR: dict[str, dict[str, object]] = {
    # Greylisting, briefly enough for a demo to see the retry succeed.
    "mx.initech.io": {"greylist_seconds": 2},
    # At most three RCPTs per session: a prober must spread a domain over sessions.
    "mx1.contoso-bank.co.uk": {"max_recipients": 3},
    "mx2.contoso-bank.co.uk": {"max_recipients": 3},
    # One session at a time; a second gets a 421 banner, as large providers do.
    "mx-ha02.web.de": {"throttle_sessions": 1},
    "mx-ha03.web.de": {"throttle_sessions": 1},
    # Our address is "on a blocklist": every RCPT gets 550 5.7.1.
    "mx1a1.comcast.net": {"block": True},
    "mx2c1.comcast.net": {"block": True},
    # Slow to greet and to answer, but well within a prober's timeout.
    "smtp-in.orange.fr": {"delay_ms": 150, "banner_delay_ms": 750},
}
# Addresses of the list whose mailbox is not simply there; every other well-formed address on a
# served domain exists.
MAILBOX_STATES: dict[str, str] = {
    "dlopez@gmail.com": "unknown",
    "noreply@contoso-bank.co.uk": "unknown",
    "olga.patel@hotmail.com": "full",
    "linda.sato1966@icloud.com": "disabled",
}
# RFC 5322 §3.2.3 atext, plus any non-ASCII character (RFC 6532 §3.2): dot-atom local parts only.
_ATEXT = r"(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]|[^\x00-\x7f])+"
DOT_ATOM = re.compile(rf"{_ATEXT}(?:\.{_ATEXT})*")
# RFC 5321 §4.5.3.1.1.
MAX_LOCAL_PART_OCTETS = 64

FIRST_NAMES = [
    "James",
    "Mary",
    "John",
    "Patricia",
    "Robert",
    "Jennifer",
    "Michael",
    "Linda",
    "William",
    "Elizabeth",
    "David",
    "Barbara",
    "Richard",
    "Susan",
    "Joseph",
    "Jessica",
    "Thomas",
    "Sarah",
    "Charles",
    "Karen",
    "Daniel",
    "Nancy",
    "Matthew",
    "Lisa",
    "Anthony",
    "Betty",
    "Mark",
    "Margaret",
    "Paul",
    "Sandra",
    "Steven",
    "Ashley",
    "Andrew",
    "Emily",
    "Kevin",
    "Donna",
    "Brian",
    "Michelle",
    "George",
    "Carol",
    "Lukas",
    "Anna",
    "Jonas",
    "Lea",
    "Hugo",
    "Camille",
    "Louis",
    "Chloe",
    "Ivan",
    "Olga",
    "Sofia",
    "Mateo",
    "Yuki",
    "Priya",
    "Arjun",
    "Fatima",
    "Omar",
    "Chen",
    "Mei",
    "Kwame",
    "Amara",
    "Liam",
    "Noah",
    "Emma",
    "Olivia",
]
LAST_NAMES = [
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Garcia",
    "Miller",
    "Davis",
    "Rodriguez",
    "Martinez",
    "Hernandez",
    "Lopez",
    "Wilson",
    "Anderson",
    "Thomas",
    "Taylor",
    "Moore",
    "Jackson",
    "Martin",
    "Lee",
    "Thompson",
    "White",
    "Harris",
    "Clark",
    "Lewis",
    "Robinson",
    "Walker",
    "Young",
    "Allen",
    "King",
    "Wright",
    "Scott",
    "Hill",
    "Green",
    "Adams",
    "Baker",
    "Nelson",
    "Carter",
    "Mitchell",
    "Muller",
    "Schmidt",
    "Schneider",
    "Fischer",
    "Dubois",
    "Moreau",
    "Laurent",
    "Ivanov",
    "Petrov",
    "Rossi",
    "Bianchi",
    "Tanaka",
    "Sato",
    "Patel",
    "Sharma",
    "Khan",
    "Wang",
    "Zhang",
    "Mensah",
    "Okafor",
    "Silva",
    "Santos",
]


def main() -> None:
    rng = random.Random(SEED)
    rows = build_rows(rng)
    world = build_world(rows)
    # Fail here rather than in the tests if a zone or a mail host is invalid.
    parsed = world_from_dict(world)
    (HERE / "world.json").write_text(world_json(world), encoding="utf-8")
    write_csv(HERE / "list.csv", rows)
    frame = pl.DataFrame({name: [row[name] for row in rows] for name in COLUMNS})
    frame.write_parquet(HERE / "list.parquet")
    write_bounces(rows)
    print(
        f"wrote {len(parsed.zones)} zones, {len(parsed.smtp)} mail servers, "
        f"{len(rows)} rows to {HERE}"
    )


def build_world(rows: list[Row]) -> dict[str, Any]:
    for domain in DISPOSABLE:
        if domain not in blocklist:
            raise SystemExit(f"{domain} is not on the disposable_email_domains blocklist")
    zones: dict[str, dict[str, Any]] = {}
    for table in (PROVIDERS, DISPOSABLE, TYPO_SQUATTERS):
        for domain, mx in table.items():
            zones[domain] = {"mx": [list(entry) for entry in mx]}
    for domain, (_, mx) in COMPANIES.items():
        zones[domain] = {"mx": [list(entry) for entry in mx]}
    for domain, mx in IDN_DOMAINS.items():
        zones[a_label(domain)] = {"mx": [list(entry) for entry in mx]}
    zones.update(SPECIAL_ZONES)
    overlap = set(TYPOS_ABSENT) & set(zones)
    if overlap:
        raise SystemExit(f"typo domains meant to be NXDOMAIN are zones: {sorted(overlap)}")
    served = served_domains(zones)
    addresses = mx_addresses(served)
    clash = set(addresses) & set(zones)
    if clash:
        raise SystemExit(f"MX host names are also mail domains: {sorted(clash)}")
    zones.update({host: {"a": [address]} for host, address in addresses.items()})
    smtp = build_smtp(served, addresses, mailboxes_by_domain(rows))
    return {"latency_ms": 0, "zones": dict(sorted(zones.items())), "smtp": smtp}


def served_domains(zones: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """MX host name -> the mail domains it receives for, from the zones' MX records."""
    served: dict[str, list[str]] = {}
    for domain, zone in zones.items():
        for _, exchange in zone.get("mx", []):
            if exchange != ".":  # a null MX (RFC 7505) names no host
                served.setdefault(exchange, []).append(domain)
    return served


def mx_addresses(served: dict[str, list[str]]) -> dict[str, str]:
    """MX host name -> its own loopback address, in name order so the file is stable."""
    return {host: str(FIRST_SMTP_ADDRESS + i) for i, host in enumerate(sorted(served))}


def build_smtp(
    served: dict[str, list[str]],
    addresses: dict[str, str],
    mailboxes: dict[str, dict[str, set[str]]],
) -> dict[str, Any]:
    unknown = (set(SMTP_BEHAVIOUR) | SMTP_DOWN) - set(served)
    if unknown:
        raise SystemExit(f"SMTP_BEHAVIOUR / SMTP_DOWN name unknown MX hosts: {sorted(unknown)}")
    smtp: dict[str, Any] = {}
    for host in sorted(served, key=lambda name: ipaddress.IPv4Address(addresses[name])):
        if host in SMTP_DOWN:
            continue
        domains = {
            domain: domain_config(domain, mailboxes.get(domain, {})) for domain in served[host]
        }
        smtp[addresses[host]] = {
            "name": host,
            **SMTP_BEHAVIOUR.get(host, {}),
            "domains": dict(sorted(domains.items())),
        }
    return smtp


def domain_config(domain: str, states: dict[str, set[str]]) -> dict[str, Any]:
    if domain in CATCH_ALL:
        return {"catch_all": True}
    # RFC 5321 §4.5.1: every mail domain must have a postmaster.
    config: dict[str, Any] = {"mailboxes": sorted(states.get("mailbox", set()) | {"postmaster"})}
    for state in ("full", "disabled"):
        if states.get(state):
            config[state] = sorted(states[state])
    return config


def mailboxes_by_domain(rows: list[Row]) -> dict[str, dict[str, set[str]]]:
    """Domain (A-label) -> mailbox state -> local parts, for every well-formed address listed."""
    found: dict[str, dict[str, set[str]]] = {}
    for row in rows:
        email = row["Email Address"].strip()
        local, _, domain = email.rpartition("@")
        key = mail_domain(domain)
        if key is None or not is_dot_atom(local):
            continue
        state = MAILBOX_STATES.get(email, "mailbox")
        if state != "unknown":
            found.setdefault(key, {}).setdefault(state, set()).add(local.casefold())
    missing = set(MAILBOX_STATES) - {row["Email Address"] for row in rows}
    if missing:
        raise SystemExit(f"MAILBOX_STATES names addresses not in the list: {sorted(missing)}")
    return found


def mail_domain(domain: str) -> str | None:
    """``domain`` as the world's keys spell it, or None when it is no valid domain name."""
    try:
        return a_label(domain)
    except idna.IDNAError:
        return None


def is_dot_atom(local: str) -> bool:
    """Whether ``local`` is an unquoted local part a mail server could hold (no comments etc.)."""
    fits = len(local.encode("utf-8")) <= MAX_LOCAL_PART_OCTETS
    return fits and DOT_ATOM.fullmatch(local) is not None


def world_json(world: dict[str, Any]) -> str:
    """The world as JSON, one zone and one served domain per line, so diffs stay readable."""
    zones = [
        f"  {json.dumps(name)}: {json.dumps(zone, ensure_ascii=False)}"
        for name, zone in world["zones"].items()
    ]
    hosts = [smtp_host_json(address, host) for address, host in world["smtp"].items()]
    zone_lines = ",\n".join(zones)
    host_lines = ",\n".join(hosts)
    return (
        f'{{"latency_ms": {json.dumps(world["latency_ms"])},\n'
        f' "zones": {{\n{zone_lines}\n }},\n'
        f' "smtp": {{\n{host_lines}\n }}}}\n'
    )


def smtp_host_json(address: str, host: dict[str, Any]) -> str:
    settings = {key: value for key, value in host.items() if key != "domains"}
    head = json.dumps(settings, ensure_ascii=False)[:-1]
    domains = [
        f"    {json.dumps(name)}: {json.dumps(config, ensure_ascii=False)}"
        for name, config in host["domains"].items()
    ]
    body = ",\n".join(domains)
    return f'  {json.dumps(address)}: {head}, "domains": {{\n{body}}}}}'


def a_label(domain: str) -> str:
    """The ASCII form a resolver queries (RFC 5891), e.g. ``xn--bcher-shop-9db.de``."""
    return idna.encode(domain, uts46=True).decode("ascii")


def build_rows(rng: random.Random) -> list[Row]:
    good = [good_row(rng) for _ in range(GOOD_ROWS)]
    dirty = dirty_rows(rng, good)
    rows = good + dirty
    rng.shuffle(rows)
    for number, row in enumerate(rows, start=1):
        row["id"] = str(number)
    return rows


def person(rng: random.Random) -> tuple[str, str]:
    return rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)


def local_part(rng: random.Random, first: str, last: str) -> str:
    first, last = first.lower(), last.lower()
    style = rng.randrange(7)
    if style == 0:
        return f"{first}.{last}"
    if style == 1:
        return f"{first}{last}"
    if style == 2:
        return f"{first[0]}{last}"
    if style == 3:
        return f"{first}_{last}{rng.randrange(1, 99)}"
    if style == 4:
        return f"{first}.{last}{rng.randrange(1960, 2005)}"
    if style == 5:
        # RFC 5233 sub-addressing: valid and deliverable.
        return f"{first}.{last}+{rng.choice(['news', 'shop', 'lists'])}"
    return f"{last}.{first[0]}"


def signup_date(rng: random.Random) -> str:
    start = dt.date(2019, 1, 1)
    return (start + dt.timedelta(days=rng.randrange(6 * 365))).isoformat()


def make_row(rng: random.Random, first: str, last: str, email: str, company: str = "") -> Row:
    return {
        "id": "",
        "first_name": first,
        "last_name": last,
        "Email Address": email,
        "company": company,
        "signup_date": signup_date(rng),
    }


def good_row(rng: random.Random) -> Row:
    first, last = person(rng)
    if rng.random() < 0.2:
        domain = rng.choice(sorted(COMPANIES))
        company = COMPANIES[domain][0]
    else:
        domain = rng.choices(list(PROVIDER_WEIGHTS), weights=list(PROVIDER_WEIGHTS.values()))[0]
        company = ""
    return make_row(rng, first, last, f"{local_part(rng, first, last)}@{domain}", company)


def named(rng: random.Random, emails: list[str], company: str = "") -> list[Row]:
    rows = []
    for email in emails:
        first, last = person(rng)
        rows.append(make_row(rng, first, last, email, company))
    return rows


def dirty_rows(rng: random.Random, good: list[Row]) -> list[Row]:
    rows: list[Row] = []
    # Duplicates: exact copies and case variants of earlier rows.
    for original in rng.sample(good, 20):
        copy = dict(original)
        if len(rows) % 2:
            local, _, domain = copy["Email Address"].partition("@")
            copy["Email Address"] = f"{local.title()}@{domain.upper()}"
        rows.append(copy)
    # Case and whitespace: valid once normalised.
    rows += named(
        rng,
        [
            "John.Doe@GMAIL.COM",
            "MARY.SMITH@YAHOO.COM",
            "Peter.Parker@Outlook.Com",
            "ANNA.SCHMIDT@GMX.DE",
            "LeeWang@ICloud.com",
            "  kevin.brown@hotmail.com",
            "susan.lee@aol.com  ",
            "\tomar.khan@protonmail.com",
            " laura.rossi@web.de ",
        ],
    )
    # Typos of big providers: squatters with MX, non-existent domains, a wrong TLD.
    rows += named(
        rng,
        [
            "mike.jones@gmial.com",
            "sarah.taylor@hotmial.com",
            "paul.green@gmai.com",
            "nancy.white@yahooo.com",
            "chris.hill@outlok.com",
            "emma.lewis@gmail.con",
        ],
    )
    # Disposable mailboxes.
    locals_ = ["tester1", "freebie", "signup4promo", "qwerty", "temp.user", "spamme"]
    rows += named(
        rng, [f"{local}@{domain}" for local, domain in zip(locals_, DISPOSABLE, strict=True)]
    )
    # Role accounts (RFC 2142 mailbox names and their relatives).
    rows += named(
        rng,
        [
            "info@acme-widgets.com",
            "sales@northwind-traders.com",
            "admin@globex-corp.com",
            "support@initech.io",
            "noreply@contoso-bank.co.uk",
            "postmaster@umbrella-labs.org",
        ],
    )
    # Internationalised domains in Unicode form, and SMTPUTF8 local parts (RFC 6531).
    rows += named(
        rng,
        [
            "kontakt@bücher-shop.de",
            "leser.max@BÜCHER-SHOP.DE",
            "bonjour@café-paris.fr",
            "josé@web.de",
            "müller.hans@gmx.de",
            "иван.петров@yandex.ru",
        ],
    )
    # Broken or special syntax.
    rows += named(
        rng,
        [
            "no-at-sign.com",
            "a@@b.com",
            "john..doe@gmail.com",
            ".leading.dot@gmail.com",
            "@gmail.com",
            "bob@",
            "x@localhost",
            "user@example.com",
            "tester@mail.test",
            "admin@printer.local",
            "l" * 70 + "@gmail.com",
            '"john doe"@gmail.com',
            "user@[192.0.2.1]",
            "john(comment)@gmail.com",
            "ann@gmail.com.",
            "two words@yahoo.com",
            "mary@yahoo,com",
            "",
            "",
            " ",
            "",
        ],
    )
    # One domain per special DNS behaviour.
    rows += named(
        rng,
        [
            "owner@parkedsite.net",
            "orders@smallbiz-bakery.com",
            "jane@v6only-hosting.net",
            "tom@empty-records.com",
            "alice@broken-dns-co.com",
            "bob.martin@lame-delegation.net",
            "carol@slow-dns-co.com",
            "dave.wilson@faraway-isp.com.au",
        ],
    )
    # CSV edge cases in the other columns: commas, quotes and a newline.
    rows += named(rng, ["r.smith@acme-widgets.com"], "Smith, Jones & Co")
    rows += named(rng, ["quotes@northwind-traders.com"], 'The "Best" Traders')
    rows += named(rng, ["multi.line@contoso-bank.co.uk"], "Contoso Bank\nTreasury Dept.")
    return rows


def write_csv(path: Path, rows: list[Row]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


# --------------------------------------------------------------------------- bounce reports

# The sending side of the bounce samples: documentation names (RFC 2606), not a real sender.
SENDER = "news@mailer.example.net"
SENDER_MTA = "mta1.mailer.example.net"
# A made-up ISP that closed: every address of it hard-bounces. Not in the list, so the
# domain-rate rule (bounces.domain_hard_rate) can be tried on new addresses without changing
# the demo's verdicts.
CLOSED_ISP = "oldtown-isp.net"
CLOSED_ISP_HARD = 12
CLOSED_ISP_SOFT = 2
BOUNCE_COLUMNS = ("recipient", "bounce_type", "smtp_status", "bounced_at", "diagnostic")

# bounces.csv as a sending service exports it: (recipient, type, status, ISO 8601 time,
# diagnostic). Meant to be judged at 2026-11-20 with the default 90-day soft window.
BOUNCE_ROWS: list[tuple[str, str, str, str, str]] = [
    # Hard bounces: known bounces.
    (
        "dlopez@gmail.com",
        "hard",
        "5.1.1",
        "2026-08-14T09:12:44Z",
        "550-5.1.1 The email account that you tried to reach does not exist.",
    ),
    (
        "noreply@contoso-bank.co.uk",
        "hard",
        "5.1.1",
        "2026-09-02T16:40:03Z",
        "550 5.1.1 <noreply@contoso-bank.co.uk>: Recipient address rejected: "
        "User unknown in local recipient table",
    ),
    (
        "linda.sato1966@icloud.com",
        "hard",
        "5.2.1",
        "2026-10-05T07:21:19Z",
        "550 5.2.1 <linda.sato1966@icloud.com>: user account is disabled",
    ),
    (
        "tom@empty-records.com",
        "permanent",
        "",
        "2026-09-18T13:05:51Z",
        "Host or domain name not found. Name service error for name=empty-records.com "
        "type=AAAA: Host found but no data record of requested type",
    ),
    # A hard bounce that a later delivery clears.
    (
        "lmartinez@outlook.com",
        "hard",
        "5.1.10",
        "2026-07-21T11:02:37Z",
        "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup",
    ),
    (
        "lmartinez@outlook.com",
        "delivered",
        "2.6.0",
        "2026-10-30T15:44:09Z",
        "250 2.6.0 Queued mail for delivery",
    ),
    # Repeated soft bounces: suspected.
    *[
        (
            "olga.patel@hotmail.com",
            "soft",
            "4.2.2",
            f"2026-{day}T08:0{n}:12Z",
            "452 4.2.2 The email account that you tried to reach is over quota",
        )
        for n, day in enumerate(("09-21", "10-05", "10-19", "11-02"))
    ],
    *[
        (
            "priya.laurent@orange.fr",
            "soft",
            "4.2.1",
            f"2026-{day}T17:3{n}:40Z",
            "450 4.2.1 <priya.laurent@orange.fr>: mailbox temporarily unavailable",
        )
        for n, day in enumerate(("10-02", "10-16", "11-09"))
    ],
    # Three soft bounces, but the first is older than the 90-day window: not suspected.
    *[
        (
            "ivanov.m@gmail.com",
            "soft",
            "4.2.2",
            f"2026-{day}T06:4{n}:03Z",
            "452-4.2.2 The recipient's inbox is out of storage space.",
        )
        for n, day in enumerate(("05-04", "10-10", "11-12"))
    ],
    # Single soft bounces: nothing to flag.
    (
        "yuki.harris@live.com",
        "soft",
        "4.4.1",
        "2026-10-11T19:30:00Z",
        "451 4.4.1 No answer from host",
    ),
    (
        "anthonywalker@gmail.com",
        "soft",
        "4.2.1",
        "2026-11-03T10:15:27Z",
        "450-4.2.1 The user you are trying to contact is receiving mail at a rate that "
        "prevents additional messages from being delivered.",
    ),
]


def closed_isp_rows() -> list[tuple[str, str, str, str, str]]:
    """Hard bounces for CLOSED_ISP_HARD addresses of CLOSED_ISP, soft ones for a few more."""
    names = [
        f"{first.lower()}.{last.lower()}@{CLOSED_ISP}"
        for first, last in zip(FIRST_NAMES, LAST_NAMES[20:], strict=False)
    ]
    hard = [
        (
            email,
            "hard",
            "5.1.1",
            f"2026-10-27T03:{n:02d}:16Z",
            f"550 5.1.1 <{email}>: Recipient address rejected: mail service discontinued",
        )
        for n, email in enumerate(names[:CLOSED_ISP_HARD])
    ]
    soft = [
        (email, "soft", "4.4.1", f"2026-11-05T04:{n:02d}:51Z", "451 4.4.1 No answer from host")
        for n, email in enumerate(names[CLOSED_ISP_HARD : CLOSED_ISP_HARD + CLOSED_ISP_SOFT])
    ]
    return hard + soft


@dataclass(frozen=True)
class Dsn:
    """One delivery status notification (RFC 3464) of bounces.mbox."""

    at: dt.datetime
    queue_id: str
    author: str  # the From: of the report
    subject: str
    notice: str  # the human-readable first part
    per_message: list[tuple[str, str]]
    recipients: list[list[tuple[str, str]]]
    original_subject: str


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


POSTFIX = f"MAILER-DAEMON@{SENDER_MTA} (Mail Delivery System)"
POSTFIX_FAILED = (
    f"This is the mail system at host {SENDER_MTA}.\n\n"
    "I'm sorry to have to inform you that your message could not\n"
    "be delivered to one or more recipients. It's attached below.\n\n"
    "For further assistance, please send mail to postmaster.\n\n"
    "If you do so, please include this problem report. You can\n"
    "delete your own text from the attached returned message.\n\n"
    "                   The mail system\n"
)

DSNS: list[Dsn] = [
    Dsn(
        at=utc("2026-10-13T14:02:11"),
        queue_id="4Bx7Kq1Z3pz9sT",
        author=POSTFIX,
        subject="Undelivered Mail Returned to Sender",
        notice=POSTFIX_FAILED
        + "\n<jonas.jones2004@initech.io>: host mx.initech.io[192.0.2.25] said: 550\n"
        "    5.1.1 <jonas.jones2004@initech.io>: Recipient address rejected: User\n"
        "    unknown in virtual mailbox table (in reply to RCPT TO command)\n",
        per_message=[
            ("Reporting-MTA", f"dns; {SENDER_MTA}"),
            ("X-Postfix-Queue-ID", "4Bx7Kq1Z3pz9sT"),
            ("X-Postfix-Sender", f"rfc822; {SENDER}"),
            ("Arrival-Date", "Tue, 13 Oct 2026 14:02:09 +0000 (UTC)"),
        ],
        recipients=[
            [
                ("Final-Recipient", "rfc822; jonas.jones2004@initech.io"),
                ("Original-Recipient", "rfc822;jonas.jones2004@initech.io"),
                ("Action", "failed"),
                ("Status", "5.1.1"),
                ("Remote-MTA", "dns; mx.initech.io"),
                (
                    "Diagnostic-Code",
                    "smtp; 550 5.1.1 <jonas.jones2004@initech.io>: Recipient address "
                    "rejected: User unknown in virtual mailbox table",
                ),
            ]
        ],
        original_subject="Your October update",
    ),
    Dsn(
        at=utc("2026-10-28T09:41:17"),
        queue_id="AM6PR01MB5123",
        author="postmaster@northwind-traders.com (Microsoft Outlook)",
        subject="Undeliverable: Your October update",
        notice="Your message to lmuller@northwind-traders.com and "
        "sarahfischer@northwind-traders.com couldn't be delivered.\n\n"
        "lmuller and sarahfischer weren't found at northwind-traders.com.\n",
        per_message=[("Reporting-MTA", "dns;AM6PR01MB5123.eurprd01.prod.exchangelabs.com")],
        recipients=[
            [
                ("Final-Recipient", f"rfc822;{local}@northwind-traders.com"),
                ("Action", "failed"),
                ("Status", "5.1.10"),
                (
                    "Diagnostic-Code",
                    "smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient "
                    f"{local}@northwind-traders.com not found by SMTP address lookup",
                ),
            ]
            for local in ("lmuller", "sarahfischer")
        ],
        original_subject="Your October update",
    ),
    Dsn(
        at=utc("2026-11-06T12:00:43"),
        queue_id="4BxQ1d2Hm7z9sV",
        author=POSTFIX,
        subject="Successful Mail Delivery Report",
        notice=f"This is the mail system at host {SENDER_MTA}.\n\n"
        "Your message was successfully delivered to the destination(s)\n"
        "listed below. If the message was delivered to mailbox you will\n"
        "receive no further notifications. Otherwise you may still receive\n"
        "notifications of mail delivery errors from other systems.\n",
        per_message=[
            ("Reporting-MTA", f"dns; {SENDER_MTA}"),
            ("X-Postfix-Queue-ID", "4BxQ1d2Hm7z9sV"),
            ("X-Postfix-Sender", f"rfc822; {SENDER}"),
            ("Arrival-Date", "Fri, 6 Nov 2026 12:00:38 +0000 (UTC)"),
        ],
        recipients=[
            [
                ("Final-Recipient", "rfc822; ashleycarter@fastmail.com"),
                ("Action", "delivered"),
                ("Status", "2.0.0"),
                ("Remote-MTA", "dns; in1-smtp.messagingengine.com"),
                ("Diagnostic-Code", "smtp; 250 2.0.0 Ok: queued as 3F1A2B4C5D"),
            ],
            [
                ("Final-Recipient", "rfc822; yuki.harris@live.com"),
                ("Action", "relayed"),
                ("Status", "2.0.0"),
                ("Remote-MTA", "dns; live-com.olc.protection.outlook.com"),
                ("Diagnostic-Code", "smtp; 250 2.6.0 Queued mail for delivery"),
            ],
        ],
        original_subject="Your November update",
    ),
    Dsn(
        at=utc("2026-11-10T08:15:02"),
        queue_id="4BxT8w0Lq2z9sX",
        author=POSTFIX,
        subject="Undelivered Mail Returned to Sender",
        notice=POSTFIX_FAILED
        + "\n<allen.k@orange.fr>: connect to smtp-in.orange.fr[192.0.2.80]:25:\n"
        "    Connection timed out\n",
        per_message=[
            ("Reporting-MTA", f"dns; {SENDER_MTA}"),
            ("X-Postfix-Queue-ID", "4BxT8w0Lq2z9sX"),
            ("X-Postfix-Sender", f"rfc822; {SENDER}"),
            ("Arrival-Date", "Thu, 5 Nov 2026 08:14:55 +0000 (UTC)"),
        ],
        recipients=[
            [
                ("Final-Recipient", "rfc822; allen.k@orange.fr"),
                ("Original-Recipient", "rfc822;allen.k@orange.fr"),
                ("Action", "failed"),
                ("Status", "4.4.1"),
                (
                    "Diagnostic-Code",
                    "X-Postfix; connect to smtp-in.orange.fr[192.0.2.80]:25: Connection timed out",
                ),
            ]
        ],
        original_subject="Your November update",
    ),
    Dsn(
        at=utc("2026-11-14T06:30:00"),
        queue_id="4AEUMk0Fmv012345",
        author="Mail Delivery Subsystem <MAILER-DAEMON@relay2.mailer.example.net>",
        subject="Warning: could not send message for past 4 hours",
        notice="    **********************************************\n"
        "    **      THIS IS A WARNING MESSAGE ONLY      **\n"
        "    **  YOU DO NOT NEED TO RESEND YOUR MESSAGE  **\n"
        "    **********************************************\n\n"
        "The original message was received at Sat, 14 Nov 2026 02:29:51 GMT\n"
        "from mta1.mailer.example.net [192.0.2.1]\n\n"
        "   ----- Transcript of session follows -----\n"
        "<carol@slow-dns-co.com>... Deferred: Connection timed out with slow-dns-co.com.\n"
        "Warning: message still undelivered after 4 hours\n"
        "Will keep trying until message is 5 days old\n",
        per_message=[
            ("Reporting-MTA", "dns; relay2.mailer.example.net"),
            ("Received-From-MTA", f"DNS; {SENDER_MTA}"),
            ("Arrival-Date", "Sat, 14 Nov 2026 02:29:51 GMT"),
        ],
        recipients=[
            [
                ("Final-Recipient", "RFC822; carol@slow-dns-co.com"),
                ("Action", "delayed"),
                ("Status", "4.4.3"),
                ("Diagnostic-Code", "SMTP; 451 4.4.3 Host slow-dns-co.com not found: try again"),
                ("Last-Attempt-Date", "Sat, 14 Nov 2026 06:29:58 GMT"),
                ("Will-Retry-Until", "Thu, 19 Nov 2026 02:29:51 GMT"),
            ]
        ],
        original_subject="Your November update",
    ),
]

# Not a bounce: an auto-reply that lands in the same mailbox and must be told apart.
AUTO_REPLY = """Return-Path: <margaret.allen@web.de>
Date: Wed, 18 Nov 2026 07:12:40 +0100
From: Margaret Allen <margaret.allen@web.de>
To: news@mailer.example.net
Subject: Abwesenheitsnotiz: Your November update
Auto-Submitted: auto-replied
Message-ID: <trinity-5a1f2c3d-0001@3c-app-webde-bs12>
MIME-Version: 1.0
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: 7bit

Ich bin bis zum 30. November nicht im Buero und lese meine E-Mails nur
unregelmaessig.

Margaret Allen
"""


def fold(name: str, value: str) -> str:
    """One header field, folded before 78 characters as RFC 5322 §2.1.1 asks."""
    return "\n".join(
        textwrap.wrap(
            f"{name}: {value}",
            width=76,
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


def dsn_text(report: Dsn) -> str:
    """The report as an RFC 3464 multipart/report message."""
    boundary = f"{report.queue_id}.{int(report.at.timestamp())}/{SENDER_MTA}"
    date = format_datetime(report.at)
    first = report.recipients[0][0][1].partition(";")[2].strip()
    blocks = [report.per_message, *report.recipients]
    status = "\n\n".join("\n".join(fold(n, v) for n, v in block) for block in blocks)
    # Our own MTA wrote its reports; the others reached it over SMTP.
    reporter = report.per_message[0][1].partition(";")[2].strip()
    hop = "" if reporter == SENDER_MTA else f"from {reporter} "
    return (
        "Return-Path: <>\n"
        f"Received: {hop}by {SENDER_MTA} (Postfix)\n\tid {report.queue_id}; {date}\n"
        f"Date: {date}\n"
        f"From: {report.author}\n"
        f"Subject: {report.subject}\n"
        f"To: {SENDER}\n"
        "Auto-Submitted: auto-replied\n"
        "MIME-Version: 1.0\n"
        "Content-Type: multipart/report; report-type=delivery-status;\n"
        f'\tboundary="{boundary}"\n'
        "Content-Transfer-Encoding: 7bit\n"
        f"Message-Id: <{report.at:%Y%m%d%H%M%S}.{report.queue_id}@{SENDER_MTA}>\n"
        "\n"
        "This is a MIME-encapsulated message.\n\n"
        f"--{boundary}\n"
        "Content-Description: Notification\n"
        "Content-Type: text/plain; charset=us-ascii\n\n"
        f"{report.notice}\n"
        f"--{boundary}\n"
        "Content-Description: Delivery report\n"
        "Content-Type: message/delivery-status\n\n"
        f"{status}\n\n"
        f"--{boundary}\n"
        "Content-Description: Undelivered Message Headers\n"
        "Content-Type: text/rfc822-headers\n\n"
        f"Return-Path: <{SENDER}>\n"
        f"Date: {date}\n"
        f"From: Newsletter <{SENDER}>\n"
        f"To: {first}\n"
        f"Subject: {report.original_subject}\n"
        f"Message-ID: <{report.queue_id.lower()}@mailer.example.net>\n"
        "MIME-Version: 1.0\n\n"
        f"--{boundary}--\n"
    )


def mbox_entry(sender: str, at: dt.datetime, text: str) -> str:
    # The mbox "From " separator line carries an asctime() date (RFC 4155 §2).
    return f"From {sender}  {at:%a %b} {at.day:2d} {at:%H:%M:%S %Y}\n{text}\n"


def write_bounces(rows: list[Row]) -> None:
    """bounces.csv and bounces.mbox: the list's bounce history in both shapes a sender has."""
    table = sorted([*BOUNCE_ROWS, *closed_isp_rows()], key=lambda row: (row[3], row[0]))
    listed = {row["Email Address"] for row in rows}
    used = {row[0] for row in BOUNCE_ROWS} | {
        fields[0][1].partition(";")[2].strip() for report in DSNS for fields in report.recipients
    }
    missing = sorted(used - listed)
    if missing:
        raise SystemExit(f"bounce samples name addresses not in the list: {missing}")
    with (HERE / "bounces.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(BOUNCE_COLUMNS)
        writer.writerows(table)
    entries = [mbox_entry("MAILER-DAEMON", r.at, dsn_text(r)) for r in DSNS]
    entries.append(mbox_entry("margaret.allen@web.de", utc("2026-11-18T06:12:40"), AUTO_REPLY))
    (HERE / "bounces.mbox").write_text("".join(entries), encoding="utf-8", newline="\n")


if __name__ == "__main__":
    main()
