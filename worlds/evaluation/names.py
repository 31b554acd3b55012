"""Names for the evaluation world: people's local parts, company domains, provider typos and
real domains that sit one or two edits from a big provider.

Everything here is drawn from a ``random.Random`` the caller seeds, so the same seed gives the
same world.
"""

from __future__ import annotations

import random
from importlib import resources

FIRST = (
    "james", "mary", "john", "patricia", "robert", "jennifer", "michael", "linda", "william",
    "elizabeth", "david", "barbara", "richard", "susan", "joseph", "jessica", "thomas", "sarah",
    "charles", "karen", "daniel", "nancy", "matthew", "lisa", "anthony", "betty", "mark",
    "sandra", "paul", "ashley", "steven", "emily", "andrew", "donna", "joshua", "michelle",
    "kevin", "carol", "brian", "amanda", "george", "melissa", "timothy", "deborah", "ana",
    "luis", "sofia", "lukas", "anna", "jan", "marie", "pierre", "chloe", "hiro", "yuki", "wei",
    "li", "olga", "ivan", "fatima", "omar", "priya", "raj", "carlos", "lucia", "mateo", "emma",
)  # fmt: skip
LAST = (
    "smith", "johnson", "williams", "brown", "jones", "garcia", "miller", "davis", "rodriguez",
    "martinez", "hernandez", "lopez", "gonzalez", "wilson", "anderson", "taylor", "moore",
    "jackson", "martin", "lee", "thompson", "white", "harris", "clark", "lewis", "robinson",
    "walker", "young", "allen", "king", "wright", "scott", "hill", "green", "adams", "baker",
    "nelson", "carter", "mitchell", "roberts", "muller", "schmidt", "schneider", "fischer",
    "weber", "dubois", "moreau", "rossi", "russo", "kowalski", "nowak", "tanaka", "suzuki",
    "chen", "wang", "kim", "park", "ivanov", "petrov", "silva", "santos", "khan", "patel",
)  # fmt: skip
ROLES = ("info", "sales", "contact", "office", "support", "billing", "hr", "admin", "hello")

_COMPANY_A = (
    "acme", "apex", "blue", "bright", "cedar", "delta", "eagle", "ever", "first", "global",
    "golden", "green", "harbor", "iron", "lake", "maple", "metro", "north", "oak", "pacific",
    "pine", "prime", "red", "river", "silver", "stone", "summit", "sun", "true", "union",
    "valley", "west", "white", "alpine", "coastal", "crystal", "granite", "liberty", "nova",
)  # fmt: skip
_COMPANY_B = (
    "works", "labs", "logistics", "dental", "law", "realty", "foods", "media", "systems",
    "consulting", "partners", "design", "builders", "motors", "clinic", "bakery", "farms",
    "capital", "energy", "studio", "supply", "tech", "travel", "print", "textiles", "optics",
)  # fmt: skip
_TLDS = ("com", "com", "com", "net", "org", "io", "co.uk", "de", "fr", "com.au", "ca", "nl")

# Real domains one or two edits from a big provider's, with mail of their own: companies
# (aon.com vs aol.com, hotmart.com vs hotmail.com, wahoo.com vs yahoo.com, cloud.com vs
# icloud.com, gm.com vs gmx.com) and providers' regional or sister domains.
NEAR_PROVIDER = (
    "aon.com", "bol.com", "aoc.com", "hotmart.com", "cloud.com", "email.com", "mail.com",
    "gmx.at", "gmx.ch", "gmx.com", "yahoo.de", "yahoo.fr", "yahoo.es", "outlook.de",
    "hotmail.de", "live.de", "wahoo.com", "lime.com", "life.com", "gm.com", "gmc.com", "amx.com",
    "web.com", "att.com", "verizon.com", "comcast.com", "mail.de", "online.de", "hotmail.es",
    "outlook.fr",
)  # fmt: skip

# Providers whose one-edit neighbours squatters register.
TYPO_TARGETS = (
    "gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "icloud.com", "aol.com",
    "googlemail.com", "hotmail.co.uk", "yahoo.co.uk", "hotmail.fr",
)  # fmt: skip
# Misspelt names under a misspelt TLD: a TLD fix alone gives the wrong domain.
MISSPELT_NAME_AND_TLD = (
    ("ahoo.con", "yahoo.com"),
    ("gmal.cmo", "gmail.com"),
    ("hotmal.con", "hotmail.com"),
    ("outlok.ocm", "outlook.com"),
    ("iclod.con", "icloud.com"),
)

_QWERTY = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def local_parts(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    """``count`` new people's local parts in the usual shapes, none in ``taken`` (updated)."""
    found: list[str] = []
    while len(found) < count:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        shape = rng.randrange(6)
        local = (
            f"{first}.{last}",
            f"{first[0]}{last}",
            f"{first}_{last}",
            f"{first}{rng.randrange(1, 99)}",
            f"{first}.{last}{rng.randrange(1, 9)}",
            f"{last}.{first}",
        )[shape]
        if local not in taken:
            taken.add(local)
            found.append(local)
    return found


def company_domains(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    """``count`` made-up company domains, none in ``taken`` (updated)."""
    found: list[str] = []
    while len(found) < count:
        name = f"{rng.choice(_COMPANY_A)}{rng.choice(_COMPANY_B)}.{rng.choice(_TLDS)}"
        if name not in taken:
            taken.add(name)
            found.append(name)
    return found


def one_edit_typos(domain: str) -> list[str]:
    """Typing slips of ``domain``'s first label: a neighbouring key, a dropped, doubled or
    swapped letter (the errors mailcheck and Damerau count as one edit)."""
    label, dot, rest = domain.partition(".")
    variants: set[str] = set()
    for i in range(len(label)):
        variants.add(label[:i] + label[i + 1 :])  # dropped
        variants.add(label[:i] + label[i] + label[i:])  # doubled
        if i + 1 < len(label):
            variants.add(label[:i] + label[i + 1] + label[i] + label[i + 2 :])  # swapped
        for key in _neighbours(label[i]):
            variants.add(label[:i] + key + label[i + 1 :])  # neighbouring key
    variants.discard(label)
    return sorted(f"{v}{dot}{rest}" for v in variants if len(v) >= 3)


def _neighbours(key: str) -> str:
    for row in _QWERTY:
        i = row.find(key)
        if i >= 0:
            return row[max(0, i - 1) : i] + row[i + 1 : i + 2]
    return ""


def shipped_list(name: str) -> frozenset[str]:
    """The first column of a list shipped in ``pipeline/data`` (comments skipped)."""
    text = resources.files("pipeline.data").joinpath(name).read_text(encoding="utf-8")
    rows = (line.split("#", 1)[0].split() for line in text.splitlines())
    return frozenset(row[0].lower() for row in rows if row)


def shipped_pairs(name: str) -> dict[str, str]:
    """The ``first second`` rows of a two-column list shipped in ``pipeline/data``."""
    text = resources.files("pipeline.data").joinpath(name).read_text(encoding="utf-8")
    rows = (line.split("#", 1)[0].split() for line in text.splitlines())
    return {row[0].lower(): row[1].lower() for row in rows if len(row) >= 2}
