"""The typing model: which domains are one slip of the fingers away from a provider's.

A slip is one of the errors people make at a keyboard (Damerau, "A technique for computer
detection and correction of spelling errors", CACM 1964, found four kinds behind 80% of
misspellings; the keyboard's geometry decides which substitutions and insertions are likely):

========================  ===========================================================
``adjacent key``          a key replaced by one that touches it (``gmaik.com``)
``insertion``             a key that touches its neighbour typed as well (``gmaiol.com``),
                          or any key typed after the name or the ending (``gmails.com``)
``deletion``              a letter left out (``gmal.com``)
``doubling``              a letter typed twice (``gmaill.com``)
``transposition``         two neighbouring letters swapped (``gmial.com``)
``tld slip``              any of the above in the ending (``gmail.con``, ``gmail.cpm``,
                          ``hotmail.co.ul``)
========================  ===========================================================

"Touches" is taken on the three layouts the providers' users type on: US QWERTY, German QWERTZ
(y and z swapped) and French AZERTY (a/q and z/w swapped, m beside l): ``gmx.de`` and ``web.de``
are typed on QWERTZ keyboards, ``orange.fr`` and ``free.fr`` on AZERTY ones.

:func:`slip_index` lists every slip of every provider once; a domain that is a slip of two
providers says nothing about which was meant, and is left out.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final


class Slip(StrEnum):
    ADJACENT_KEY = "adjacent key"
    INSERTION = "insertion"
    DELETION = "deletion"
    DOUBLING = "doubling"
    TRANSPOSITION = "transposition"
    TLD = "tld slip"

    @property
    def words(self) -> str:
        """The slip in words, for DETAIL."""
        return _WORDS[self]


_WORDS: Final = {
    Slip.ADJACENT_KEY: "a neighbouring key typed for one letter",
    Slip.INSERTION: "a key too many",
    Slip.DELETION: "a letter left out",
    Slip.DOUBLING: "a letter typed twice",
    Slip.TRANSPOSITION: "two letters swapped",
    Slip.TLD: "a slip in the ending",
}

# Rows of each layout and how far each row is shifted to the right, in key widths.
_LAYOUTS: Final = (
    ("1234567890-", "qwertyuiop", "asdfghjkl", "zxcvbnm"),  # US QWERTY
    ("1234567890", "qwertzuiop", "asdfghjkl", "yxcvbnm"),  # German QWERTZ
    ("1234567890", "azertyuiop", "qsdfghjklm", "wxcvbn"),  # French AZERTY
)
_STAGGER: Final = (0.0, 0.5, 0.75, 1.25)


def _neighbours() -> Mapping[str, frozenset[str]]:
    """Each key's neighbours on any of the layouts (same row, or the row above or below)."""
    found: dict[str, set[str]] = {}
    for rows in _LAYOUTS:
        position = {
            key: (row, column + _STAGGER[row])
            for row, keys in enumerate(rows)
            for column, key in enumerate(keys)
        }
        for a, (row_a, x_a) in position.items():
            for b, (row_b, x_b) in position.items():
                same_row = row_a == row_b and abs(x_a - x_b) == 1
                next_row = abs(row_a - row_b) == 1 and abs(x_a - x_b) < 1
                if same_row or next_row:
                    found.setdefault(a, set()).add(b)
    return MappingProxyType({key: frozenset(keys) for key, keys in found.items()})


NEIGHBOURS: Final = _neighbours()
_KEYS: Final = "abcdefghijklmnopqrstuvwxyz0123456789"


def touching(a: str, b: str) -> bool:
    """True if keys *a* and *b* touch on one of the layouts."""
    return b in NEIGHBOURS.get(a, frozenset())


def label_slips(label: str) -> dict[str, Slip]:
    """Every one-slip variant of *label* (a name, or one label of an ending) and its slip."""
    found: dict[str, Slip] = {}
    for i, key in enumerate(label):
        head, tail = label[:i], label[i + 1 :]
        found.setdefault(head + tail, Slip.DELETION)
        found.setdefault(head + key + key + tail, Slip.DOUBLING)
        if tail:
            found.setdefault(head + tail[0] + key + tail[1:], Slip.TRANSPOSITION)
        for near in sorted(NEIGHBOURS.get(key, ())):
            found.setdefault(head + near + tail, Slip.ADJACENT_KEY)
            found.setdefault(head + near + key + tail, Slip.INSERTION)
            found.setdefault(head + key + near + tail, Slip.INSERTION)
    for key in _KEYS:
        found.setdefault(label + key, Slip.INSERTION)  # one key too many at the end
    found.pop(label, None)
    return found


def domain_slips(domain: str, suffix: str) -> dict[str, Slip]:
    """Every one-slip variant of *domain*, whose public suffix is *suffix* ("com", "co.uk")."""
    name = domain[: -len(suffix) - 1]
    found = {f"{v}.{suffix}": slip for v, slip in label_slips(name).items() if _label_ok(v)}
    labels = suffix.split(".")
    for i, label in enumerate(labels):
        for variant in label_slips(label):
            if len(variant) >= 2 and variant.isalpha():
                ending = ".".join((*labels[:i], variant, *labels[i + 1 :]))
                found.setdefault(f"{name}.{ending}", Slip.TLD)
    found.pop(domain, None)
    return found


def _label_ok(label: str) -> bool:
    """A host name label (RFC 1123 §2.1): letters, digits and hyphens, no hyphen at an end."""
    return bool(label) and label[0] != "-" and label[-1] != "-"


@functools.cache
def slip_index(providers: tuple[tuple[str, str], ...]) -> Mapping[str, tuple[str, Slip]]:
    """Slip -> (provider, slip) for the (provider, public suffix) pairs given; a slip of two
    providers, or a provider itself, is not in it. Built once per provider list."""
    index: dict[str, tuple[str, Slip]] = {}
    shared: set[str] = {domain for domain, _ in providers}
    for domain, suffix in providers:
        for slipped, slip in domain_slips(domain, suffix).items():
            if slipped in index and index[slipped][0] != domain:
                shared.add(slipped)
            index.setdefault(slipped, (domain, slip))
    return MappingProxyType({d: hit for d, hit in index.items() if d not in shared})


def provider_suffixes(
    providers: Iterable[str], suffix_of: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    """The (provider, public suffix) pairs :func:`slip_index` takes, in a stable order."""
    return tuple(sorted((p, suffix_of[p]) for p in providers))
