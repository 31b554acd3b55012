"""Squatted typo domains (pipeline.core.domains.squats) and the typing model (slips): each
piece of evidence on its own, through :func:`suggest`."""

from __future__ import annotations

import pytest

from pipeline.core.domains.slips import Slip, domain_slips, label_slips, slip_index, touching
from pipeline.core.domains.squats import squat
from pipeline.core.domains.suggest import suggest
from pipeline.core.lists import DomainLists, load_lists

PARKING = "park-mx.above.com"


@pytest.fixture(scope="module")
def lists() -> DomainLists:
    return load_lists()


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("g", "h", True),
        ("m", "n", True),
        ("o", "p", True),
        ("y", "a", True),  # QWERTZ: y sits below a
        ("m", "l", True),  # AZERTY: m sits beside l
        ("g", "q", False),
        ("a", "l", False),
    ],
)
def test_keys_that_touch(a: str, b: str, expected: bool) -> None:
    assert touching(a, b) is expected


def test_every_kind_of_slip_of_a_name() -> None:
    slips = label_slips("gmail")
    assert slips["gmaik"] is Slip.ADJACENT_KEY
    assert slips["gmal"] is Slip.DELETION
    assert slips["gmaill"] is Slip.DOUBLING
    assert slips["gmial"] is Slip.TRANSPOSITION
    assert slips["gmaiol"] is Slip.INSERTION  # o touches i
    assert slips["gmails"] is Slip.INSERTION  # one key too many at the end
    assert "gmeil" not in slips  # e does not touch a: no slip of the fingers
    assert "gmail" not in slips


def test_slips_in_the_ending() -> None:
    slips = domain_slips("hotmail.co.uk", "co.uk")
    assert slips["hotmail.co.ul"] is Slip.TLD
    assert slips["hotmai.co.uk"] is Slip.DELETION
    assert domain_slips("gmail.com", "com")["gmail.con"] is Slip.TLD


def test_a_slip_of_two_providers_belongs_to_neither(lists: DomainLists) -> None:
    index = slip_index(lists.provider_suffixes)
    assert index["gmial.com"] == ("gmail.com", Slip.TRANSPOSITION)
    assert "gmx.de" not in index and "gmail.com" not in index  # providers are no slips
    # hotmail.dr is hotmail.de with r for e, and hotmail.fr with d for f: nobody's
    assert domain_slips("hotmail.de", "de")["hotmail.dr"] is Slip.TLD
    assert domain_slips("hotmail.fr", "fr")["hotmail.dr"] is Slip.TLD
    assert "hotmail.dr" not in index


@pytest.mark.parametrize(
    ("domain", "mx", "expected"),
    [
        # Own-name mail host, one slip from a provider, no list knows it: a squat.
        ("gmaio.com", "mx.gmaio.com", "gmail.com"),
        ("yahpo.de", "mail.yahpo.de", "yahoo.de"),
        ("t-onlne.de", "mx.t-onlne.de", "t-online.de"),
        ("hotmail.co.ul", "mx.hotmail.co.ul", "hotmail.co.uk"),
        # A parking service's catch-all host.
        ("comcasst.net", PARKING, "comcast.net"),
        ("wanadoi.fr", "mx1.sedoparking.com", "wanadoo.fr"),
        # The provider's own exchanges: its own registration or a customer of its mail.
        ("gmaio.com", "gmail-smtp-in.l.google.com", ""),
        ("yahpo.de", "mta5.am0.yahoodns.net", ""),
        # A mainstream mail host: a real organisation's.
        ("gmaio.com", "gmaio-com.mail.protection.outlook.com", ""),
        ("comcasst.net", "mx.zoho.eu", ""),
        # Known to be real (near_providers.txt, curated by hand or from the packages).
        ("cloud.com", "mx.cloud.com", ""),
        ("life.com", "mx.life.com", ""),
        ("weg.de", PARKING, ""),
        # A short name under a real TLD: its own host is not enough; a parking host is.
        ("mai.ru", "mx.mai.ru", ""),
        ("maac.com", "mx.maac.com", "mac.com"),  # four letters: not short
        ("mzc.com", PARKING, "mac.com"),
        # No typing slip: other rules (4a) or nothing.
        ("gmeil.com", "mx.gmeil.com", "gmail.com"),  # rule 4a: one edit, first letter kept
        ("wahoo.com", "mx.wahoo.com", ""),
        ("aon.com", PARKING, ""),
    ],
)
def test_online_evidence(lists: DomainLists, domain: str, mx: str, expected: str) -> None:
    found = suggest(domain, has_working_mx=True, lists=lists, mx=mx)
    assert found.domain == expected
    assert bool(found.why) is bool(expected)


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        # Offline the curated lists alone decide: a slip no list knows as real is suggested.
        ("gmaio.com", "gmail.com"),
        ("yahpo.de", "yahoo.de"),
        ("cloud.com", ""),  # known real
        ("gmx.de", ""),  # a provider
        ("mai.ru", ""),  # a short name: no third party's host to tell
        ("aon.com", ""),  # no slip
        ("gmial.com", "gmail.com"),  # curated typo
    ],
)
def test_offline_lists_alone(lists: DomainLists, domain: str, expected: str) -> None:
    found = suggest(domain, has_working_mx=False, lists=lists, dns_answered=False)
    assert found.domain == expected


def test_the_operators_own_list(lists: DomainLists) -> None:
    assert squat("gmaio.com", lists, mx="mx.gmaio.com", dns_answered=True) is not None
    own = load_lists(extra_legitimate=["GMAIO.com."])
    assert squat("gmaio.com", own, mx="mx.gmaio.com", dns_answered=True) is None
    assert suggest("gmaio.com", has_working_mx=False, lists=own, dns_answered=False).domain == ""
    # ... and a curated typo the operator says is theirs stays theirs
    assert (
        suggest(
            "gmial.com",
            has_working_mx=True,
            lists=load_lists(extra_legitimate=["gmial.com"]),
            mx="mx.gmial.com",
        ).domain
        == ""
    )


def test_detail_says_why(lists: DomainLists) -> None:
    own = suggest("gmaio.com", has_working_mx=True, lists=lists, mx="mx.gmaio.com").why
    assert "gmail.com" in own and "own mail host (mx.gmaio.com)" in own and "google.com" in own
    parked = suggest("gmaio.com", has_working_mx=True, lists=lists, mx=PARKING).why
    assert "third party's mail host (park-mx.above.com)" in parked
    offline = suggest("gmaio.com", has_working_mx=False, lists=lists, dns_answered=False).why
    assert "DNS was not asked" in offline


def test_shipped_lists_hold_together(lists: DomainLists) -> None:
    assert len(lists.providers) >= 40
    for provider, exchanges in lists.providers.items():
        assert provider in lists.free_providers, provider
        assert exchanges, provider
    # a real domain is neither a provider nor a curated typo
    assert not lists.legitimate & set(lists.providers)
    assert not lists.legitimate & set(lists.known_typos)
    assert all(lists.versions.values())
