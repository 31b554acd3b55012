"""Tests for pipeline.core.domains.suggest.suggest_domain (rules in the module docstring)."""

from __future__ import annotations

import pytest

from pipeline.core.domains.suggest import MX_OVERRIDE_PROVIDERS, suggest_domain
from pipeline.core.lists import DomainLists, load_lists, lookup_key


@pytest.fixture(scope="module")
def lists() -> DomainLists:
    return load_lists()


@pytest.mark.parametrize(
    ("domain", "has_working_mx", "expected"),
    [
        # Rule 1: popular and free providers are never corrected.
        ("gmail.com", False, ""),
        ("ymail.com", False, ""),  # one edit from gmail.com
        ("mail.com", False, ""),  # one edit from gmail.com
        ("email.com", False, ""),  # free provider, not in the popular list
        ("gmx.de", False, ""),
        ("GMAIL.COM.", False, ""),
        # Rule 2: curated typos, even with a working MX (typo-squatters run mail servers).
        ("gmial.com", False, "gmail.com"),
        ("gmial.com", True, "gmail.com"),
        ("Gmial.Com", False, "gmail.com"),
        ("hotmail.co", True, "hotmail.com"),  # fuzzy matching alone ties with hotmail.ca
        ("yahoo.co", False, "yahoo.com"),
        # Rule 3: nearest popular domain, transposition = one edit.
        ("gmail.con", False, "gmail.com"),
        ("hotmal.com", False, "hotmail.com"),
        ("yahooo.com", False, "yahoo.com"),
        ("gmali.cmo", False, "gmail.com"),  # two edits, long enough
        ("outlookk.co", False, "outlook.com"),
        ("rediffmial.com", False, "rediffmail.com"),
        ("web.fe", False, "web.de"),  # short: one edit
        ("gmäil.com", False, "gmail.com"),  # internationalised input, ASCII answer
        # Short inputs accept one edit only.
        ("gmail.cn", False, ""),  # two edits from gmail.com, eight characters
        ("ab.com", False, "au.com"),  # one edit is enough, though
        # Ties abstain ...
        ("gmx.ne", False, ""),  # gmx.net (insertion) vs gmx.de (substitution)
        ("hotmail.dr", False, ""),  # hotmail.de vs hotmail.fr, both neighbouring keys
        ("protonmail.co", False, ""),  # protonmail.com vs protonmail.ch
        # ... unless exactly one candidate is a typing slip (neighbouring key, swap).
        ("gmail.xom", False, "gmail.com"),
        ("acme.ogr", False, "acme.org"),  # org (swap) vs gr (deletion)
        ("acme.con", False, "acme.com"),  # com (n/m are neighbours) vs cn (deletion)
        # Rule 4: a working MX blocks fuzzy corrections ...
        ("hotmart.com", False, "hotmail.com"),  # distance 2, no MX: probably a typo
        ("hotmart.com", True, ""),  # distance 2, has MX: a real company
        ("comcast.com", True, ""),  # one edit from comcast.net, not a top provider
        ("bol.com", True, ""),  # one edit from aol.com: too short to override
        ("cloud.com", True, ""),  # one edit from icloud.com but not its first letter
        ("cloud.com", False, ""),  # known to be real (near_providers.txt), whatever its DNS
        # ... except one edit from a top provider, keeping its first letter.
        ("gmaiq.com", True, "gmail.com"),
        ("yahpo.com", True, "yahoo.com"),
        ("hotmaio.co.uk", True, "hotmail.co.uk"),
        # Rule 5: a TLD that does not exist gets the closest common suffix.
        ("shop.cmo", False, "shop.com"),
        ("acme.nte", False, "acme.net"),
        ("acme.comm", False, "acme.com"),
        ("Acme.Co.Ukk", False, "acme.co.uk"),
        ("acme.dee", False, "acme.de"),
        ("acme.con", True, ""),  # rule 4 also applies to TLD fixes
        ("acme.co.ik", False, ""),  # co.uk, co.il, co.in, .ie, .it ... tie
        ("acme.zzzz", False, ""),  # nothing within one edit
        ("acme.com", False, ""),  # real TLD: nothing to fix
        ("acme.cm", False, ""),  # .cm exists (Cameroon): not a TLD error
        # Degenerate input.
        ("", False, ""),
        ("localhost", False, ""),
        ("con", False, ""),
    ],
)
def test_suggestion_table(
    lists: DomainLists, domain: str, has_working_mx: bool, expected: str
) -> None:
    assert suggest_domain(domain, has_working_mx=has_working_mx, lists=lists) == expected


def test_mx_override_providers_are_popular(lists: DomainLists) -> None:
    assert set(MX_OVERRIDE_PROVIDERS) <= set(lists.popular_domains)


def test_every_known_typo_is_corrected_to_its_mapping(lists: DomainLists) -> None:
    for typo, correct in lists.known_typos.items():
        for has_mx in (False, True):
            assert suggest_domain(typo, has_working_mx=has_mx, lists=lists) == correct


def _single_edits(domain: str) -> list[str]:
    """A deterministic sample of one-edit variants (deletions, transpositions, doublings)."""
    edits = {domain[:i] + domain[i + 1 :] for i in range(len(domain))}
    edits |= {
        domain[:i] + domain[i + 1] + domain[i] + domain[i + 2 :] for i in range(len(domain) - 1)
    }
    edits |= {domain[:i] + domain[i] + domain[i:] for i in range(len(domain))}
    return sorted(edits)


def test_result_is_never_the_input_and_always_ascii(lists: DomainLists) -> None:
    inputs = [
        *lists.popular_domains,
        *sorted(lists.free_providers)[:200],
        *lists.known_typos,
        *(edit for domain in lists.popular_domains[:30] for edit in _single_edits(domain)),
        "acme.con",
        "bücher.dee",
        "xn--bcher-kva.dee",
        "sub.domain.example.cmo",
    ]
    for domain in inputs:
        for has_mx in (False, True):
            result = suggest_domain(domain, has_working_mx=has_mx, lists=lists)
            assert result != lookup_key(domain), domain
            assert result.isascii(), (domain, result)
            is_tld_fix = domain.endswith(("con", "cmo", "dee"))
            if result and not is_tld_fix:
                assert result in lists.popular_domains, (domain, result)


def test_idn_tld_fix_returns_ascii(lists: DomainLists) -> None:
    assert suggest_domain("bücher.dee", has_working_mx=False, lists=lists) == "xn--bcher-kva.de"


PARKING = "park-mx.above.com"  # a domain-parking service's catch-all mail host


@pytest.mark.parametrize(
    ("domain", "mx", "expected"),
    [
        # Rule 4b: a near-miss of a top provider whose MX is a third party's, not a mainstream
        # mail host: a squatter's parking host. Any first letter.
        ("otmail.com", PARKING, "hotmail.com"),
        ("uotlook.com", PARKING, "outlook.com"),
        ("jotmail.co.uk", PARKING, "hotmail.co.uk"),
        ("fooglemail.com", PARKING, "googlemail.com"),
        ("gail.com", PARKING, "gmail.com"),  # mail.com is popular, but not a top provider
        # Real organisations near a provider's name: mail on their own hosts or a mainstream one.
        ("cloud.com", "mx.cloud.com", ""),
        ("cloud.com", "cloud-com.mail.protection.outlook.com", ""),
        ("wahoo.com", "aspmx.l.google.com", ""),
        ("wahoo.com", "mx.wahoo.com", ""),
        ("wahoo.com", "mx0a-00123.pphosted.com", ""),
        ("wahoo.com", "", ""),  # MX unknown: the first-letter rule alone
        # Rule 4a, first letter kept: corrected, unless the MX is the provider's own.
        ("gmaiq.com", "mx.gmaiq.com", "gmail.com"),
        ("gmaiq.com", PARKING, "gmail.com"),
        ("gmaiq.com", "aspmx.l.google.com", ""),
        ("yahpo.com", "mta5.am0.yahoodns.net", ""),
        # Not one edit from a top provider: never, whatever the MX.
        ("hotmart.com", PARKING, ""),
        ("aon.com", PARKING, ""),  # aol.com is not a top provider here (see rule 4)
        ("gmc.com", PARKING, ""),
    ],
)
def test_squatted_near_misses(lists: DomainLists, domain: str, mx: str, expected: str) -> None:
    assert suggest_domain(domain, has_working_mx=True, lists=lists, mx=mx) == expected


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        # Rule 6: DNS could not answer, so the domain may be real: only the curated list.
        ("aon.com", ""),
        ("cloud.com", ""),
        ("orange.pl", ""),
        ("weg.de", ""),
        ("hotmart.com", ""),
        ("hotmail.co.za", ""),  # za has only second-level rules in the suffix list: still real
        ("gmial.com", "gmail.com"),  # curated
        # A TLD that does not exist cannot be a real domain: fuzzy rules still apply.
        ("gmail.con", "gmail.com"),
        ("acme.con", "acme.com"),
    ],
)
def test_unanswered_dns_corrects_only_curated_typos(
    lists: DomainLists, domain: str, expected: str
) -> None:
    got = suggest_domain(domain, has_working_mx=False, lists=lists, dns_answered=False)
    assert got == expected


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        # Rule 7: a TLD fix on a misspelt name fixes both, or abstains.
        ("ahoo.con", "yahoo.com"),
        ("gmal.cmo", "gmail.com"),
        ("iclod.con", "icloud.com"),
        ("hotmali.con", "hotmail.com"),
        ("gmx.con", "gmx.com"),  # the fixed name is itself popular
        ("acme.con", "acme.com"),  # nobody's near-miss: the TLD alone
        ("gmai.cmo", "gmail.com"),
    ],
)
def test_tld_fix_on_a_misspelt_name(lists: DomainLists, domain: str, expected: str) -> None:
    assert suggest_domain(domain, has_working_mx=False, lists=lists) == expected


def test_no_real_domain_near_a_provider_gets_a_suggestion(lists: DomainLists) -> None:
    from worlds.evaluation.names import NEAR_PROVIDER

    for domain in NEAR_PROVIDER:
        for mx in (f"mx.{domain}", f"{domain.replace('.', '-')}.mail.protection.outlook.com"):
            online = suggest_domain(domain, has_working_mx=True, lists=lists, mx=mx)
            assert online == "", (domain, mx, online)
        offline = suggest_domain(domain, has_working_mx=False, lists=lists, dns_answered=False)
        assert offline == "", (domain, offline)
