"""The labelled population's world: what a person is, the places, names and phone numbers.

Plain data and the number allocator: :mod:`worlds.people.cast` makes people of it,
:mod:`worlds.people.searches` the searches, :mod:`worlds.people.population`
the files.

Numbers that reach no one
    North American numbers are only of the 555-0100 to 555-0199 block that every area code keeps
    for fiction (NANPA). British ones are of Ofcom's drama ranges (020 7946 0xxx, 0113 496 0xxx,
    0161 496 0xxx, 0131 496 0xxx, 07700 900xxx). Mexico, Germany, France, India and Spain publish
    no such block, so their numbers have a possible length but lie in ranges libphonenumber's
    metadata lists as unallocated (possible, not valid); :class:`Numbers` checks each one.
    A Mexican or Indian number's ten digits are moreover a North American fiction number, so
    that reading it as a US number (a mistake this population measures) lands in that block.
    Email domains are the made-up ones of ``sample_data/generate_contacts.py`` (the reserved
    example.com and the like will not do: the import refuses special-use domains as invalid).
"""

from __future__ import annotations

import functools
import random
import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import phonenumbers

__all__ = [
    "ContactRow",
    "Group",
    "Numbers",
    "OptOut",
    "Person",
    "Phone",
    "Place",
    "Status",
    "ascii_name",
    "fold",
]


class Group(StrEnum):
    INDIVIDUAL = "individual"  # unique name, own email and phone
    COMMON_NAME = "common_name"  # one of several people with the same name (20 John Smiths)
    HOUSEHOLD = "household"  # shares a landline, sometimes a family mailbox
    SWITCHBOARD = "switchboard"  # shares an office number, sometimes an office mailbox
    NEAR_NAMESAKE = "near_namesake"  # one letter from another person's name
    MULTI_PART = "multi_part"  # accents, double surnames, particles
    FOREIGN = "foreign"  # lives abroad; numbers also written nationally


class Status(StrEnum):
    PRESENT = "present"
    ERASED = "erased"  # imported, then erased
    SUPPRESSED = "suppressed"  # imported, then opted out
    ABSENT = "absent"  # never imported: a search for them must find nobody


@dataclass(frozen=True)
class Place:
    city: str
    state: str
    postcode: str
    country: str
    region: str  # ISO 3166-1 alpha-2
    prefixes: tuple[str, ...]  # US: the city's area codes


@dataclass(frozen=True)
class Phone:
    region: str
    nsn: str  # national significant number
    groups: tuple[int, ...]  # digits per group as people write it

    @property
    def e164(self) -> str:
        return f"+{_DIAL[self.region][0]}{self.nsn}"

    def spaced(self) -> str:
        parts, at = [], 0
        for size in self.groups:
            parts.append(self.nsn[at : at + size])
            at += size
        return " ".join(parts)

    def international(self) -> str:
        return f"+{_DIAL[self.region][0]} {self.spaced()}"

    def national(self) -> str:
        if self.region == "US":
            return f"({self.nsn[:3]}) {self.nsn[3:6]}-{self.nsn[6:]}"
        return _DIAL[self.region][1] + self.spaced()


@dataclass(frozen=True)
class Person:
    id: str
    group: Group
    status: Status
    given: str
    family: str  # every surname word: "Rodríguez Díaz", "van der Berg"
    place: Place
    street: str
    middle: str = ""
    email: str = ""  # own personal address
    work_email: str = ""
    shared_email: str = ""  # family or office mailbox
    phone: Phone | None = None  # own number
    shared_phone: Phone | None = None  # household landline or office switchboard
    company: str = ""
    title: str = ""
    link: str = ""  # household, office or namesake pair

    @functools.cached_property
    def name(self) -> str:
        return " ".join(w for w in (self.given, self.middle, self.family) if w)

    @property
    def short_name(self) -> str:
        return f"{self.given} {self.family}"

    @property
    def address(self) -> str:
        """As the import writes it: street, city, state and postcode, country."""
        place = self.place
        region = " ".join(v for v in (place.state, place.postcode) if v)
        return ", ".join(v for v in (self.street, place.city, region, place.country) if v)


@dataclass(frozen=True)
class ContactRow:
    person: str
    source: str
    name: str
    street: str = ""
    city: str = ""
    state: str = ""
    postcode: str = ""
    country: str = ""
    phone: str = ""  # as written
    email: str = ""
    company: str = ""
    title: str = ""


@dataclass(frozen=True)
class OptOut:
    person: str
    action: str  # erase | suppress
    email: str
    phone: str  # E.164
    name: str = ""  # as the person writes it in the request


@functools.lru_cache(maxsize=65536)
def fold(text: str) -> str:
    """Case-folded words without accents, as a search compares them."""
    if not text.isascii():
        decomposed = unicodedata.normalize("NFKD", text.translate(_LETTERS))
        text = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(_WORD.findall(text.casefold()))


def ascii_name(text: str) -> str:
    """*text* with its accents dropped, as an export that knows only ASCII writes it."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text.translate(_LETTERS))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


_WORD: Final = re.compile(r"[^\W_]+")
# Letters NFKD leaves alone but a plain-ASCII export writes differently.
_LETTERS: Final = str.maketrans({"ß": "ss", "ø": "o", "Ø": "O", "æ": "ae", "ł": "l", "Ł": "L"})

# --------------------------------------------------------------------------- the world

# ISO region: (country calling code, trunk prefix written before a national number).
_DIAL: Final = {
    "US": ("1", ""), "MX": ("52", ""), "GB": ("44", "0"), "DE": ("49", "0"),
    "FR": ("33", "0"), "IN": ("91", ""), "ES": ("34", ""),
}  # fmt: skip
_US_PLACES: Final = """Columbus|OH|43215|614 380;Orlando|FL|32801|407 321
Springfield|IL|62701|217 447;Portland|OR|97204|503 971;Austin|TX|78701|512 737
Denver|CO|80202|303 720;Seattle|WA|98101|206 564
Boston|MA|02108|617 857;Chicago|IL|60601|312 773 872;Phoenix|AZ|85004|602 480
Atlanta|GA|30303|404 678 470;Miami|FL|33130|305 786;Dallas|TX|75201|214 972 469
Jersey City|NJ|07302|201 551;Philadelphia|PA|19107|215 267;Baltimore|MD|21201|410 443
Minneapolis|MN|55401|612;Nashville|TN|37203|615 629;Raleigh|NC|27601|919 984
Albuquerque|NM|87102|505;Madison|WI|53703|608;Burlington|VT|05401|802;Sacramento|CA|95814|916 279
San Diego|CA|92101|619 858;Fresno|CA|93721|559;Washington|DC|20001|202;Houston|TX|77002|713 832 346
Detroit|MI|48226|313;St. Louis|MO|63101|314 557;Salt Lake City|UT|84111|801 385"""
_ABROAD: Final = """MX|Mexico|Ciudad de México|CDMX|06000;MX|Mexico|Guadalajara|Jal.|44100
MX|Mexico|Monterrey|N.L.|64000;MX|Mexico|Puebla|Pue.|72000;GB|United Kingdom|London||ZZ99 1LN
GB|United Kingdom|Leeds||ZZ99 2LS;GB|United Kingdom|Manchester||ZZ99 3MA
GB|United Kingdom|Edinburgh||ZZ99 4ED;DE|Germany|Berlin||10115;DE|Germany|München||80331
DE|Germany|Hamburg||20095;DE|Germany|Köln||50667;FR|France|Paris||75001;FR|France|Lyon||69001
FR|France|Marseille||13001;FR|France|Toulouse||31000;IN|India|Mumbai|MH|400001
IN|India|Delhi|DL|110001;IN|India|Bengaluru|KA|560001;IN|India|Chennai|TN|600001
ES|Spain|Madrid||28001;ES|Spain|Barcelona||08001;ES|Spain|Sevilla||41001;ES|Spain|Valencia||46001"""
# Ofcom drama ranges by city (national number head, then three digits), and the mobile one.
_GB_HEADS: Final = {"London": "2079460", "Leeds": "1134960", "Manchester": "1614960",
                    "Edinburgh": "1314960", "": "7700900"}  # fmt: skip
_GB_GROUPS: Final = {"2": (2, 4, 4), "1": (3, 3, 4), "7": (4, 6)}
# Heads libphonenumber lists as unallocated (checked again per number); then 55501 and 2 digits.
_UNALLOCATED: Final = {
    "DE": (("310", "313", "316", "319", "320", "323"), (3, 7)),
    "FR": (("40", "70", "71", "72", "84", "87"), (1, 2, 2, 2, 2)),
    "ES": (("50", "52", "53", "54", "56", "57"), (3, 3, 3)),
}
_NANP_SHAPED: Final = {"MX": (3, 3, 4), "IN": (5, 5)}  # ten digits a US reading also accepts

US_PLACES: Final = tuple(
    Place(city, state, code, "USA", "US", tuple(npas.split()))
    for city, state, code, npas in (p.split("|") for p in _US_PLACES.replace("\n", ";").split(";"))
)
ABROAD: Final = tuple(
    Place(city, state, code, country, region, ())
    for region, country, city, state, code in (
        p.split("|") for p in _ABROAD.replace("\n", ";").split(";")
    )
)


class Numbers:
    """Hands out numbers, each once; a Mexican or Indian number's digits are kept from US use."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        npas = sorted({npa for place in US_PLACES for npa in place.prefixes})
        self._us = {npa: [f"{npa}55501{n:02d}" for n in range(100)] for npa in npas}
        for pool in self._us.values():
            rng.shuffle(pool)
        self._gb = {head: [f"{head}{n:03d}" for n in range(1000)] for head in _GB_HEADS.values()}
        for pool in self._gb.values():
            rng.shuffle(pool)
        self._used: set[str] = set()
        self._allocated: set[tuple[str, str]] = set()

    def us(self, place: Place) -> Phone:
        npas = [n for n in place.prefixes if self._us[n]] or [n for n in self._us if self._us[n]]
        return Phone("US", self._us[self._rng.choice(npas)].pop(), (3, 3, 4))

    def abroad(self, place: Place, mobile: bool = False) -> Phone:
        if place.region == "US":
            return self.us(place)
        if place.region == "GB":
            head = _GB_HEADS["" if mobile else place.city]
            nsn = self._gb[head].pop()
            return Phone("GB", nsn, _GB_GROUPS[nsn[0]])
        if place.region in _NANP_SHAPED:
            return self._nanp_shaped(place.region)
        heads, groups = _UNALLOCATED[place.region]
        while True:
            nsn = f"{self._rng.choice(heads)}55501{self._rng.randrange(100):02d}"
            if nsn not in self._used and _unallocated(place.region, nsn):
                self._used.add(nsn)
                return Phone(place.region, nsn, groups)

    def _nanp_shaped(self, region: str) -> Phone:
        for npa in self._rng.sample(sorted(self._us), len(self._us)):
            pool = self._us[npa]
            if (region, npa) in self._allocated or not pool:
                continue
            if _unallocated(region, pool[-1]):
                return Phone(region, pool.pop(), _NANP_SHAPED[region])
            self._allocated.add((region, npa))  # its numbers are the country's: skip the code
        raise RuntimeError(f"no fiction numbers left for {region}")

    @staticmethod
    def twin(region: str, us: Phone) -> Phone | None:
        """A *region* number whose digits, read as a US number, are *us*'s; None if allocated."""
        return Phone(region, us.nsn, _NANP_SHAPED[region]) if _unallocated(region, us.nsn) else None


def _unallocated(region: str, nsn: str) -> bool:
    number = phonenumbers.parse(f"+{_DIAL[region][0]}{nsn}")
    return phonenumbers.is_possible_number(number) and not phonenumbers.is_valid_number(number)


# --------------------------------------------------------------------------- names


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def _pairs(text: str) -> tuple[tuple[str, str], ...]:
    return tuple((a, b) for a, b in (w.split("/") for w in text.split()))


US_GIVEN: Final = _words(
    """James John Robert Michael William David Richard Joseph Thomas Charles
Christopher Daniel Matthew Anthony Mark Donald Steven Paul Andrew Joshua Kenneth Kevin Brian
George Timothy Ronald Edward Jason Jeffrey Ryan Jacob Gary Nicholas Eric Jonathan Stephen Larry
Justin Scott Brandon Benjamin Samuel Gregory Alexander Frank Patrick Raymond Jack Dennis Jerry
Tyler Aaron Adam Nathan Henry Douglas Zachary Peter Kyle Noah Ethan Jeremy Walter Christian Keith
Roger Terry Austin Sean Gerald Carl Harold Dylan Arthur Lawrence Jesse Bruce Gabriel Logan Alan
Albert Wayne Vincent Mason Ralph Russell Philip Eugene Mary Patricia Jennifer Linda Elizabeth
Barbara Susan Jessica Sarah Karen Lisa Nancy Betty Sandra Margaret Ashley Kimberly Emily Donna
Michelle Carol Amanda Melissa Deborah Stephanie Dorothy Rebecca Sharon Laura Cynthia Amy Kathleen
Angela Shirley Brenda Emma Anna Pamela Nicole Samantha Katherine Christine Helen Rachel Carolyn
Janet Catherine Heather Diane Olivia Julie Joyce Victoria Ruth Virginia Lauren Kelly Christina
Joan Evelyn Judith Andrea Hannah Megan Cheryl Jacqueline Martha Madison Teresa Gloria Janice
Abigail Sophia Frances Jean Alice Judy Isabella Julia Grace Amber Denise Danielle Marilyn
Charlotte Natalie Diana Brittany Doris Kayla Alexis Lori Marie Mia Dana Lena Joel Erin"""
)
# In order of frequency, drawn with weight 1 / (rank + 12): Smith is common enough that a
# name search meets more Smiths than a search ranking 50 full-text candidates would see.
US_FAMILY: Final = _words(
    """Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez
Martinez Hernandez Lopez Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez
Thompson White Harris Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott
Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts
Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins Reyes Stewart Morris Morales Murphy
Cook Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly Howard Ramos Kim Cox Ward
Richardson Watson Brooks Chavez Wood James Bennett Gray Mendoza Ruiz Hughes Price Alvarez
Castillo Sanders Patel Myers Long Ross Foster Jimenez Powell Jenkins Perry Russell Sullivan Bell
Coleman Butler Henderson Barnes Fisher Vasquez Simmons Romero Jordan Patterson Hamilton Graham
Reynolds Griffin Wallace Moreno West Cole Hayes Bryant Herrera Gibson Ellis Tran Medina Aguilar
Stevens Murray Ford Castro Marshall Owens Harrison Fernandez Woods Kennedy Wells Vargas Chen
Freeman Webb Tucker Guzman Burns Crawford Olson Simpson Porter Hunter Gordon Mendez Silva Shaw
Snyder Mason Dixon Hunt Hicks Holmes Palmer Wagner Black Robertson Boyd Rose Stone Salazar Fox
Warren Mills Meyer Rice Schmidt Garza Daniels Ferguson Nichols Stephens Soto Weaver Ryan Gardner
Payne Grant Dunn Kelley Spencer Hawkins Arnold Pierce Hansen Peters Santos Hart Bradley Knight
Elliott Cunningham Duncan Armstrong Hudson Carroll Lane Riley Andrews Alvarado Ray Delgado Berry
Perkins Hoffman Johnston Matthews Richards Willis Carpenter Lawrence Sandoval"""
)
SPANISH_GIVEN: Final = _words(
    """Laura Roberto José María Juan Carmen Luis Ana Jorge Lucía Miguel
Sofía Javier Elena Alejandro Isabel Andrés Paula Fernando Marta Ramón Beatriz Sergio Pilar Raúl
Inés Álvaro Rocío Óscar Dolores Jesús Guadalupe Ximena Iñaki Nicolás Mónica Joaquín"""
)
SPANISH_FAMILY: Final = _words(
    """García Rodríguez Martínez Hernández López González Pérez Sánchez
Ramírez Torres Flores Rivera Gómez Díaz Cruz Morales Reyes Gutiérrez Ortiz Chávez Ruiz Jiménez
Álvarez Castillo Romero Vázquez Domínguez Núñez Navarro Muñoz Méndez Suárez Ibáñez Peña Cortés
Mejía Fernández Herrera Medina Aguilar Vargas Castro Ortega Delgado Rubio Molina Serrano"""
)
# Other names of several words or with letters beyond ASCII, for people living in the US.
PARTICLE_NAMES: Final = tuple(
    tuple(n.split("|"))
    for n in """Pieter|van der Berg;Anouk|van Dijk;Ana|de la Cruz;Giulia|D'Angelo;Sean|O'Brien
Fiona|MacLeod;João|dos Santos;Mariana|da Silva;Omar|al-Rashid;Leila|Abu-Hamdan;Søren|Kjærgaard
Łukasz|Wójcik;Antonín|Dvořák;Zoë|Åberlund;Björn|Ångström;Marie-Claire|Dubois;Jean-Luc|Lefèvre
Anne-Sophie|Château;Minh Anh|Nguyễn Thị;Siobhán|Ní Bhriain;Ólafur|Guðmundsson;Chloé|Le Gall
François|de Saint-Exupéry;Hélène|d'Aubigné;Renée|Zellweger-Hart;Dmitri|Petrov-Vodkin
Seo-yeon|Park;Kofi|Ali;Kofi|Asante;Ngozi|Okonkwo-Adeyemi""".replace("\n", ";").split(";")
)
ABROAD_NAMES: Final = {
    "GB": (
        """Oliver George Harry Jack Amelia Isla Ava Freya Charlotte Alfie Rhys Callum Siobhan
    Niamh Eilidh Angus""",
        """Taylor Evans Davies Wright Walker Robinson Thompson Hughes Edwards
    Patel Khan Ahmed MacLeod McDonald O'Brien Fraser Whitworth Ashworth Pemberton""",
    ),
    "DE": (
        """Lukas Jonas Leon Finn Felix Maximilian Anna Lena Lea Hannah Marie Sophie Jürgen Uwe
    Dieter Sabine Ulrike Birgit""",
        """Müller Schmidt Schneider Fischer Weber Meyer Wagner Becker
    Schulz Hoffmann Schäfer Koch Bauer Richter Klein Wolf Schröder Neumann Zimmermann Braun
    Krüger Hartmann Lange Köhler Jäger Weiß Groß""",
    ),
    "FR": (
        """Jean Pierre Marie Camille Léa Chloé Manon Hugo Théo Louis Lucas Gabriel Élodie Hélène
    Amélie François Jean-Luc Marie-Claire""",
        """Martin Bernard Dubois Thomas Robert Richard Petit
    Durand Leroy Moreau Simon Laurent Lefèvre Michel Garnier Faure Rousseau Blanc Guérin Boyer""",
    ),
    "IN": (
        """Aarav Vihaan Arjun Rohan Priya Ananya Diya Kavya Rahul Amit Sanjay Deepika Lakshmi
    Venkat Suresh Meera Anil Pooja""",
        """Sharma Verma Gupta Singh Kumar Patel Reddy Iyer Nair
    Menon Rao Joshi Mehta Chatterjee Banerjee Venkataraman Krishnamurthy Subramanian""",
    ),
}
NICKNAMES: Final = {
    "Robert": "Bob", "William": "Bill", "James": "Jim", "Michael": "Mike", "Elizabeth": "Liz",
    "Katherine": "Kate", "Joseph": "Joe", "Thomas": "Tom", "Christopher": "Chris",
    "Daniel": "Dan", "Anthony": "Tony", "Jennifer": "Jen", "Patricia": "Patty", "Susan": "Sue",
    "Deborah": "Debbie", "Alexander": "Alex", "Benjamin": "Ben", "Samuel": "Sam",
    "Nicholas": "Nick", "Steven": "Steve", "Edward": "Ed", "Margaret": "Peggy", "Richard": "Rick",
    "Timothy": "Tim", "Rebecca": "Becky", "Victoria": "Vicky", "Gregory": "Greg",
}  # fmt: skip
# Pairs one letter apart: given names, then surnames (both halves are real names).
GIVEN_PAIRS: Final = _pairs(
    """Mark/Mary Dana/Dina Carl/Karl Jon/Jan
Lena/Lina Joel/Joey Eric/Erin Alan/Allan Sara/Sarah Brian/Bryan Julia/Julie Lisa/Liza Jean/Joan
Anna/Anne Paula/Paul Marian/Marion Leon/Leona Erica/Erika"""
)
FAMILY_PAIRS: Final = _pairs(
    """Hill/Hall Gray/Grey Reid/Reed Olsen/Olson
Hansen/Hanson Clark/Clarke Brown/Browne Dunn/Dunne Lowe/Love Fischer/Fisher Meyer/Meier
Schmidt/Schmitt Peterson/Petersen Thomson/Thompson Mathews/Matthews Philips/Phillips
Rogers/Rodgers Baker/Barker Carlson/Carlsen Nielsen/Nielson"""
)
COMPANY_HEADS: Final = """Bluefin;Cedar Peak;Harborlight;Ironbridge;Maplecrest;Silverline;Redwood
Summit Ridge;Lakeside;Brightpath;Copperleaf;Stonegate;Willowbrook;Northgate;Riverbend;Oakhaven
Pinecrest;Clearwater;Foxglove;Kestrel""".replace("\n", ";").split(";")
COMPANY_KINDS: Final = """Logistics;Software;Insurance;Engineering;Dental;Analytics;Legal Group
Realty;Pediatrics;Tutoring;Catering;Builders""".replace("\n", ";").split(";")
TITLES: Final = """Analyst;Accountant;Buyer;Clerk;Designer;Dispatcher;Engineer;Office Manager
Paralegal;Project Manager;Sales Associate;Software Developer;Nurse;Receptionist;Director
Technician""".replace("\n", ";").split(";")
STREETS: Final = {
    "US": ("Oak St", "Maple Ave", "Cedar Ln", "Pine St", "Elm St", "Lakeview Dr", "Park Ave",
           "Sunset Blvd", "Willow Way", "River Rd", "Highland Ave", "Chestnut St", "Birch Ct"),
    "GB": ("Oak Road", "Church Lane", "Victoria Street", "Mill Close", "Station Road"),
    "MX": ("Av. Insurgentes", "Calle Morelos", "Calle Juárez", "Av. Reforma", "Calle Hidalgo"),
    "ES": ("Calle Mayor", "Calle del Sol", "Avenida de la Paz", "Calle Real"),
    "DE": ("Lindenstraße", "Hauptstraße", "Gartenweg", "Bahnhofstraße", "Schillerstraße"),
    "FR": ("rue des Lilas", "avenue Victor Hugo", "rue de la Paix", "boulevard Voltaire"),
    "IN": ("MG Road", "Station Road", "Gandhi Nagar", "Park Street", "Nehru Marg"),
}  # fmt: skip
PERSONAL_DOMAINS: Final = ("madeup-mail.net", "notreal-inbox.org", "fictional-post.net")
BUSINESS_DOMAIN: Final = "madeup-biz.net"  # employers' addresses are at <company>.madeup-biz.net
