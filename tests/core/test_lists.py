"""Tests for pipeline.core.lists: shipped data invariants and the lookup methods."""

from __future__ import annotations

import random

import polars as pl
import pytest

from pipeline.core.lists import DomainLists, load_lists, lookup_key, role_pattern


@pytest.fixture(scope="module")
def lists() -> DomainLists:
    return load_lists()


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        ("mailinator.com", True),
        ("sub.mailinator.com", True),
        ("a.b.mailinator.com", True),
        ("MAILINATOR.COM.", True),
        (" guerrillamail.com ", True),
        # Blocklist entry below its registrable domain (fr.nf): it and its children match...
        ("bboys.fr.nf", True),
        ("x.bboys.fr.nf", True),
        # ...but its registrable parent and siblings do not.
        ("fr.nf", False),
        ("other.fr.nf", False),
        ("mailinator-review.example.org", False),
        ("mailinator.com.example.org", False),
        ("gmail.com", False),
        ("co.uk", False),
        ("com", False),
        ("", False),
        (".", False),
    ],
)
def test_is_disposable(lists: DomainLists, domain: str, expected: bool) -> None:
    assert lists.is_disposable(domain) is expected


def test_extra_disposable_matches_subdomains_but_never_a_bare_public_suffix() -> None:
    extended = load_lists(extra_disposable=["Throwaway.Example.", "co.uk", "blogspot.com"])
    assert extended.is_disposable("throwaway.example")
    assert extended.is_disposable("mx1.throwaway.example")
    assert not extended.is_disposable("acme.co.uk")
    assert not extended.is_disposable("co.uk")
    assert not extended.is_disposable("someone.blogspot.com")


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        ("example.com", "example.com"),
        ("mail.example.com", "example.com"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("Example.CO.UK.", "example.co.uk"),
        ("x.y.blogspot.com", "y.blogspot.com"),
        ("bücher.de", "xn--bcher-kva.de"),
        ("co.uk", ""),
        ("com", ""),
        ("", ""),
        ("a..b.com", ""),
    ],
)
def test_registrable_domain(lists: DomainLists, domain: str, expected: str) -> None:
    assert lists.registrable_domain(domain) == expected


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        ("gmail.com", True),
        ("GMail.com.", True),
        ("yahoo.co.uk", True),
        ("gmx.net", True),
        ("email.com", True),  # not popular, only in free_providers.txt
        ("acme.com", False),
        ("gmial.com", False),
        ("", False),
    ],
)
def test_is_free_provider(lists: DomainLists, domain: str, expected: bool) -> None:
    assert lists.is_free_provider(domain) is expected


def test_extra_free() -> None:
    assert load_lists(extra_free=["Corp-Mail.Example"]).is_free_provider("corp-mail.example")


ROLE_TABLE = [
    ("info", True),
    ("INFO", True),
    ("Info+newsletter", True),
    ("info+", True),
    ("noreply", True),
    ("no-reply", True),
    ("no_reply", True),
    ("No.Reply", True),
    ("no-reply+bounce-123", True),
    ("do-not-reply", True),
    ("mailer-daemon", True),
    ("postmaster", True),
    ("abuse", True),
    ("hr", True),
    ("customer.service", True),
    ("kontakt", True),
    ("john", False),
    ("john.smith", False),
    ("info.john", False),
    ("john+info", False),
    ("sales+eu+2024", True),  # cut at the first +
    ("in\nfo", False),
    ("i.n-f_o+x", True),
    ("+info", False),
    ("informatics", False),
    ("", False),
    ("ínfo", False),
    ("Ünïcödé", False),
]


@pytest.mark.parametrize(("local", "expected"), ROLE_TABLE)
def test_is_role(lists: DomainLists, local: str, expected: bool) -> None:
    assert lists.is_role(local) is expected


def test_role_expr_agrees_with_is_role(lists: DomainLists) -> None:
    locals_ = [local for local, _ in ROLE_TABLE]
    frame = pl.DataFrame({"local": [*locals_, None]}, schema={"local": pl.String})
    result = frame.select(lists.role_expr(pl.col("local")).alias("role"))["role"]
    assert result.dtype == pl.Boolean
    assert result.to_list() == [*(lists.is_role(local) for local in locals_), False]


def test_role_expr_agrees_on_every_shipped_role(lists: DomainLists) -> None:
    roles = sorted(lists.role_local_parts)
    variants = [*roles, *(r.upper() + "+tag" for r in roles), *(r + "x" for r in roles)]
    frame = pl.DataFrame({"local": variants})
    result = frame.select(lists.role_expr(pl.col("local")))["local"].to_list()
    assert result == [lists.is_role(local) for local in variants]


def role_variants(roles: list[str], count: int, seed: int) -> list[str]:
    """Local parts near the roles: letters in either case, separators around and between
    them, tags, the characters whose case rules are odd (KELVIN SIGN, long s, dotted I,
    dotless i), and some random text of those."""
    rng = random.Random(seed)
    odd = ["\u212a", "\u017f", "\u0130", "\u0131", "+", "-", "_", ".", "x", "1", " ", "ß", "K"]
    made = []
    for _ in range(count):
        role = rng.choice(roles)
        text = "".join(
            (c.upper() if rng.random() < 0.3 else c)
            + (rng.choice("-_.") if rng.random() < 0.1 else "")
            for c in role
        )
        if rng.random() < 0.2:
            text = text.replace("k", "\u212a").replace("s", "\u017f").replace("i", "\u0130")
        if rng.random() < 0.3:
            text = rng.choice(["", "-", "._", "x", "+"]) + text
        if rng.random() < 0.3:
            text += rng.choice(["+", "+tag", "-", "x", "+x+y", ".", "1", "\n"])
        if rng.random() < 0.1:
            text = "".join(rng.choice(odd) for _ in range(rng.randint(0, 6)))
        made.append(text)
    return made


def test_role_expr_agrees_with_is_role_near_every_role(lists: DomainLists) -> None:
    variants = role_variants(sorted(lists.role_local_parts), 20_000, seed=11)
    frame = pl.DataFrame({"local": variants})
    result = frame.select(lists.role_expr(pl.col("local")))["local"].to_list()
    expected = [lists.is_role(local) for local in variants]
    assert result == expected
    assert 0 < sum(expected) < len(expected)


def test_only_the_kelvin_sign_lower_cases_to_an_ascii_letter() -> None:
    # role_pattern matches each letter of a role as the characters that lower-case to it.
    lowered = {chr(c): chr(c).lower() for c in range(0x80, 0x110000)}
    to_ascii = {c: low for c, low in lowered.items() if low.isascii()}
    assert to_ascii == {"\u212a": "k"}


def test_a_role_pattern_matches_separators_case_and_tags_only() -> None:
    pattern = role_pattern(["info", "k1"])
    frame = pl.DataFrame(
        {"local": ["INFO", "_i.n-f_o_+x", "info1", "xinfo", "K1", "\u212a1", "k+1"]}
    )
    assert frame.select(pl.col("local").str.contains(pattern))["local"].to_list() == [
        True, True, False, False, True, True, False,
    ]  # fmt: skip


REQUIRED_ROLES = [
    "info", "admin", "support", "sales", "contact", "noreply", "no-reply", "postmaster",
    "abuse", "webmaster", "hostmaster", "billing", "office", "hello", "team", "jobs",
    "careers", "hr", "marketing", "help",
]  # fmt: skip
REQUIRED_POPULAR = [
    "gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "aol.com", "icloud.com",
    "live.com", "msn.com", "ymail.com", "googlemail.com", "mail.com", "gmx.com", "gmx.de",
    "gmx.net", "web.de", "yandex.ru", "mail.ru", "qq.com", "163.com", "orange.fr",
    "free.fr", "comcast.net", "verizon.net", "att.net", "protonmail.com", "proton.me",
    "zoho.com", "yahoo.co.uk", "hotmail.fr",
]  # fmt: skip


def test_required_entries_are_shipped(lists: DomainLists) -> None:
    assert [role for role in REQUIRED_ROLES if not lists.is_role(role)] == []
    assert [d for d in REQUIRED_POPULAR if d not in lists.popular_domains] == []
    assert lists.popular_domains[:4] == ("gmail.com", "yahoo.com", "hotmail.com", "outlook.com")
    assert len(lists.popular_domains) >= 200
    assert len(lists.role_local_parts) >= 200


def test_shipped_lists_are_consistent(lists: DomainLists) -> None:
    popular = set(lists.popular_domains)
    assert len(popular) == len(lists.popular_domains), "duplicate popular domain"
    assert popular <= lists.free_providers
    # A provider listed as disposable upstream would be both "free" and "disposable".
    assert not lists.free_providers & lists.disposable
    for typo, correct in lists.known_typos.items():
        assert typo not in lists.free_providers, typo
        assert correct in popular, correct
    for domain in (*lists.free_providers, *lists.known_typos):
        assert domain == lookup_key(domain)
        assert domain.isascii() and "." in domain and " " not in domain, domain
    for role in lists.role_local_parts:
        assert role and role == role.lower() and "+" not in role, role


def test_known_typos_are_read_only(lists: DomainLists) -> None:
    assert lists.known_typos["gmial.com"] == "gmail.com"
    with pytest.raises(TypeError):
        lists.known_typos["x.com"] = "y.com"  # type: ignore[index]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Example.COM.", "example.com"),
        ("  gmail.com\n", "gmail.com"),
        ("Bücher.de", "xn--bcher-kva.de"),
        ("", ""),
    ],
)
def test_normalize_domain(raw: str, expected: str) -> None:
    assert lookup_key(raw) == expected


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("com", True),
        ("uk", True),
        # The suffix list has only second-level rules under these (co.za, com.mt...), no rule
        # for the TLD itself: it is a TLD all the same.
        ("za", True),
        ("ZA", True),
        ("mt", True),
        ("con", False),
        ("cmo", False),
        ("", False),
    ],
)
def test_is_tld(lists: DomainLists, label: str, expected: bool) -> None:
    assert lists.is_tld(label) is expected
