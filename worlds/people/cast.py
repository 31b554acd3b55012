"""Making the labelled population: its people, the rows sources hold about them, the opt-outs.

:func:`cast` makes everyone from one ``random.Random``. Groups (:class:`Group`) are made in a
fixed order, and every full name is taken once unless a group repeats it on purpose (common
names, the same double-surnamed name in two cities). Each person who is not absent gets one to
three rows, as sources hold them: a *directory* (home address and the house's number), a *crm*
(email and mobile, sometimes the name without accents or a nickname) and the *employer*
(work email, office number, office address). The rows are shuffled, as a merge of exports sees
them; a later file (``update_rows``) sees some of them again, and some opted-out people.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field, replace
from typing import Final

from rapidfuzz import fuzz

from worlds.people.world import (
    ABROAD,
    ABROAD_NAMES,
    BUSINESS_DOMAIN,
    COMPANY_HEADS,
    COMPANY_KINDS,
    FAMILY_PAIRS,
    GIVEN_PAIRS,
    NICKNAMES,
    PARTICLE_NAMES,
    PERSONAL_DOMAINS,
    SPANISH_FAMILY,
    SPANISH_GIVEN,
    STREETS,
    TITLES,
    US_FAMILY,
    US_GIVEN,
    US_PLACES,
    ContactRow,
    Group,
    Numbers,
    OptOut,
    Person,
    Phone,
    Place,
    Status,
    ascii_name,
    fold,
)

__all__ = ["Cast", "cast"]

# How many of each (the population is about 4,900 people, about 150 of them absent).
COMMON_NAMES: Final = (
    ("John", "Smith", 20), ("Maria", "Garcia", 10), ("Michael", "Johnson", 8),
    ("David", "Lee", 8), ("James", "Brown", 6), ("Jennifer", "Davis", 6),
    ("Robert", "Miller", 6), ("Mary", "Jones", 5), ("Wei", "Zhang", 4), ("Jose", "Rodriguez", 4),
    ("Linda", "Martinez", 3), ("William", "Jones", 3), ("Sarah", "Wilson", 3),
    ("Christopher", "Taylor", 3), ("Kevin", "Nguyen", 3), ("Priya", "Patel", 3),
    ("Daniel", "Anderson", 2), ("Karen", "Thomas", 2), ("Emily", "Moore", 2),
    ("Thomas", "White", 2), ("Ashley", "Harris", 2), ("Joseph", "Martin", 2),
    ("Nancy", "Clark", 2), ("Matthew", "Lewis", 2), ("Laura", "Young", 2), ("Steven", "Hall", 2),
    ("Michelle", "Allen", 2), ("Anthony", "King", 2), ("Lisa", "Wright", 2),
)  # fmt: skip
# Confusions seen in lookups, kept as fixed cases: (present, other, the other's status).
NAMESAKES: Final = (
    (("Mark", "Cooper"), ("Mary", "Cooper"), Status.ERASED),
    (("Amanda", "Hall"), ("Amanda", "Hill"), Status.ABSENT),
    (("Julia", "Gómez"), ("Lisa", "Gómez"), Status.ABSENT),
)
NAMESAKE_PAIRS: Final = 120
DOUBLE_SURNAMES: Final = 100  # US residents; 25 with a separate "given + second surname" person
SAME_NAME_TWO_CITIES: Final = 12
ABROAD_COUNTS: Final = {"MX": 100, "GB": 90, "DE": 70, "FR": 70, "IN": 80, "ES": 60}
TWINS: Final = {"MX": 15, "IN": 10}  # foreign numbers whose US reading is a US person's number
HOUSEHOLDS: Final = 280
OFFICES: Final = 45
INDIVIDUALS: Final = 2750
SOUND_ALIKE_ABSENT: Final = 60  # absent people a fuzzy score confuses with a present one
OTHER_ABSENT: Final = 40
OPT_OUTS: Final = {Group.INDIVIDUAL: 80, Group.FOREIGN: 14, Group.HOUSEHOLD: 12}
REPEATS: Final = 250  # present people's rows seen again in the later file


@dataclass
class Cast:
    people: list[Person] = field(default_factory=list)
    rows: list[ContactRow] = field(default_factory=list)
    update_rows: list[ContactRow] = field(default_factory=list)
    optouts: list[OptOut] = field(default_factory=list)


def cast(rng: random.Random) -> Cast:
    maker = _Maker(rng)
    for make in (
        maker.common_names, maker.namesakes, maker.multi_part, maker.households,
        maker.offices, maker.individuals, maker.abroad, maker.absentees,
    ):  # fmt: skip
        make()
    optouts = maker.opt_out()
    rows = [row for p in maker.people if p.status is not Status.ABSENT for row in maker.rows(p)]
    rng.shuffle(rows)
    return Cast(maker.people, rows, maker.update_rows(rows, optouts), optouts)


class _Maker:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.numbers = Numbers(rng)
        self.people: list[Person] = []
        self.office_at: dict[str, tuple[str, Place]] = {}  # link: office street, place
        self.twins: set[str] = set()  # people whose national number is a US person's
        self._names: set[str] = set()
        self._emails: set[str] = set()
        self._weights = list(
            itertools.accumulate(1 / (rank + 12) for rank in range(len(US_FAMILY)))
        )
        self._companies = [f"{h} {k}" for h in COMPANY_HEADS for k in COMPANY_KINDS]

    # ---- the parts of a person

    def free(self, *names: str) -> bool:
        return all(fold(n) not in self._names for n in names)

    def email(self, name: str, domain: str) -> str:
        local = ".".join(fold(ascii_name(name)).split())
        address, n = f"{local}@{domain}", 1
        while address in self._emails:
            n += 1
            address = f"{local}{n}@{domain}"
        self._emails.add(address)
        return address

    def us_name(self) -> tuple[str, str]:
        family = self.rng.choices(US_FAMILY, cum_weights=self._weights)[0]
        return self.rng.choice(US_GIVEN), family

    def spanish_family(self) -> str:
        first, second = self.rng.sample(SPANISH_FAMILY, 2)
        return f"{first} {second}"

    def street(self, region: str) -> str:
        name, number = self.rng.choice(STREETS[region]), self.rng.randint(1, 999)
        return f"{number} {name}" if region in ("US", "GB", "IN") else f"{name} {number}"

    def company(self) -> str:
        return self.rng.choice(self._companies)

    def person(
        self, group: Group, given: str, family: str, place: Place, **fields: object
    ) -> Person:
        """A new person; an own number, a personal email and a job unless *fields* say otherwise.

        Someone made to opt out always has an email, which their request can name.
        """
        rng, name = self.rng, f"{given} {fields.get('middle', '')} {family}"
        leaves = fields.get("status", Status.PRESENT) in _OPTED_OUT
        if "email" not in fields:
            keep = leaves or rng.random() < 0.92
            fields["email"] = self.email(name, rng.choice(PERSONAL_DOMAINS)) if keep else ""
        if "phone" not in fields:
            mobile = rng.random() < 0.5
            fields["phone"] = self.numbers.abroad(place, mobile) if rng.random() < 0.9 else None
        if "company" not in fields and rng.random() < 0.6:
            fields |= {"company": self.company(), "title": rng.choice(TITLES)}
        base: dict[str, object] = {"group": group, "status": Status.PRESENT, "given": given}
        base["family"] = family
        base |= {"place": place, "street": self.street(place.region)}
        person = Person(id=f"P{len(self.people) + 1:05d}", **(base | fields))  # type: ignore[arg-type]
        self.people.append(person)
        self._names.add(fold(person.name))
        return person

    # ---- the groups, in the order they are made

    def common_names(self) -> None:
        for given, family, count in COMMON_NAMES:
            places = self.rng.sample(US_PLACES, count - count // 6)
            places += self.rng.sample(places, count // 6)  # a few share a city, not an employer
            companies = self.rng.sample(self._companies, count)
            for place, company in zip(places, companies, strict=True):
                title = self.rng.choice(TITLES)
                self.person(Group.COMMON_NAME, given, family, place, company=company, title=title)

    def namesakes(self) -> None:
        for n, (present, other, status) in enumerate(NAMESAKES):
            self._pair(n, present, other, status)
        n = len(NAMESAKES)
        while n < NAMESAKE_PAIRS:
            given, family = self.us_name()
            if self.rng.random() < 0.5:
                a, b = self.rng.sample(self.rng.choice(GIVEN_PAIRS), 2)
                present, other = (a, family), (b, family)
            else:
                a, b = self.rng.sample(self.rng.choice(FAMILY_PAIRS), 2)
                present, other = (given, a), (given, b)
            if self.free(" ".join(present), " ".join(other)):
                fate = self.rng.choices(list(Status), (50, 15, 10, 25))[0]
                self._pair(n, present, other, fate)
                n += 1

    def _pair(self, n: int, present: tuple[str, str], other: tuple[str, str], fate: Status) -> None:
        link = f"N{n:03d}"
        self.person(Group.NEAR_NAMESAKE, *present, self.rng.choice(US_PLACES), link=link)
        self.person(Group.NEAR_NAMESAKE, *other, self.rng.choice(US_PLACES), link=link, status=fate)

    def multi_part(self) -> None:
        made = 0
        while made < DOUBLE_SURNAMES:
            given, family = self.rng.choice(SPANISH_GIVEN), self.spanish_family()
            shorter = f"{given} {family.split()[1]}"
            if not self.free(f"{given} {family}", shorter, f"{given} {family.split()[0]}"):
                continue
            link, place = f"L{made:03d}", self.rng.choice(US_PLACES)
            self.person(Group.MULTI_PART, given, family, place, link=link)
            if made < 40:  # "Laura Díaz", who is not Laura Rodríguez Díaz: present or absent
                status = Status.PRESENT if made < 25 else Status.ABSENT
                other = self.rng.choice(US_PLACES)
                self.person(
                    Group.MULTI_PART, given, family.split()[1], other, link=link, status=status
                )
            made += 1
        self._same_name_two_cities()
        for given, family in PARTICLE_NAMES:
            self.person(Group.MULTI_PART, given, family, self.rng.choice(US_PLACES))

    def _same_name_two_cities(self) -> None:
        orlando = next(p for p in US_PLACES if p.city == "Orlando")
        columbus = next(p for p in US_PLACES if p.city == "Columbus")
        self.person(Group.MULTI_PART, "Roberto", "Hernández García", columbus, link="R000")
        made = 1
        while made < SAME_NAME_TWO_CITIES:
            given, family = self.rng.choice(SPANISH_GIVEN), self.spanish_family()
            if self.free(f"{given} {family}", f"{given} {family.split()[0]}"):
                for place in self.rng.sample(US_PLACES, 2):
                    self.person(Group.MULTI_PART, given, family, place, link=f"R{made:03d}")
                made += 1
        # The other Roberto Hernández García, in Orlando, is erased later (see opt_out).
        self.person(
            Group.MULTI_PART, "Roberto", "Hernández García", orlando, link="R000",
            status=Status.ERASED,
        )  # fmt: skip

    def households(self) -> None:
        for n in range(HOUSEHOLDS):
            place, link = self.rng.choice(US_PLACES), f"H{n:03d}"
            spanish = self.rng.random() < 0.15
            family = self.spanish_family() if spanish else self.us_name()[1]
            landline, street = self.numbers.us(place), self.street("US")
            mailbox = ""
            if self.rng.random() < 0.3:
                name = f"the {family.split()[0]} family"
                mailbox = self.email(name, self.rng.choice(PERSONAL_DOMAINS))
            size = self.rng.choices((2, 3, 4), (45, 35, 20))[0]
            for member in range(size):
                spouse = member == 1 and self.rng.random() < 0.2
                self._member(place, family, link, street, landline, mailbox, spouse)

    def _member(
        self, place: Place, family: str, link: str, street: str, landline: Phone, mailbox: str,
        spouse: bool,
    ) -> None:  # fmt: skip
        rng = self.rng
        while True:
            given, other = self.us_name()
            surname = other if spouse else family
            if self.free(f"{given} {surname}"):
                break
        own_email = rng.random() < (0.5 if mailbox else 0.8)
        fields: dict[str, object] = {"link": link, "street": street, "shared_phone": landline}
        fields["shared_email"] = (
            mailbox if mailbox and (not own_email or rng.random() < 0.5) else ""
        )
        if not own_email:
            fields["email"] = ""
        if rng.random() < 0.4:
            fields["phone"] = None
        self.person(Group.HOUSEHOLD, given, surname, place, **fields)

    def offices(self) -> None:
        for n, company in enumerate(self.rng.sample(self._companies, OFFICES)):
            place, link = self.rng.choice(US_PLACES), f"O{n:02d}"
            self.office_at[link] = (self.street("US"), place)
            switchboard, size = self.numbers.us(place), self.rng.randint(3, 10)
            slug = "".join(fold(company).split())
            mailbox = (
                f"office@{slug}.{BUSINESS_DOMAIN}" if size <= 4 and self.rng.random() < 0.5 else ""
            )
            for _ in range(size):
                given, family = self.us_name()
                if not self.free(f"{given} {family}"):
                    continue
                work = "" if mailbox and self.rng.random() < 0.6 else f"{given}.{family}"
                self.person(
                    Group.SWITCHBOARD, given, family, place, link=link, company=company,
                    title=self.rng.choice(TITLES), shared_phone=switchboard, shared_email=mailbox,
                    work_email=self.email(work, f"{slug}.{BUSINESS_DOMAIN}") if work else "",
                    email=self.email(f"{given} {family}", PERSONAL_DOMAINS[0])
                    if self.rng.random() < 0.4 else "",
                    phone=self.numbers.us(place) if self.rng.random() < 0.3 else None,
                )  # fmt: skip

    def individuals(self) -> None:
        made = 0
        while made < INDIVIDUALS:
            given, family = self.us_name()
            middle = self.rng.choice(US_GIVEN) if self.rng.random() < 0.12 else ""
            if middle == given or not self.free(f"{given} {family}", f"{given} {middle} {family}"):
                continue
            self.person(Group.INDIVIDUAL, given, family, self.rng.choice(US_PLACES), middle=middle)
            made += 1

    def abroad(self) -> None:
        for region, count in ABROAD_COUNTS.items():
            places = [p for p in ABROAD if p.region == region]
            made = 0
            while made < count:
                given, family = self._foreign_name(region)
                if self.free(f"{given} {family}"):
                    self.person(Group.FOREIGN, given, family, self.rng.choice(places))
                    made += 1
        self._twins()

    def _foreign_name(self, region: str) -> tuple[str, str]:
        if region in ("MX", "ES"):
            double = region == "ES" or self.rng.random() < 0.8
            family = self.spanish_family() if double else self.rng.choice(SPANISH_FAMILY)
            return self.rng.choice(SPANISH_GIVEN), family
        given, family = ABROAD_NAMES[region]
        return self.rng.choice(given.split()), self.rng.choice(family.split())

    def _twins(self) -> None:
        """Give some Mexicans and Indians a number whose digits are a US individual's number."""
        hosts = [p.phone for p in self.people if p.group is Group.INDIVIDUAL and p.phone]
        self.rng.shuffle(hosts)
        for region, count in TWINS.items():
            abroad = [i for i, p in enumerate(self.people) if p.place.region == region and p.phone]
            for at in self.rng.sample(abroad, count):
                while (twin := Numbers.twin(region, hosts.pop())) is None:
                    pass
                self.people[at] = replace(self.people[at], phone=twin)
                self.twins.add(self.people[at].id)

    def absentees(self) -> None:
        present = [p for p in self.people if p.group is Group.INDIVIDUAL and not p.middle]
        made = 0
        for person in self.rng.sample(present, len(present)):
            if made == SOUND_ALIKE_ABSENT:
                break
            target, family = fold(person.name), fold(person.family)
            alike = [g for g in US_GIVEN if fuzz.ratio(f"{fold(g)} {family}", target) >= 82]
            alike = [g for g in alike if self.free(f"{g} {person.family}")]
            if alike:
                place = person.place if self.rng.random() < 0.5 else self.rng.choice(US_PLACES)
                given = self.rng.choice(alike)
                self.person(
                    Group.INDIVIDUAL, given, person.family, place, status=Status.ABSENT,
                    link=person.id,
                )  # fmt: skip
                made += 1
        while made < SOUND_ALIKE_ABSENT + OTHER_ABSENT:
            given, family = self.us_name()
            if self.free(f"{given} {family}"):
                place = self.rng.choice(US_PLACES)
                self.person(Group.INDIVIDUAL, given, family, place, status=Status.ABSENT)
                made += 1

    # ---- opt-outs and rows

    def opt_out(self) -> list[OptOut]:
        """Pick who opts out; the near-namesakes and the Orlando Roberto already have a fate."""
        for group, count in OPT_OUTS.items():
            able = [i for i, p in enumerate(self.people) if _can_opt_out(p, group)]
            for n, at in enumerate(self.rng.sample(able, count)):
                status = Status.ERASED if n % 5 < 3 else Status.SUPPRESSED
                self.people[at] = replace(self.people[at], status=status)
        return [self._request(p) for p in self.people if p.status in _OPTED_OUT]

    def _request(self, p: Person) -> OptOut:
        action = "erase" if p.status is Status.ERASED else "suppress"
        given = self.rng.choices(("email", "phone", "both"), (50, 20, 30))[0]
        email = p.email if given != "phone" or not p.phone else ""
        phone = p.phone.e164 if p.phone and (given != "email" or not p.email) else ""
        return OptOut(p.id, action, email, phone, p.name)

    def rows(self, p: Person) -> list[ContactRow]:
        rng, found = self.rng, []
        if rng.random() < 0.85 or p.id in self.twins or not self._home_email(p):
            found.append(self._directory(p))
        email = self._home_email(p)
        if email and rng.random() < 0.8:
            mobile = p.phone if rng.random() < 0.6 else None
            phone = self._spell(mobile, national=rng.random() < 0.3) if mobile else ""
            job = (p.company, p.title) if rng.random() < 0.5 else ("", "")
            found.append(ContactRow(p.id, "crm", self._crm_name(p), phone=phone, email=email,
                                    company=job[0], title=job[1]))  # fmt: skip
        if p.company and rng.random() < (0.9 if p.group is Group.SWITCHBOARD else 0.35):
            found.append(self._employer(p))
        return found or [self._directory(p)]

    def _directory(self, p: Person) -> ContactRow:
        number = p.shared_phone if p.group is Group.HOUSEHOLD else p.phone
        national = p.id in self.twins or self.rng.random() < 0.6
        place, rng = p.place, self.rng
        return ContactRow(
            p.id, "directory", p.name, p.street, place.city, place.state, place.postcode,
            place.country, self._spell(number, national=national) if number else "",
            "" if number or not rng.random() < 0.5 else self._home_email(p),
        )  # fmt: skip

    @staticmethod
    def _home_email(p: Person) -> str:
        return p.email or (p.shared_email if p.group is Group.HOUSEHOLD else "")

    def _employer(self, p: Person) -> ContactRow:
        street, place = self.office_at.get(p.link, ("", p.place))
        number = p.shared_phone if p.group is Group.SWITCHBOARD else p.phone
        phone = self._spell(number, national=True) if number else ""
        if phone and p.group is Group.SWITCHBOARD and self.rng.random() < 0.25:
            phone += f" ext. {self.rng.randint(10, 99)}"  # phonenumbers reads it as an extension
        city = place.city if street else ""
        return ContactRow(
            p.id, "employer", p.name, street, city, place.state if street else "",
            place.postcode if street else "", place.country if street else "", phone,
            p.work_email or p.shared_email, p.company, p.title,
        )  # fmt: skip

    def _crm_name(self, p: Person) -> str:
        roll = self.rng.random()
        if roll < 0.3 and ascii_name(p.name) != p.name:
            return ascii_name(p.name)
        if roll < 0.1 and p.given in NICKNAMES:
            return f"{NICKNAMES[p.given]} {p.family}"
        return p.name

    def _spell(self, phone: Phone, *, national: bool) -> str:
        if phone.region != "US":
            return phone.national() if national else phone.international()
        if not national:
            return self.rng.choice((phone.international(), phone.e164))
        a, b, c = phone.nsn[:3], phone.nsn[3:6], phone.nsn[6:]
        return self.rng.choice((phone.national(), f"{a}-{b}-{c}", f"{a}.{b}.{c}"))

    def update_rows(self, rows: list[ContactRow], optouts: list[OptOut]) -> list[ContactRow]:
        """The later file: half the opted-out people seen again, and some rows repeated."""
        gone = {o.person for o in optouts}
        again = [r for r in rows if r.person in gone and self.rng.random() < 0.5]
        repeats = self.rng.sample([r for r in rows if r.person not in gone], REPEATS)
        later = [replace(r, source="update") for r in again + repeats]
        self.rng.shuffle(later)
        return later


_OPTED_OUT: Final = (Status.ERASED, Status.SUPPRESSED)


def _can_opt_out(p: Person, group: Group) -> bool:
    return p.group is group and p.status is Status.PRESENT and bool(p.email or p.phone)
