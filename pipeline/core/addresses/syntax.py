"""Email address syntax: the precise, per-value parser and the rules it shares with the batch.

Two entry points share one set of rules (the constants below):

* :func:`parse_address` is the precise, per-value parser built on ``email_validator``.
* :func:`~pipeline.core.addresses.normalize.normalize_column` is the batch entry: it decides the
  common shapes in polars and sends only the *distinct* values it cannot decide to
  :func:`parse_address` (its module says how).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

import email_validator
from email_validator import EmailSyntaxError, validate_email
from email_validator.syntax import split_email, validate_email_domain_name

__all__ = [
    "ParsedAddress",
    "Syntax",
    "normalize_domain",
    "parse_address",
]


class Syntax(StrEnum):
    """Syntax verdict. When several apply: COMMENT > DOMAIN_LITERAL > QUOTED_LOCAL > SMTPUTF8."""

    OK = "ok"  # plain dot-atom local part, valid domain
    SMTPUTF8 = "smtputf8"  # valid, but the local part is non-ASCII (RFC 6531)
    QUOTED_LOCAL = "quoted_local"  # RFC 5321 quoted-string local part
    DOMAIN_LITERAL = "domain_literal"  # user@[192.0.2.1]
    COMMENT = "comment"  # RFC 5322 comment, e.g. john(x)@gmail.com
    INVALID = "syntax_invalid"  # not an address
    EMPTY = "empty"  # null or blank after trimming


@dataclass(frozen=True)
class ParsedAddress:
    """One parsed address.

    ``email`` is trimmed and NFC with the local part's case kept and the domain in
    lower-case ASCII; for INVALID it is the trimmed NFC input. ``key`` is the dedupe key
    (case-folded local part @ domain; the lower-cased input for INVALID). For INVALID,
    ``local``/``domain`` hold the two sides of the last @ when there is one, the domain
    only if it is valid on its own. ``detail`` is empty only for OK.
    """

    email: str
    local: str
    domain: str
    key: str
    syntax: Syntax
    detail: str


@dataclass(frozen=True)
class _DomainForms:
    """Outcome of validating one domain.

    ``ascii`` is "" and ``detail`` the reason when invalid; ``max_octets`` is the longest of
    its input, Unicode and ASCII spellings in UTF-8 octets, for the address length check.
    """

    ascii: str
    max_octets: int
    detail: str


# Exactly the characters Python's str.strip() removes (str.isspace()). Both paths strip
# with this same set so that polars and parse_address trim identically.
WHITESPACE: Final = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

# RFC 5321 §4.5.3.1.1 (local part) and §4.5.3.1.3 path limit as corrected by RFC 3696
# errata 1690 (254 octets for the whole address); RFC 1035 §2.3.4 for the domain.
LOCAL_MAX_OCTETS: Final = 64
DOMAIN_MAX_OCTETS: Final = 253
ADDRESS_MAX_OCTETS: Final = 254

# One list of reserved names: email_validator's copy of the IANA special-use registry
# (arpa incl. home.arpa, invalid, localhost, test: RFC 6761/8375; local: RFC 6762;
# onion: RFC 7686) plus the names it deliberately lets through because it leaves them to
# its DNS check, which this stage never runs.
_SPECIAL_USE_DOMAINS: Final = frozenset(
    (
        *email_validator.SPECIAL_USE_DOMAIN_NAMES,
        "example",  # RFC 2606 §2 / RFC 6761 §6.5
        "example.com",  # RFC 2606 §3
        "example.net",
        "example.org",
        "alt",  # RFC 9476
        "internal",  # reserved by ICANN for private use (2024)
    )
)

_EMPTY_DETAIL: Final = "empty or blank value"
_EMPTY: Final = ParsedAddress("", "", "", "", Syntax.EMPTY, _EMPTY_DETAIL)

# RFC 5322 §3.2.3 atext, ASCII only; dot-atom = atext runs joined by single dots.
_ATEXT: Final = r"A-Za-z0-9!#$%&'*+/=?^_`{|}~\-"
_DOT_ATOM: Final = rf"[{_ATEXT}]+(?:\.[{_ATEXT}]+)*"
DOT_ATOM_RE: Final = rf"^{_DOT_ATOM}$"
# RFC 1123 §2.1 LDH labels of at most 63 octets (RFC 1035 §2.3.4) under an alphabetic TLD.
# Anything else (IDN, numeric or odd TLDs) is left to the domain path.
LDH_DOMAIN_RE: Final = r"^(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$"
SPECIAL_USE_RE: Final = (
    r"(?i)(?:^|\.)(?:" + "|".join(re.escape(d) for d in sorted(_SPECIAL_USE_DOMAINS)) + r")$"
)

OUTPUT_COLUMNS: Final = ("EMAIL", "LOCAL", "DOMAIN", "KEY", "SYNTAX", "SYNTAX_DETAIL")


# --------------------------------------------------------------------------- precise


def parse_address(raw: str | None) -> ParsedAddress:
    """Check and normalize one address. Reference semantics for :func:`normalize_column`."""
    if raw is None:
        return _EMPTY
    # RFC 6532 §3.1: compare and store internationalized addresses in NFC.
    text = unicodedata.normalize("NFC", raw.strip(WHITESPACE))
    if not text:
        return _EMPTY
    if "(" in text or ")" in text:
        return _parse_with_comments(text)
    return _parse_bare(text)


def normalize_domain(raw: str | None) -> tuple[str, str]:
    """Return ``(ascii_domain, "")`` for a usable mail domain, else ``("", reason)``."""
    if raw is None:
        return "", "empty domain"
    text = raw.strip(WHITESPACE)
    if not text:
        return "", "empty domain"
    if text.startswith("["):
        return "", "domain literal (RFC 5321 §4.1.3), not a domain name"
    forms = domain_forms(text)
    return forms.ascii, forms.detail


def _parse_bare(text: str) -> ParsedAddress:
    """Parse an NFC, trimmed value that has no comments left in it."""
    # RFC 1034 §3.1: a trailing dot only marks the name as absolute; it is not part of it.
    candidate = text.removesuffix(".")
    at = candidate.rfind("@")
    if at >= 0:
        reserved = _special_use_detail(candidate[at + 1 :].lower())
        if reserved:
            return _invalid(text, reserved)
    try:
        info = validate_email(
            candidate,
            allow_smtputf8=True,
            allow_empty_local=False,
            allow_quoted_local=True,
            allow_domain_literal=True,
            allow_display_name=True,
            strict=False,
            check_deliverability=False,
            test_environment=False,
            globally_deliverable=True,
        )
    except EmailSyntaxError as error:
        return _invalid(text, _reason(error))
    if info.display_name is not None:
        # RFC 5322 §3.4 name-addr belongs in message headers; a list column holds addr-specs.
        return _invalid(text, "display name or angle brackets: the column must hold a bare address")

    quoted = candidate.startswith('"')
    local = _local_part(candidate, info.local_part, quoted=quoted)
    octets = len(local.encode("utf-8"))
    if octets > LOCAL_MAX_OCTETS:
        # RFC 5321 §4.5.3.1.1; email_validator only enforces this in strict mode.
        return _invalid(text, f"local part is longer than 64 octets ({octets})")

    literal = info.ascii_domain.startswith("[")
    domain = info.ascii_domain if literal else info.ascii_domain.lower()
    if not literal:
        # Catches reserved names that were only spelled differently in the input
        # (full-width letters, upper-case punycode, ...).
        reserved = _special_use_detail(domain)
        if reserved:
            return _invalid(text, reserved)

    syntax, detail = _classify(literal=literal, quoted=quoted, smtputf8=info.smtputf8)
    return ParsedAddress(
        email=f"{local}@{domain}",
        local=local,
        domain=domain,
        key=_dedupe_key(local, domain),
        syntax=syntax,
        detail=detail,
    )


def _local_part(candidate: str, normalized: str, *, quoted: bool) -> str:
    """The normalized local part with its case kept."""
    if not quoted:
        # Valid and unquoted, so the first @ is the separator. Slicing the input keeps
        # the case email_validator drops for RFC 2142 role names (Info@ -> info@).
        return candidate[: candidate.index("@")]
    if normalized.startswith('"'):
        return normalized  # minimal quoting already applied (RFC 5321 §4.1.2)
    # Quotes were unnecessary and got removed; take the unescaped text, case intact.
    _, _, unescaped, _, _ = split_email(candidate)
    return unicodedata.normalize("NFC", unescaped)


def _classify(*, literal: bool, quoted: bool, smtputf8: bool) -> tuple[Syntax, str]:
    if literal:
        return Syntax.DOMAIN_LITERAL, "domain literal (RFC 5321 §4.1.3) instead of a domain name"
    if quoted:
        return Syntax.QUOTED_LOCAL, "quoted-string local part (RFC 5321 §4.1.2)"
    if smtputf8:
        return Syntax.SMTPUTF8, "non-ASCII local part needs SMTPUTF8 (RFC 6531)"
    return Syntax.OK, ""


def _parse_with_comments(text: str) -> ParsedAddress:
    stripped = _strip_comments(text)
    if stripped is None:
        return _invalid(text, "unbalanced parentheses")
    bare, found = stripped
    if not found:
        return _parse_bare(text)  # the parentheses were all quoted or in a literal
    bare = bare.strip(WHITESPACE)
    if not bare:
        return _invalid(text, "only a comment, no address")
    inner = _parse_bare(bare)
    if inner.syntax is Syntax.INVALID:
        return _invalid(text, f"after removing comments: {inner.detail}")
    # RFC 5322 §3.2.2: comments carry no meaning, so the bare address is the normalized
    # form and shares its key with the uncommented spelling.
    return replace(inner, syntax=Syntax.COMMENT, detail="contains an RFC 5322 comment")


def _strip_comments(text: str) -> tuple[str, bool] | None:
    """Remove RFC 5322 §3.2.2 comments (nestable, with quoted-pairs).

    Returns the text without comments and whether any were found, or None when the
    parentheses do not balance. Quoted strings and domain literals are copied verbatim.
    """
    kept: list[str] = []
    depth = 0
    in_quote = in_literal = escaped = found = False
    for char in text:
        if depth:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
            continue
        kept.append(char)
        if in_quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_quote = False
        elif in_literal:
            in_literal = char != "]"
        elif char == '"':
            in_quote = True
        elif char == "[":
            in_literal = True
        elif char == "(":
            kept.pop()
            depth, found = 1, True
        elif char == ")":
            return None
    if depth:
        return None
    return "".join(kept), found


def _invalid(text: str, detail: str) -> ParsedAddress:
    """An INVALID result; local/domain are filled when a plain split at the last @ allows."""
    at = text.rfind("@")
    local = text[:at] if at >= 0 else ""
    domain = domain_forms(text[at + 1 :]).ascii if at >= 0 else ""
    return ParsedAddress(text, local, domain, text.lower(), Syntax.INVALID, detail)


def _reason(error: EmailSyntaxError) -> str:
    return str(error).removesuffix(".")


def _dedupe_key(local: str, domain: str) -> str:
    # Mailbox names are case-sensitive in theory (RFC 5321 §2.4) but not in practice;
    # case-folding (not lower()) also unifies e.g. ß/ss. NFC again because case-folding
    # can leave a string that is no longer normalized.
    return unicodedata.normalize("NFC", local.casefold()) + "@" + domain


def _special_use_detail(domain: str) -> str:
    """A reason when ``domain`` (lower case) is or lies under a special-use name."""
    labels = domain.split(".")
    for start in range(len(labels)):
        suffix = ".".join(labels[start:])
        if suffix in _SPECIAL_USE_DOMAINS:
            return f"special-use or reserved domain ({suffix})"
    return ""


@functools.lru_cache(maxsize=1 << 16)
def domain_forms(raw: str) -> _DomainForms:
    """Validate a domain exactly as :func:`parse_address` validates the part after the @.
    Remembered: a list names the same few domains over and over."""
    text = unicodedata.normalize("NFC", raw).removesuffix(".")
    if not text:
        return _DomainForms("", 0, "empty domain")
    reserved = _special_use_detail(text.lower())
    if reserved:
        return _DomainForms("", 0, reserved)
    try:
        # IDNA 2008 with UTS-46 mapping, LDH rules, label/length limits (RFC 1035 §2.3.4),
        # a dot required and a TLD ending in a letter.
        forms = validate_email_domain_name(text, test_environment=False, globally_deliverable=True)
    except EmailSyntaxError as error:
        return _DomainForms("", 0, _reason(error))
    ascii_domain = forms["ascii_domain"].lower()
    reserved = _special_use_detail(ascii_domain)
    if reserved:
        return _DomainForms("", 0, reserved)
    # email_validator checks the address length against the input, the Unicode and the
    # ASCII spelling of the domain; the longest one is what counts.
    longest = max(
        len(text.encode("utf-8")), len(forms["domain"].encode("utf-8")), len(ascii_domain)
    )
    return _DomainForms(ascii_domain, longest, "")


# --------------------------------------------------------------------------- batch
