"""Regenerate ``contacts.csv``: made-up people for the contact store and ``/api/find``.

Run from the repository root::

    .venv/bin/python sample_data/generate_contacts.py

Deterministic (fixed seed, no clock). Everyone is invented: names drawn from small word lists,
made-up towns with unassigned ZIP codes (000xx; the lowest ZIP in use is 00501) or the non-
geographic ZZ99 postcodes, phone numbers only from ranges reserved for fiction (North American
555-0100 to 555-0199, Ofcom's +44 7700 900000 to 900999 for drama), email addresses at made-up
domains (``madeup-mail.net`` and the like, employers under ``madeup-biz.net``). No row is anyone.

UTF-8, comma-delimited, header
``First Name,Last Name,Street,City,State,ZIP,Country,Phone,E-mail,Employer,Job Title``.
About 3,000 people, then the cases the tests and docs/contacts.md use (search terms in quotes):

* Two different people named Jordan Ellery in Glimmerford, IL, one at Quillfeather Paper Co, one
  at Dunwhistle Freight: "Jordan Ellery" and "Jordan Ellery Glimmerford" are ambiguous,
  "Jordan Ellery Quillfeather" finds the first, "Jordan Ellery Dunwhistle" the second.
* Rosalind Vantreece in Marrowgate, OH and another in Thistlecombe, PA: "Rosalind Vantreece" is
  ambiguous, "Rosalind Vantreece Marrowgate" finds one.
* Marisol Quenby twice with the same email (``Marisol.Quenby@madeup-mail.net`` and, later,
  `` marisol.quenby@MADEUP-MAIL.NET ``) and a promotion: one record, title Head Archivist.
* Emrys Caldwater twice with the same phone ((614) 555-0177 and +1 614 555 0177); the later row
  adds the email ``emrys.c@notreal-inbox.org``: one record with both.
* Ilse Marchbank's row twice, word for word: one record.
* Zoë Åberlund in Fernhollow: "Zoe Aberlund" finds her.
* Tobias Quill Wrenfield: "Tobias Wrenfield" finds him, "+44 7700 900999" too.
* Hollis Penhaligon has a broken email and a too-short phone: kept, with email and phone empty.
* Three rejected rows: one with only an employer, one with only an invalid email and phone, and
  Cosmo Threlkeld's, with an unquoted comma in the street (a field too many).
"""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20240917
PEOPLE = 3000
HEADER = (
    "First Name",
    "Last Name",
    "Street",
    "City",
    "State",
    "ZIP",
    "Country",
    "Phone",
    "E-mail",
    "Employer",
    "Job Title",
)

Row = tuple[str, str, str, str, str, str, str, str, str, str, str]

FIRST_NAMES = (
    "Ada", "Alden", "Amara", "Anselm", "Beatrix", "Bram", "Calla", "Cedric", "Clementine",
    "Corin", "Dalia", "Dorian", "Edda", "Elowen", "Emeric", "Fenna", "Florian", "Greer",
    "Gideon", "Hester", "Idris", "Imogen", "Ivo", "Juniper", "Kestrel", "Linnea", "Lucan",
    "Maren", "Milo", "Nerys", "Oren", "Orla", "Percival", "Quinta", "Rhosyn", "Rufus",
    "Saoirse", "Soren", "Tamsin", "Thaddeus", "Una", "Ulric", "Vesna", "Wilder", "Wren",
    "Xanthe", "Yannick", "Ysolde", "Zeno", "Briony", "Caspian", "Delphine", "Evander",
    "Fabian", "Honora", "Ignatius", "Jessamy", "Lysander", "Mireille", "Niamh",
)  # fmt: skip
LAST_NAMES = (
    "Abernethy", "Ashcombe", "Blackwood", "Brightwater", "Carrow", "Cheverell", "Coldridge",
    "Dunmore", "Eastwick", "Fairbairn", "Farrowby", "Gillingham", "Greaves", "Hallett",
    "Hartigan", "Holloway", "Ingledew", "Kettering", "Lanyon", "Larkworth", "Maddox",
    "Merriweather", "Nettleship", "Northcott", "Oakhurst", "Penrose", "Pettigrew", "Quayle",
    "Radcliffe", "Redfern", "Rookwood", "Saltmarsh", "Scarrow", "Sheldrake", "Stanhope",
    "Thistlewood", "Tregarth", "Underhill", "Vickery", "Wakefield", "Warrender", "Westlake",
    "Whitlock", "Winterbourne", "Yardley", "Ashdown", "Bellweather", "Crossley", "Durward",
    "Elsworth", "Fenwick", "Gorringe", "Hawtrey", "Kinsella", "Lockhart", "Mortlake",
    "Pendleton", "Ravensworth", "Tolliver", "Wolstenholme",
)  # fmt: skip
# Made-up towns: (town, state, first ZIP); ZIPs 00010-00099 are not assigned to any place.
US_TOWNS = (
    ("Glimmerford", "IL", 10), ("Marrowgate", "OH", 14), ("Thistlecombe", "PA", 18),
    ("Dunwhistle", "OR", 22), ("Quillmarsh", "VT", 26), ("Larkspur Bend", "CO", 30),
    ("Fernhollow", "WA", 34), ("Oxleigh Vale", "NC", 38), ("Brindlemoor", "MN", 42),
    ("Copperwick", "AZ", 46), ("Hollowmere", "TN", 50), ("Saltbridge Crossing", "ME", 54),
    ("Wrenhaven", "WI", 58), ("Emberly Falls", "MI", 62), ("Tanglewood Hollow", "GA", 66),
    ("Pebblestone", "NM", 70),
)  # fmt: skip
# Made-up British towns with postcodes of the non-geographic ZZ99 district.
UK_TOWNS = ("Little Pemberwick", "Upper Snodsbury Wold", "Greywater Magna", "Nettlecombe Parva")
STREETS = (
    "Elm", "Mill", "Orchard", "Chapel", "Quarry", "Heron", "Linden", "Foundry", "Meadow",
    "Kestrel", "Willow", "Cobble", "Lantern", "Tanner", "Bramble", "Saddler",
)  # fmt: skip
US_SUFFIXES = ("St", "Ave", "Rd", "Ln", "Ct", "Way")
UK_SUFFIXES = ("Lane", "Road", "Close", "Row")
# Fictional employers and the made-up domains their staff use.
COMPANIES = (
    ("Quillfeather Paper Co", "quillfeather"),
    ("Dunwhistle Freight", "dunwhistle-freight"),
    ("Brassgear Instruments", "brassgear"),
    ("Lanternfly Analytics", "lanternfly"),
    ("Mossbank Dairy Cooperative", "mossbank"),
    ("Hollowpine Software", "hollowpine"),
    ("Tidewright Marine Supply", "tidewright"),
    ("Copperkettle Catering", "copperkettle"),
    ("Glasswing Optics", "glasswing"),
    ("Oakenshield Insurance", "oakenshield"),
    ("Starling & Finch Legal", "starlingfinch"),
    ("Wheelwright Bicycles", "wheelwright"),
)
BUSINESS_DOMAIN = "madeup-biz.net"
PERSONAL_DOMAINS = ("madeup-mail.net", "notreal-inbox.org", "fictional-post.net")
TITLES = (
    "Analyst", "Accountant", "Archivist", "Buyer", "Clerk", "Designer", "Dispatcher",
    "Engineer", "Lab Technician", "Office Manager", "Paralegal", "Project Manager",
    "Sales Associate", "Software Developer", "Warehouse Supervisor", "Operations Director",
)  # fmt: skip
# Area codes for the fictional 555-01xx numbers (the 555-0100..0199 block is reserved for fiction
# in every area code).
AREA_CODES = (
    "217", "312", "614", "503", "802", "720", "206", "919", "612", "602", "615", "207", "608",
    "313", "404", "505", "412", "971", "970", "828", "541", "218", "423", "480", "336", "715",
    "231", "706", "575", "267", "509", "651",
)  # fmt: skip


def phone_pool(rng: random.Random) -> list[tuple[str, str]]:
    """Every fictional number once, as (country, digits), in random order."""
    pool = [("US", f"{area}5550{n:03d}") for area in AREA_CODES for n in range(100, 200)]
    pool += [("UK", f"7700900{n:03d}") for n in range(1000)]
    rng.shuffle(pool)
    return pool


def spell_phone(country: str, digits: str, rng: random.Random) -> str:
    """A number the way people type it."""
    if country == "UK":
        return rng.choice((f"+44 {digits[:4]} {digits[4:]}", f"+44{digits}"))
    area, exchange, line = digits[:3], digits[3:6], digits[6:]
    return rng.choice(
        (
            f"({area}) {exchange}-{line}",
            f"{area}-{exchange}-{line}",
            f"+1 {area} {exchange} {line}",
            f"{area}.{exchange}.{line}",
        )
    )


def person(rng: random.Random, phones: list[tuple[str, str]], emails: set[str]) -> Row:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    uk = rng.random() < 0.15
    if uk:
        street = f"{rng.randint(1, 120)} {rng.choice(STREETS)} {rng.choice(UK_SUFFIXES)}"
        town, state, country = rng.choice(UK_TOWNS), "", "UK"
        code = f"ZZ99 {rng.randint(1, 9)}{rng.choice('ABDEFGHJ')}{rng.choice('LNPQRSTU')}"
    else:
        street = f"{rng.randint(1, 9999)} {rng.choice(STREETS)} {rng.choice(US_SUFFIXES)}"
        town, state, first_zip = rng.choice(US_TOWNS)
        code, country = f"{first_zip + rng.randint(0, 3):05d}", "USA"
    phone = ""
    if rng.random() < 0.8:
        wanted = "UK" if uk else "US"
        at = next(i for i, (c, _) in enumerate(phones) if c == wanted)
        phone = spell_phone(*phones.pop(at), rng)
    company, title, slug = "", "", ""
    if rng.random() < 0.7:
        company, slug = rng.choice(COMPANIES)
        title = rng.choice(TITLES)
    email = ""
    if rng.random() < 0.85:
        work = slug and rng.random() < 0.5
        domain = f"{slug}.{BUSINESS_DOMAIN}" if work else rng.choice(PERSONAL_DOMAINS)
        local = rng.choice((f"{first}.{last}", f"{first[0]}{last}", f"{first}{last}")).lower()
        email, n = f"{local}@{domain}", 1
        while email.lower() in emails:
            n += 1
            email = f"{local}{n}@{domain}"
        emails.add(email.lower())
    return (first, last, street, town, state, code, country, phone, email, company, title)


def special_rows() -> list[Row]:
    """The hand-made cases, in file order (duplicates after their first row)."""
    return [
        ("Jordan", "Ellery", "41 Heron St", "Glimmerford", "IL", "00011", "USA",
         "(217) 555-0101", "jordan.ellery@quillfeather.madeup-biz.net",
         "Quillfeather Paper Co", "Paper Chemist"),
        ("Jordan", "Ellery", "7 Foundry Ave", "Glimmerford", "IL", "00012", "USA",
         "(217) 555-0102", "jellery@notreal-inbox.org", "Dunwhistle Freight", "Dispatcher"),
        ("Rosalind", "Vantreece", "12 Lantern Ct", "Marrowgate", "OH", "00015", "USA",
         "+1 614 555 0103", "rosalind.v@madeup-mail.net", "Glasswing Optics", "Lens Grinder"),
        ("Rosalind", "Vantreece", "300 Tanner Way", "Thistlecombe", "PA", "00019", "USA",
         "412-555-0104", "", "", ""),
        ("Marisol", "Quenby", "88 Chapel Rd", "Quillmarsh", "VT", "00027", "USA",
         "", "Marisol.Quenby@madeup-mail.net", "Mossbank Dairy Cooperative", "Archivist"),
        ("Emrys", "Caldwater", "5 Saddler Ln", "Wrenhaven", "WI", "00059", "USA",
         "(614) 555-0177", "", "Tidewright Marine Supply", "Buyer"),
        ("Ilse", "Marchbank", "19 Willow Close", "Greywater Magna", "", "ZZ99 4GT", "UK",
         "+44 7700 900998", "ilse.marchbank@fictional-post.net", "Brassgear Instruments",
         "Engineer"),
        ("Zoë", "Åberlund", "2 Meadow Way", "Fernhollow", "WA", "00035", "USA",
         "+1 206 555 0105", "zoe.aberlund@fictional-post.net", "", ""),
        ("Tobias Quill", "Wrenfield", "14 Bramble Row", "Little Pemberwick", "", "ZZ99 2AP",
         "UK", "+44 7700 900999", "", "Starling & Finch Legal", "Paralegal"),
        ("Hollis", "Penhaligon", "3 Cobble St", "Pebblestone", "NM", "00071", "USA",
         "555-01", "hollis.penhaligon@@madeup-mail", "", ""),
        ("", "", "", "", "", "", "", "", "", "Hollowpine Software", ""),
        ("", "", "", "", "", "", "", "12345", "not-an-email", "", ""),
        ("Marisol", "Quenby", "88 Chapel Rd", "Quillmarsh", "VT", "00027", "USA",
         "", " marisol.quenby@MADEUP-MAIL.NET ", "Mossbank Dairy Cooperative", "Head Archivist"),
        ("Emrys", "Caldwater", "", "", "", "", "", "+1 614 555 0177", "emrys.c@notreal-inbox.org",
         "", ""),
        ("Ilse", "Marchbank", "19 Willow Close", "Greywater Magna", "", "ZZ99 4GT", "UK",
         "+44 7700 900998", "ilse.marchbank@fictional-post.net", "Brassgear Instruments",
         "Engineer"),
    ]  # fmt: skip


# Written as text, not through csv.writer, which would quote the comma: a row of one field too
# many, as a hand-edited export produces.
RAGGED_LINE = (
    "Cosmo,Threlkeld,9 Mill St, Apt 2,Hollowmere,TN,00051,USA,(615) 555-0106,"
    "cosmo.threlkeld@madeup-mail.net,,\n"
)


def main() -> None:
    rng = random.Random(SEED)
    phones = phone_pool(rng)
    # The hand-made rows' numbers must not be drawn for anyone else.
    reserved = {"2175550101", "2175550102", "6145550103", "4125550104", "6145550177"}
    reserved |= {"2065550105", "6155550106", "7700900998", "7700900999"}
    phones = [(c, d) for c, d in phones if d not in reserved]
    emails: set[str] = set()
    rows: list[Row] = []
    special = {(row[0], row[1]) for row in special_rows()}
    people: set[tuple[str, str, str]] = set()
    while len(rows) < PEOPLE:
        row = person(rng, phones, emails)
        # One person per name and town (the only such pair is the hand-made one), and nobody
        # else by a hand-made name.
        if (row[0], row[1], row[3]) not in people and (row[0], row[1]) not in special:
            people.add((row[0], row[1], row[3]))
            rows.append(row)
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(rows[: PEOPLE // 2])
    writer.writerows(special_rows())
    out.write(RAGGED_LINE)
    writer.writerows(rows[PEOPLE // 2 :])
    (HERE / "contacts.csv").write_text(out.getvalue(), encoding="utf-8")


if __name__ == "__main__":
    main()
