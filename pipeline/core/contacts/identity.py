"""Who a contact is: the identity rules that import and search share.

Phone numbers become E.164 (:func:`normalize_phone`), read in the country of the record's
address (:func:`country_region`) or else the configured one; names and places become folded
words (:func:`words`: accents dropped, case-folded); a record without email or phone is known by
its name and address together (:func:`person_key`). Names have rules of their own in
:mod:`pipeline.core.contacts.names`.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Final

import phonenumbers
from phonenumbers import PhoneMetadata

WORD: Final = re.compile(r"[^\W_]+")


def normalize_phone(raw: str, region: str) -> str:
    """E.164 form of *raw*, or "" when it is no possible number.

    "Possible" (phonenumbers' length check for the number's country) rather than "valid" (the
    number lies in an allocated range): allocations change and lag behind, and a wrong length is
    what typos produce. Numbers without a +country code are read as numbers of *region*.
    A number that would be possible only locally (seven US digits without an area code) is none.
    """
    text = raw.strip()
    if not text:
        return ""
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return ""
    reason = phonenumbers.is_possible_number_with_reason(number)
    if reason != phonenumbers.ValidationResult.IS_POSSIBLE:
        return ""
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


# Trunk prefixes written before a national number (0 in most of the world, 1 in North America,
# 8 and 06 in a few countries), from phonenumbers' metadata.
_TRUNK_PREFIXES: Final = sorted(
    {
        prefix
        for region in phonenumbers.SUPPORTED_REGIONS
        if (prefix := PhoneMetadata.metadata_for_region(region).national_prefix)  # type: ignore[union-attr]
    }
)
_CALLING_CODES: Final = sorted(phonenumbers.COUNTRY_CODE_TO_REGION_CODE)


def phone_readings(raw: str) -> list[str]:
    """Every E.164 number *raw* may be, written in any country: itself when it has a +country
    code; else its digits, with and without a trunk prefix, after every country calling code.
    A superset: :func:`reads_as` tells which of them *raw* really is in the number's country."""
    digits = re.sub(r"\D", "", raw)
    if raw.strip().startswith("+"):
        return [f"+{digits}"]
    bodies = {digits} | {digits[len(p) :] for p in _TRUNK_PREFIXES if digits.startswith(p)}
    return sorted(f"+{code}{body}" for code in _CALLING_CODES for body in bodies if body)


def reads_as(raw: str, e164: str) -> bool:
    """Whether *raw*, read as a number of *e164*'s country, is *e164*. A calling code several
    countries share (+1, +44) is tried in each of them: the number's ranges may be unallocated
    (the fiction ranges are), which leaves phonenumbers unable to say which one it is in."""
    if raw.strip().startswith("+"):
        return normalize_phone(raw, "US") == e164
    try:
        code = phonenumbers.parse(e164).country_code
    except phonenumbers.NumberParseException:
        return False
    regions = phonenumbers.region_codes_for_country_code(code) if code else ()
    return any(normalize_phone(raw, region) == e164 for region in regions)


@functools.lru_cache(maxsize=65536)
def national_number(e164: str) -> str:
    """The national significant number of an E.164 number: its digits after the country code."""
    try:
        return str(phonenumbers.parse(e164).national_number)
    except phonenumbers.NumberParseException:
        return ""


def country_region(country: str) -> str:
    """The ISO 3166-1 alpha-2 code of a country as an address writes it ("Mexico", "México",
    "Deutschland", "UK", "USA", "DE"), or "" when unknown. Names are those phonenumbers'
    geocoding data has for each country, in every language it has them in."""
    return _country_names().get(" ".join(words(country)), "")


@functools.cache
def _country_names() -> dict[str, str]:
    """Built on first use: phonenumbers' geocoding data takes a third of a second to load,
    which a command that never reads a contact file should not pay."""
    from phonenumbers.geodata.locale import LOCALE_DATA

    names: dict[str, str] = {}
    for region, by_language in LOCALE_DATA.items():
        if region not in phonenumbers.SUPPORTED_REGIONS:
            continue
        names[region.casefold()] = region
        for value in by_language.values():
            # "*xx": the same as the name in language xx.
            text = by_language.get(value[1:], "") if value.startswith("*") else value
            if text and not text.startswith("*"):
                names.setdefault(" ".join(words(text)), region)
    # Abbreviations addresses use that are no ISO alpha-2 code.
    for alias, region in _ALIASES.items():
        names[alias] = region
    return names


_ALIASES: Final = {
    "usa": "US", "u s a": "US", "u s": "US", "united states of america": "US", "america": "US",
    "uk": "GB", "u k": "GB", "great britain": "GB", "england": "GB", "scotland": "GB",
    "wales": "GB", "northern ireland": "GB", "uae": "AE", "the netherlands": "NL",
    "holland": "NL", "deutschland": "DE", "espana": "ES", "mexique": "MX",
}  # fmt: skip

# Translations NFKD does not make: letters that are not a base letter plus a mark.
_LETTERS: Final = str.maketrans(
    {"ß": "ss", "ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ł": "l",
     "Ł": "L", "đ": "d", "Đ": "D", "þ": "th", "Þ": "Th", "\u0131": "i"}
)  # fmt: skip


@functools.lru_cache(maxsize=65536)
def fold(text: str) -> str:
    # Compatibility decomposition, then drop the combining marks: "Zoë" and "Zoe", "ﬁ" and "fi"
    # compare equal; "ø", "ł", "æ" become "o", "l", "ae" as an ASCII spelling writes them.
    if text.isascii():
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text.translate(_LETTERS))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def words(text: str) -> list[str]:
    """Folded words of *text*: letters and digits, accents dropped, case-folded."""
    return WORD.findall(fold(text))


def person_key(name: str, address: str) -> str:
    """Who a record is about when identifiers differ: folded name and address; "" if either is."""
    name_part, address_part = " ".join(words(name)), " ".join(words(address))
    return f"{name_part}|{address_part}" if name_part and address_part else ""
