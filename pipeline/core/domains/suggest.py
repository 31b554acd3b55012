"""Suggest the intended domain for a mistyped one ("gmial.com" -> "gmail.com").

:func:`suggest_domain` returns the corrected ASCII domain, or "" when it has no
confident suggestion; it never returns its input. The input is compared in
normalised form (trimmed, lower case, no trailing dot). Rules, in order:

1. A popular domain or a free/consumer provider is never corrected: "ymail.com"
   and "mail.com" are one edit away from "gmail.com" but are real providers. Nor is a
   domain known to be real (``near_providers.txt``, ``lists.extra_legitimate``).
2. A curated typo (``known_typos.txt``, e.g. "gmial.com", "hotmail.co") maps to
   its correct domain, even when the typo domain has a working MX: typo-squatters
   often run mail servers on them.
3. Otherwise the nearest popular domain is found with the optimal string
   alignment distance (Levenshtein plus adjacent transposition as one edit,
   because swapped neighbours - "gmial" - are among the most common typing
   errors; Damerau, "A technique for computer detection and correction of
   spelling errors", CACM 1964). A match is accepted at distance <= 1 for inputs
   of up to 8 characters and <= 2 for longer ones: short names have too many
   real neighbours. If several popular domains tie at the best distance the
   result is "" (no guess), except that at distance 1 a single candidate reached
   by a typing slip - one key replaced by a neighbouring QWERTY key, or two
   adjacent keys swapped - wins over candidates that need an insertion, a
   deletion or a far-away key (mailcheck, the JavaScript form validator, also
   breaks ties by keyboard distance). A tie is final: rule 5 is not tried.
4. A domain with its own working MX (``has_working_mx=True``) is only corrected
   by rule 2, or when it is a squat (:mod:`pipeline.core.domains.squats`: one typing slip
   from a major provider, its mail not at that provider's, no list knowing it as real), or
   when it is one edit away from one of the biggest providers
   (:data:`MX_OVERRIDE_PROVIDERS`, nearest among them, ties broken as in rule 3)
   and its MX (``mx``) is not one of those providers' own mail hosts
   (the exchanges of ``mail_providers.txt``: their own registration, or a customer of
   theirs), and either
   a. it keeps that provider's first letter ("gmaiq.com"), or
   b. its MX is a third party's that is no mainstream mail host
      (``squats.MAIL_HOSTING``): not under the domain's own name, not Microsoft 365,
      Google Workspace or the like. Typo-squatters point the MX of their
      near-misses ("otmail.com", "uotlook.com") at a parking service's
      catch-all host; real organisations near a provider's name receive mail on
      their own hosts or at a mainstream one ("cloud.com", "wahoo.com").
   aol.com, live.com and msn.com are deliberately not in that list: their
   three- and four-letter names are one edit away from many real companies
   ("bol.com", "aon.com", "line.com"); their common typos are in rule 2 instead.
5. If rule 3 found nothing and the top-level domain is not a real one according
   to the Public Suffix List ("acme.con", "shop.cmo"), the same name is suggested
   with the closest common suffix from :data:`COMMON_SUFFIXES` at distance 1,
   breaking ties as in rule 3 and abstaining otherwise. Not applied to a domain
   with a working MX (a domain under a non-existent TLD cannot have one anyway).
6. When DNS could not answer (``dns_answered=False``: offline, timeouts,
   SERVFAIL), the domain may be a real one with mail of its own, and rule 4's
   protection cannot be applied: only rule 2 and the squat rule's list evidence correct
   it ("gmaio.com" -> "gmail.com"; "aon.com", no typing slip, stays).
   A domain under a TLD that does not exist cannot be real, so rules 3 and 5
   still apply to it.
7. A TLD fix (rule 5) whose result is itself a near-miss of a popular domain
   by rule 3 ("ahoo.con" -> "ahoo.com" -> "yahoo.com") corrects both; a tie
   there abstains rather than return a half-corrected name.

:func:`suggest` also says why, in words, for DETAIL; :func:`suggest_domain` is its domain.

Speed: the function is called once per distinct domain. The per-call work for an
ordinary domain is two hash look-ups and one rapidfuzz ``process.extract`` over
the popular domains with a distance cutoff (which rejects most candidates on
their length alone), plus one Public Suffix List look-up for a domain without
MX that matched nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import idna
from rapidfuzz import process
from rapidfuzz.distance import OSA

from pipeline.core.domains.squats import MAIL_HOSTING, squat
from pipeline.core.lists import DomainLists, lookup_key

# Rule 3: longest input (in characters) that only accepts a single edit.
SHORT_DOMAIN_MAX_LEN = 8

# Rule 4: providers whose one-edit neighbours are corrected even with a working MX.
MX_OVERRIDE_PROVIDERS = frozenset(
    {
        "gmail.com",
        "googlemail.com",
        "yahoo.com",
        "hotmail.com",
        "outlook.com",
        "icloud.com",
        "hotmail.co.uk",
        "yahoo.co.uk",
        "hotmail.fr",
    }
)

# Rule 5: real suffixes offered as replacements for a non-existent TLD. Kept short
# on purpose: every extra two-letter ccTLD creates more ties. "co" and "cm" are left
# out because they are themselves the classic truncations of "com".
COMMON_SUFFIXES = (
    "com",
    "net",
    "org",
    "edu",
    "gov",
    "info",
    "biz",
    "io",
    "uk",
    "co.uk",
    "org.uk",
    "ac.uk",
    "de",
    "fr",
    "it",
    "es",
    "nl",
    "be",
    "ch",
    "at",
    "se",
    "no",
    "dk",
    "fi",
    "pl",
    "pt",
    "ie",
    "cz",
    "ru",
    "ua",
    "ca",
    "us",
    "au",
    "com.au",
    "nz",
    "co.nz",
    "jp",
    "co.jp",
    "cn",
    "com.cn",
    "in",
    "co.in",
    "br",
    "com.br",
    "mx",
    "com.mx",
    "ar",
    "com.ar",
    "za",
    "co.za",
    "kr",
    "co.kr",
    "sg",
    "com.sg",
    "hk",
    "com.hk",
    "tw",
    "com.tw",
    "tr",
    "com.tr",
    "gr",
    "hu",
    "ro",
    "il",
    "co.il",
)

_OVERRIDE_ORDER = tuple(sorted(MX_OVERRIDE_PROVIDERS))

_QWERTY_ROWS = ("1234567890-", "qwertyuiop", "asdfghjkl", "zxcvbnm")
# Horizontal offset of each row on a physical keyboard, in key widths.
_QWERTY_STAGGER = (0.0, 0.5, 0.75, 1.25)


def _qwerty_neighbours() -> frozenset[tuple[str, str]]:
    """Return the ordered pairs of keys that touch on a US QWERTY keyboard."""
    position = {
        key: (row, column + _QWERTY_STAGGER[row])
        for row, keys in enumerate(_QWERTY_ROWS)
        for column, key in enumerate(keys)
    }
    pairs: set[tuple[str, str]] = set()
    for a, (row_a, x_a) in position.items():
        for b, (row_b, x_b) in position.items():
            same_row = row_a == row_b and abs(x_a - x_b) == 1
            next_row = abs(row_a - row_b) == 1 and abs(x_a - x_b) < 1
            if same_row or next_row:
                pairs.add((a, b))
    return frozenset(pairs)


_ADJACENT_KEYS = _qwerty_neighbours()


@dataclass(frozen=True)
class _Nearest:
    """Outcome of a nearest-neighbour search: the winner, or an ambiguous tie."""

    domain: str  # "" when ambiguous
    distance: int


@dataclass(frozen=True)
class Suggestion:
    """The domain suggested ("" for none) and why, in words."""

    domain: str = ""
    why: str = ""


_NONE = Suggestion()


def suggest_domain(
    domain: str,
    *,
    has_working_mx: bool,
    lists: DomainLists,
    mx: str = "",
    dns_answered: bool = True,
) -> str:
    """Return the corrected ASCII domain for a likely typo, or "" (see module docstring).

    *mx* is the domain's best MX host when it has one ("" when unknown); *dns_answered* is
    False when DNS could not say whether the domain exists (offline, timeouts, SERVFAIL).
    """
    found = suggest(
        domain, has_working_mx=has_working_mx, lists=lists, mx=mx, dns_answered=dns_answered
    )
    return found.domain


def suggest(
    domain: str,
    *,
    has_working_mx: bool,
    lists: DomainLists,
    mx: str = "",
    dns_answered: bool = True,
) -> Suggestion:
    """:func:`suggest_domain`'s answer, with why it was made."""
    key = lookup_key(domain)
    if not key or key in lists.free_providers or key in lists.legitimate:
        return _NONE
    fixed = lists.known_typos.get(key)
    if fixed is not None:
        return (
            Suggestion(fixed, f"{key} is a known misspelling of {fixed}.")
            if fixed != key
            else _NONE
        )
    if not dns_answered:
        found = squat(key, lists, mx="", dns_answered=False)
        if found is not None:
            return Suggestion(found.domain, found.why)
        if _tld_is_real(key, lists):
            return _NONE  # rule 6: maybe a real domain with mail of its own
    query = _unicode_form(key)
    if has_working_mx:
        found = squat(key, lists, mx=mx, dns_answered=True)
        if found is not None:
            return Suggestion(found.domain, found.why)
        return _squatted(query, key, mx, lists)
    nearest = _nearest(query, lists.popular_domains)
    if nearest is not None:
        if not nearest.domain:
            return _NONE  # a tie is final
        edits = "one edit" if nearest.distance == 1 else f"{nearest.distance} edits"
        return Suggestion(
            nearest.domain, f"{key} has no mail server and is {edits} from {nearest.domain}."
        )
    return _fix_tld(key, lists)


def _squatted(query: str, key: str, mx: str, lists: DomainLists) -> Suggestion:
    """Rule 4: a domain with its own MX, one edit from a top provider."""
    if not _near_override_provider(query, any_letter=True):
        return _NONE  # most domains stop here, before any search
    nearest = _nearest(query, _OVERRIDE_ORDER, cutoff=1)
    if nearest is None or nearest.distance != 1 or not nearest.domain:
        return _NONE
    host = lists.registrable_domain(mx) if mx else ""
    if host in lists.provider_exchanges:
        return _NONE  # the provider's own mail hosts: its domain, or one of its customers
    found = Suggestion(
        nearest.domain,
        f"{key} is one edit from {nearest.domain} and its mail does not go to "
        f"{nearest.domain}'s own mail hosts.",
    )
    if query[:1] == nearest.domain[:1]:
        return found
    third_party = bool(host) and host != lists.registrable_domain(key)
    return found if third_party and host not in MAIL_HOSTING else _NONE


def _nearest(query: str, choices: tuple[str, ...], cutoff: int | None = None) -> _Nearest | None:
    """Return the single closest choice within the rule-3 cutoff, a tie, or None."""
    if cutoff is None:
        cutoff = 1 if len(query) <= SHORT_DOMAIN_MAX_LEN else 2
    matches = process.extract(query, choices, scorer=OSA.distance, score_cutoff=cutoff, limit=None)
    if not matches:
        return None
    best = min(distance for _, distance, _ in matches)
    tied = list(dict.fromkeys(choice for choice, distance, _ in matches if distance == best))
    return _break_tie(query, tied, int(best))


def _break_tie(query: str, tied: list[str], distance: int) -> _Nearest:
    if len(tied) == 1:
        return _Nearest(tied[0], distance)
    if distance == 1:
        slips = [candidate for candidate in tied if _is_typing_slip(query, candidate)]
        if len(slips) == 1:
            return _Nearest(slips[0], distance)
    return _Nearest("", distance)


def _is_typing_slip(typed: str, intended: str) -> bool:
    """True if ``typed`` is ``intended`` with one key hit as its neighbour or two keys swapped."""
    if len(typed) != len(intended):
        return False
    positions = [i for i, (t, c) in enumerate(zip(typed, intended, strict=True)) if t != c]
    if len(positions) == 1:
        i = positions[0]
        return (typed[i], intended[i]) in _ADJACENT_KEYS
    if len(positions) == 2 and positions[1] == positions[0] + 1:
        i = positions[0]
        return typed[i] == intended[i + 1] and typed[i + 1] == intended[i]
    return False


def _near_override_provider(query: str, *, any_letter: bool = False) -> bool:
    if len(query) not in _NEAR_LENGTHS:
        return False  # one edit changes a length by one at most: most domains stop here
    return any(
        (any_letter or query[:1] == provider[:1])
        and OSA.distance(query, provider, score_cutoff=1) <= 1
        for provider in MX_OVERRIDE_PROVIDERS
    )


def _fix_tld(key: str, lists: DomainLists) -> Suggestion:
    """Rule 5: replace a non-existent TLD by the closest common suffix, or suggest nothing."""
    labels = key.split(".")
    if len(labels) < 2 or not all(labels) or _is_real_tld(labels[-1], lists):
        return _NONE
    candidates: dict[str, int] = {}
    for suffix in COMMON_SUFFIXES:
        width = suffix.count(".") + 1
        if len(labels) <= width:
            continue
        tail = ".".join(labels[-width:])
        distance = OSA.distance(tail, suffix, score_cutoff=1)
        if distance <= 1:
            fixed = ".".join((*labels[:-width], suffix))
            candidates[fixed] = min(distance, candidates.get(fixed, distance))
    if not candidates:
        return _NONE
    best = min(candidates.values())
    tied = [fixed for fixed, distance in candidates.items() if distance == best]
    winner = _break_tie(key, tied, best).domain
    if not winner or winner == key:
        return _NONE
    # Rule 7: the name may be misspelt too ("ahoo.con"): fix both, or abstain on a tie.
    named = _nearest(_unicode_form(winner), lists.popular_domains)
    if named is not None and not named.domain:
        return _NONE
    fixed = winner if named is None else named.domain
    return Suggestion(fixed, f"{key} ends in .{labels[-1]}, which is no top-level domain.")


def _is_real_tld(label: str, lists: DomainLists) -> bool:
    return lists.is_tld(label)


def _tld_is_real(key: str, lists: DomainLists) -> bool:
    return _is_real_tld(key.rsplit(".", 1)[-1], lists)


def _unicode_form(key: str) -> str:
    """Return the Unicode form of an IDNA domain for fuzzy matching ("xn--gml-..." -> "gmäl...").

    Typos in internationalised input are single characters in Unicode but whole
    punycode runs in ASCII, so distances are only meaningful on the Unicode form.
    """
    if "xn--" not in key:
        return key
    try:
        return idna.decode(key)
    except UnicodeError:
        return key


# The lengths a domain one edit from a top provider can have.
_NEAR_LENGTHS = frozenset(len(p) + d for p in MX_OVERRIDE_PROVIDERS for d in (-1, 0, 1))
