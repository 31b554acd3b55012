"""Who a contact is: the identity rules that import and search share.

Phone numbers become E.164 (:func:`normalize_phone`), names and places become folded words
(:func:`words`: accents dropped, case-folded), and a record without email or phone is known by
its name and address together (:func:`person_key`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

import phonenumbers

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


def fold(text: str) -> str:
    # Compatibility decomposition, then drop the combining marks: "Zoë" and "Zoe", "ﬁ" and "fi"
    # compare equal (the FTS5 unicode61 tokenizer's remove_diacritics does the same for the index).
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def words(text: str) -> list[str]:
    """Folded words of *text*: letters and digits, accents dropped, case-folded."""
    return WORD.findall(fold(text))


def person_key(name: str, address: str) -> str:
    """Who a record is about when identifiers differ: folded name and address; "" if either is."""
    name_part, address_part = " ".join(words(name)), " ".join(words(address))
    return f"{name_part}|{address_part}" if name_part and address_part else ""
