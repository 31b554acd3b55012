from __future__ import annotations

import random
import sys

import polars as pl
import pytest

from pipeline.core.addresses.normalize import normalize_column
from pipeline.core.addresses.syntax import ParsedAddress, Syntax, normalize_domain, parse_address

OK = Syntax.OK
UTF8 = Syntax.SMTPUTF8
QUOTED = Syntax.QUOTED_LOCAL
LITERAL = Syntax.DOMAIN_LITERAL
COMMENT = Syntax.COMMENT
INVALID = Syntax.INVALID
EMPTY = Syntax.EMPTY

L63 = "a" * 63
L64 = "a" * 64
# Domain lengths built from 63-octet labels: 63*3 + 3 dots = 192, then a tail.
D189 = f"{L63}.{L63}.{'c' * 57}.com"  # 63+1+63+1+57+4 = 189
D190 = f"{L63}.{L63}.{'c' * 58}.com"
D252 = f"{L63}.{L63}.{L63}.{'d' * 56}.com"
D253 = f"{L63}.{L63}.{L63}.{'d' * 57}.com"
D254 = f"{L63}.{L63}.{L63}.{'d' * 58}.com"
assert (len(D189), len(D190), len(D252), len(D253), len(D254)) == (189, 190, 252, 253, 254)
E32 = "é" * 32  # 64 UTF-8 octets, 32 characters
# Full-width spellings, which UTS-46 maps to ASCII.
FW_GMAIL = "\uff47\uff4d\uff41\uff49\uff4c"
FW_EXAMPLE = "\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45"

# (input, syntax, email, domain)
CASES: list[tuple[str | None, Syntax, str, str]] = [
    # plain, case, whitespace
    ("john.doe@gmail.com", OK, "john.doe@gmail.com", "gmail.com"),
    ("John.Doe@GMAIL.COM", OK, "John.Doe@gmail.com", "gmail.com"),
    ("Info@Example.co.uk", OK, "Info@example.co.uk", "example.co.uk"),
    ("  john@gmail.com  ", OK, "john@gmail.com", "gmail.com"),
    ("\tjohn@gmail.com\r\n", OK, "john@gmail.com", "gmail.com"),
    ("\u00a0john@gmail.com\u3000", OK, "john@gmail.com", "gmail.com"),
    ("user+tag@gmail.com", OK, "user+tag@gmail.com", "gmail.com"),
    ("j.o.h.n@gmail.com", OK, "j.o.h.n@gmail.com", "gmail.com"),
    ("!#$%&'*+/=?^_`{|}~-@gmail.com", OK, "!#$%&'*+/=?^_`{|}~-@gmail.com", "gmail.com"),
    ("o'neil@sub.domain.co.uk", OK, "o'neil@sub.domain.co.uk", "sub.domain.co.uk"),
    ("user@a--b.com", OK, "user@a--b.com", "a--b.com"),
    ("user@x.c0m", OK, "user@x.c0m", "x.c0m"),
    ("user@example.com.au", OK, "user@example.com.au", "example.com.au"),
    ("user@myexample.com", OK, "user@myexample.com", "myexample.com"),
    # trailing dot
    ("john@gmail.com.", OK, "john@gmail.com", "gmail.com"),
    ("john@gmail.com..", INVALID, "john@gmail.com..", ""),
    # IDN
    ("user@bücher.de", OK, "user@xn--bcher-kva.de", "xn--bcher-kva.de"),
    ("user@BÜCHER.DE", OK, "user@xn--bcher-kva.de", "xn--bcher-kva.de"),
    ("user@bu\u0308cher.de", OK, "user@xn--bcher-kva.de", "xn--bcher-kva.de"),  # NFD
    ("user@xn--bcher-kva.de", OK, "user@xn--bcher-kva.de", "xn--bcher-kva.de"),
    ("user@XN--BCHER-KVA.DE", OK, "user@xn--bcher-kva.de", "xn--bcher-kva.de"),
    ("user@Xn--Bcher-Kva.De.", OK, "user@xn--bcher-kva.de", "xn--bcher-kva.de"),
    ("user@例え.jp", OK, "user@xn--r8jz45g.jp", "xn--r8jz45g.jp"),
    (f"user@{FW_GMAIL}.com", OK, "user@gmail.com", "gmail.com"),  # full-width, UTS-46 maps it
    ("user@xn--abc.com", INVALID, "user@xn--abc.com", ""),
    ("user@ab--cd.com", INVALID, "user@ab--cd.com", ""),
    ("user@😀.com", INVALID, "user@😀.com", ""),
    # non-ASCII local parts
    ("josé@gmail.com", UTF8, "josé@gmail.com", "gmail.com"),
    ("jose\u0301@gmail.com", UTF8, "jos\u00e9@gmail.com", "gmail.com"),  # NFD -> NFC
    ("用户@例子.广告", UTF8, "用户@xn--fsqu00a.xn--4rr70v", "xn--fsqu00a.xn--4rr70v"),
    ("😀@gmail.com", UTF8, "😀@gmail.com", "gmail.com"),
    # local part length: octets, not characters (RFC 5321 §4.5.3.1.1)
    (f"{L64}@gmail.com", OK, f"{L64}@gmail.com", "gmail.com"),
    (f"{L64}a@gmail.com", INVALID, f"{L64}a@gmail.com", "gmail.com"),
    (f"{E32}@gmail.com", UTF8, f"{E32}@gmail.com", "gmail.com"),
    (f"{E32}a@gmail.com", INVALID, f"{E32}a@gmail.com", "gmail.com"),
    # label and domain length
    (f"user@{L63}.com", OK, f"user@{L63}.com", f"{L63}.com"),
    (f"user@{L64}.com", INVALID, f"user@{L64}.com", ""),
    (f"u@{D252}", OK, f"u@{D252}", D252),  # 254-octet address
    (f"u@{D253}", INVALID, f"u@{D253}", D253),  # 255-octet address, domain itself fine
    (f"u@{D254}", INVALID, f"u@{D254}", ""),
    (f"{L64}@{D189}", OK, f"{L64}@{D189}", D189),
    (f"{L64}@{D190}", INVALID, f"{L64}@{D190}", D190),
    # dotless, numeric TLD
    ("user@gmail", INVALID, "user@gmail", ""),
    ("user@com", INVALID, "user@com", ""),
    ("user@host.123", INVALID, "user@host.123", ""),
    ("user@1.2.3.4", INVALID, "user@1.2.3.4", ""),
    # special-use and reserved names
    ("user@localhost", INVALID, "user@localhost", ""),
    ("user@example.com", INVALID, "user@example.com", ""),
    ("user@EXAMPLE.COM.", INVALID, "user@EXAMPLE.COM.", ""),
    ("user@mail.example.org", INVALID, "user@mail.example.org", ""),
    ("user@example.net", INVALID, "user@example.net", ""),
    ("user@shop.example", INVALID, "user@shop.example", ""),
    ("user@foo.test", INVALID, "user@foo.test", ""),
    ("user@printer.local", INVALID, "user@printer.local", ""),
    ("user@x.invalid", INVALID, "user@x.invalid", ""),
    ("user@x.localhost", INVALID, "user@x.localhost", ""),
    ("user@router.home.arpa", INVALID, "user@router.home.arpa", ""),
    ("user@expyuzz4wqqyqhjn.onion", INVALID, "user@expyuzz4wqqyqhjn.onion", ""),
    (f"user@{FW_EXAMPLE}.com", INVALID, f"user@{FW_EXAMPLE}.com", ""),
    # quoted local parts (RFC 5321 §4.1.2)
    ('"john smith"@gmail.com', QUOTED, '"john smith"@gmail.com', "gmail.com"),
    ('"john"@gmail.com', QUOTED, "john@gmail.com", "gmail.com"),
    ('"a@b"@gmail.com', QUOTED, '"a@b"@gmail.com', "gmail.com"),
    ('"a(b)"@gmail.com', QUOTED, '"a(b)"@gmail.com', "gmail.com"),
    ('"unterminated@gmail.com', INVALID, '"unterminated@gmail.com', "gmail.com"),
    # domain literals (RFC 5321 §4.1.3)
    ("user@[192.0.2.1]", LITERAL, "user@[192.0.2.1]", "[192.0.2.1]"),
    ("user@[IPv6:2001:DB8::1]", LITERAL, "user@[IPv6:2001:db8::1]", "[IPv6:2001:db8::1]"),
    ("user@[300.1.1.1]", INVALID, "user@[300.1.1.1]", ""),
    # comments (RFC 5322 §3.2.2)
    ("john(comment)@gmail.com", COMMENT, "john@gmail.com", "gmail.com"),
    ("(lead)john@gmail.com", COMMENT, "john@gmail.com", "gmail.com"),
    ("john@gmail.com (John Doe)", COMMENT, "john@gmail.com", "gmail.com"),
    ("john@(c)gmail.com", COMMENT, "john@gmail.com", "gmail.com"),
    ("jo(nested (x\\)))hn@GMAIL.com", COMMENT, "john@gmail.com", "gmail.com"),
    ("john(@gmail.com", INVALID, "john(@gmail.com", "gmail.com"),
    ("john)@gmail.com", INVALID, "john)@gmail.com", "gmail.com"),
    ("(only a comment)", INVALID, "(only a comment)", ""),
    ("john(x)..doe@gmail.com", INVALID, "john(x)..doe@gmail.com", "gmail.com"),
    # display names
    ("John Doe <john@gmail.com>", INVALID, "John Doe <john@gmail.com>", ""),
    ("<john@gmail.com>", INVALID, "<john@gmail.com>", ""),
    ('"Doe, John" <john@gmail.com>', INVALID, '"Doe, John" <john@gmail.com>', ""),
    # broken shapes
    ("a@b@gmail.com", INVALID, "a@b@gmail.com", "gmail.com"),
    ("john..doe@gmail.com", INVALID, "john..doe@gmail.com", "gmail.com"),
    (".john@gmail.com", INVALID, ".john@gmail.com", "gmail.com"),
    ("john.@gmail.com", INVALID, "john.@gmail.com", "gmail.com"),
    ("john@gmail..com", INVALID, "john@gmail..com", ""),
    ("john@.gmail.com", INVALID, "john@.gmail.com", ""),
    ("john@-gmail.com", INVALID, "john@-gmail.com", ""),
    ("john@gmail_com.com", INVALID, "john@gmail_com.com", ""),
    ("john@gmail,com", INVALID, "john@gmail,com", ""),
    ("john doe@gmail.com", INVALID, "john doe@gmail.com", "gmail.com"),
    ("john@gmail.com\u200b", INVALID, "john@gmail.com\u200b", ""),  # zero-width space
    ("john\uff20gmail.com", INVALID, "john\uff20gmail.com", ""),  # full-width at sign
    ("@gmail.com", INVALID, "@gmail.com", "gmail.com"),
    ("john@", INVALID, "john@", ""),
    ("@", INVALID, "@", ""),
    ("johngmail.com", INVALID, "johngmail.com", ""),
    # empty
    (None, EMPTY, "", ""),
    ("", EMPTY, "", ""),
    ("   ", EMPTY, "", ""),
    ("\t\r\n", EMPTY, "", ""),
]


@pytest.mark.parametrize(("raw", "syntax", "email", "domain"), CASES)
def test_parse_address_table(raw: str | None, syntax: Syntax, email: str, domain: str) -> None:
    parsed = parse_address(raw)
    assert (parsed.syntax, parsed.email, parsed.domain) == (syntax, email, domain)
    assert (parsed.detail == "") is (syntax is OK)


@pytest.mark.parametrize(
    ("raw", "local", "key"),
    [
        ("John.Doe@GMAIL.com", "John.Doe", "john.doe@gmail.com"),
        ("Info@gmail.com", "Info", "info@gmail.com"),  # RFC 2142 name, case still kept
        ('"Info"@gmail.com', "Info", "info@gmail.com"),
        ('"John Smith"@gmail.com', '"John Smith"', '"john smith"@gmail.com'),
        ("j.ohn+News@googlemail.com", "j.ohn+News", "j.ohn+news@googlemail.com"),
        ("Straße@gmail.de", "Straße", "strasse@gmail.de"),
        ("ÉLODIE@gmail.com", "ÉLODIE", "élodie@gmail.com"),
        ("  Not An Address  ", "", "not an address"),
        ("Bad..Dots@Gmail.com", "Bad..Dots", "bad..dots@gmail.com"),
        (None, "", ""),
    ],
)
def test_local_and_key(raw: str | None, local: str, key: str) -> None:
    parsed = parse_address(raw)
    assert (parsed.local, parsed.key) == (local, key)


def test_case_variants_share_a_key() -> None:
    keys = {
        parse_address(a).key
        for a in ("John.Doe@gmail.com", "john.doe@GMAIL.com", " JOHN.DOE@Gmail.Com. ")
    }
    assert keys == {"john.doe@gmail.com"}
    assert parse_address("johndoe@gmail.com").key != "john.doe@gmail.com"


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (f"{L64}a@gmail.com", "local part is longer than 64 octets (65)"),
        (f"{E32}a@gmail.com", "local part is longer than 64 octets (65)"),
        ("John <john@gmail.com>", "bare address"),
        ("user@example.com", "special-use or reserved domain (example.com)"),
        ("user@router.home.arpa", "special-use or reserved domain (arpa)"),
        ("john(@gmail.com", "unbalanced parentheses"),
        ("john(x)..doe@gmail.com", "after removing comments: "),
        ("johngmail.com", "@-sign"),
        ("john@gmail", "period"),
        ("", "empty"),
    ],
)
def test_detail(raw: str, fragment: str) -> None:
    assert fragment in parse_address(raw).detail


def test_non_ok_valid_syntaxes_explain_themselves() -> None:
    for raw in ("josé@gmail.com", '"a b"@gmail.com', "a@[192.0.2.1]", "a(b)@gmail.com"):
        assert parse_address(raw).detail


def test_parsed_address_is_frozen() -> None:
    parsed = parse_address("a@gmail.com")
    assert isinstance(parsed, ParsedAddress)
    with pytest.raises(AttributeError):
        parsed.email = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("raw", "ascii_domain"),
    [
        ("gmail.com", "gmail.com"),
        (" Bücher.DE. ", "xn--bcher-kva.de"),
        ("XN--BCHER-KVA.de", "xn--bcher-kva.de"),
        ("例え.jp", "xn--r8jz45g.jp"),
        (D253, D253),
        (D254, ""),
        (f"{L64}.com", ""),
        ("gmail", ""),
        ("host.123", ""),
        ("example.com", ""),
        ("mail.example.org", ""),
        ("localhost", ""),
        ("home.arpa", ""),
        ("[192.0.2.1]", ""),
        ("john@gmail.com", ""),
        ("gmail..com", ""),
        ("", ""),
        ("  ", ""),
        (None, ""),
    ],
)
def test_normalize_domain(raw: str | None, ascii_domain: str) -> None:
    domain, detail = normalize_domain(raw)
    assert domain == ascii_domain
    assert (detail == "") is bool(ascii_domain)


def test_normalize_column_shape_and_types() -> None:
    values = ["B@Gmail.com", None, "bad", "user@bücher.de", "B@Gmail.com"]
    frame = normalize_column(pl.Series("email", values))
    assert frame.columns == ["EMAIL", "LOCAL", "DOMAIN", "KEY", "SYNTAX", "SYNTAX_DETAIL"]
    assert all(dtype == pl.String for dtype in frame.dtypes)
    assert frame.get_column("EMAIL").to_list() == [
        "B@gmail.com",
        "",
        "bad",
        "user@xn--bcher-kva.de",
        "B@gmail.com",
    ]
    assert frame.get_column("SYNTAX").to_list() == ["ok", "empty", "syntax_invalid", "ok", "ok"]


@pytest.mark.parametrize(
    "series",
    [pl.Series("email", [], dtype=pl.String), pl.Series("email", [None, None])],
)
def test_normalize_column_degenerate_input(series: pl.Series) -> None:
    frame = normalize_column(series)
    assert frame.height == series.len()
    assert set(frame.get_column("SYNTAX").to_list()) <= {"empty"}


def _as_row(parsed: ParsedAddress) -> tuple[str, ...]:
    return (
        parsed.email,
        parsed.local,
        parsed.domain,
        parsed.key,
        parsed.syntax.value,
        parsed.detail,
    )


def _generated(count: int) -> list[str | None]:
    """Addresses assembled from parts that hit every batch route and every rule."""
    rng = random.Random(20240611)
    locals_ = [
        "john", "John.Doe", "a", "x" * 64, "x" * 65, "user+tag", "o'neil", "a..b", ".a", "a.",
        "josé", "jose\u0301", E32, "😀", '"quoted"', '"q q"', '"a@b"', "a(b)", "", "Info",
        "a b", "a\u200bb", "A-Z_09", "x" * 40,
    ]  # fmt: skip
    domains = [
        "gmail.com", "GMAIL.COM", "gmail.com.", "gmail.com..", "sub.mail.co.uk", "bücher.de",
        "BÜCHER.de", "XN--BCHER-KVA.DE", "xn--abc.com", "例え.jp", f"{FW_GMAIL}.com",
        "example.com", "sub.example.org", "EXAMPLE.NET.", "localhost", "x.test", "x.local",
        "a--b.com", "ab--cd.com", "1.2.3.4", "host.123", "x.c0m", "x.y", "[192.0.2.1]",
        "[IPv6:2001:db8::1]", "gmail", "gmail..com", "-a.com", f"{L63}.com", f"{L64}.com",
        D189, D190, D252, D253, D254, "gmail.com(c)", "", "gmail.com\u200b", "xn--4dbc.1.com",
    ]  # fmt: skip
    whitespace = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    out: list[str | None] = []
    for _ in range(count):
        address = f"{rng.choice(locals_)}@{rng.choice(domains)}"
        roll = rng.random()
        if roll < 0.1:
            address = address.upper()
        elif roll < 0.2:
            address = f"{rng.choice(whitespace)}{address}{rng.choice(whitespace)}"
        elif roll < 0.23:
            address = f"Name <{address}>"
        elif roll < 0.26:
            address = address.replace("@", "", 1)
        elif roll < 0.28:
            address = f"{address}@{rng.choice(domains)}"
        out.append(address)
    out.extend(f"{ws}u{i}@gmail.com{ws}" for i, ws in enumerate(whitespace))
    out.extend(f"{ws}" for ws in whitespace)
    out.extend([None, "", None])
    return out


def test_normalize_column_agrees_with_parse_address() -> None:
    values = [raw for raw, *_ in CASES] + _generated(4000)
    rng = random.Random(7)
    values += rng.sample(values, 500)  # repeats exercise the distinct-value paths
    frame = normalize_column(pl.Series("email", values))
    assert frame.height == len(values)
    expected = [_as_row(parse_address(v)) for v in values]
    for raw, got, want in zip(values, frame.iter_rows(), expected, strict=True):
        assert got == want, raw


def test_normalize_domain_agrees_with_parse_address() -> None:
    for raw in [r for r, *_ in CASES if r is not None] + [v for v in _generated(500) if v]:
        parsed = parse_address(raw)
        if parsed.syntax in (OK, UTF8):
            assert normalize_domain(raw.strip().rpartition("@")[2]) == (parsed.domain, "")
