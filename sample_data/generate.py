"""Regenerate the sample data: a sandbox DNS world and a dirty mailing list that uses it.

Run from the repository root::

    .venv/bin/python sample_data/generate.py

Outputs (deterministic: fixed seed, no clock):

``world.json``
    Zones for every domain the list uses, in the format of :mod:`pipeline.sandbox.world`.
    Provider and company domains carry realistic MX hosts so the list also means something on
    the real network; addresses are from the documentation ranges (RFC 5737, RFC 3849).
``list.csv``
    About 300 rows, UTF-8, comma-delimited, header
    ``id,first_name,last_name,Email Address,company,signup_date``. Roughly 70% are plain good
    addresses; the rest are the dirt a cleaner has to handle (case, spaces, duplicates, typos,
    disposable and role accounts, internationalised addresses, broken syntax, special DNS cases).
``list.parquet``
    The same rows, every column a string.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import random
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
    # No MX but an A record: RFC 5321 §5.1 implicit MX.
    "smallbiz-bakery.com": {"a": ["192.0.2.10"]},
    # No MX, only AAAA: the implicit MX rule covers AAAA too.
    "v6only-hosting.net": {"aaaa": ["2001:db8::25"]},
    # The name exists but has no records at all: NODATA for MX, A and AAAA.
    "empty-records.com": {},
    "broken-dns-co.com": {"rcode": "SERVFAIL"},
    "lame-delegation.net": {"rcode": "REFUSED"},
    # Only one: every query for it costs the demo a full resolver timeout.
    "slow-dns-co.com": {"timeout": True},
    # Answers, slowly; exercises concurrency without timing out.
    "faraway-isp.com.au": {"mx": [[10, "mx.faraway-isp.com.au"]], "latency_ms": 150},
}

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
    world = build_world()
    # Fail here rather than in the tests if a zone is invalid.
    zone_count = len(world_from_dict(world).zones)
    (HERE / "world.json").write_text(world_json(world), encoding="utf-8")
    rows = build_rows(rng)
    write_csv(HERE / "list.csv", rows)
    frame = pl.DataFrame({name: [row[name] for row in rows] for name in COLUMNS})
    frame.write_parquet(HERE / "list.parquet")
    print(f"wrote {zone_count} zones, {len(rows)} rows to {HERE}")


def build_world() -> dict[str, Any]:
    for domain in DISPOSABLE:
        if domain not in blocklist:
            raise SystemExit(f"{domain} is not on the disposable_email_domains blocklist")
    zones: dict[str, object] = {}
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
    return {"latency_ms": 0, "zones": dict(sorted(zones.items()))}


def world_json(world: dict[str, Any]) -> str:
    """The world as JSON with one zone per line, so diffs of the file stay readable."""
    zones = [
        f"  {json.dumps(name)}: {json.dumps(zone, ensure_ascii=False)}"
        for name, zone in world["zones"].items()
    ]
    body = ",\n".join(zones)
    return f'{{"latency_ms": {json.dumps(world["latency_ms"])},\n "zones": {{\n{body}\n }}}}\n'


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


if __name__ == "__main__":
    main()
