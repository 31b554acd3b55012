"""Each adapter against its vendor's loopback fake: the balance, the vendor's sandbox
addresses, a bulk job that finishes after a few polls, and every failure the vendor reports
(inside HTTP 200 too) read as the failure it is, never as an answer, with no key in its words."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from pipeline.core.config import VendorConfig
from pipeline.core.errors import UsageError
from pipeline.core.mailboxes.vendors.bouncer import Bouncer
from pipeline.core.mailboxes.vendors.checker import ADAPTERS
from pipeline.core.mailboxes.vendors.emailable import Emailable
from pipeline.core.mailboxes.vendors.http import Adapter, VendorHttp, origin_of, redact
from pipeline.core.mailboxes.vendors.kickbox import Kickbox
from pipeline.core.mailboxes.vendors.neverbounce import NeverBounce
from pipeline.core.mailboxes.vendors.types import Failure, VendorError
from pipeline.core.mailboxes.vendors.zerobounce import ZeroBounce
from worlds.vendors.base import GOOD_KEY, FakeVendor
from worlds.vendors.bouncer import FakeBouncer
from worlds.vendors.emailable import FakeEmailable
from worlds.vendors.kickbox import FakeKickbox
from worlds.vendors.neverbounce import FakeNeverBounce
from worlds.vendors.zerobounce import FakeZeroBounce

T = TypeVar("T")
FAST = VendorConfig(retries=2, backoff=0.001, per_minute=1_000_000, timeout=5.0)
BAD_KEY = "wrong-key-8c2d1f0e"
FAKES: dict[str, type[FakeVendor]] = {
    "zerobounce": FakeZeroBounce,
    "neverbounce": FakeNeverBounce,
    "kickbox": FakeKickbox,
    "emailable": FakeEmailable,
    "bouncer": FakeBouncer,
}
# Per vendor: (address, the reason code its answer maps to), from its sandbox or triggers.
MAGIC: dict[str, list[tuple[str, str]]] = {
    "zerobounce": [
        ("valid@example.com", "api_verified"),
        ("invalid@example.com", "no_such_user"),
        ("spamtrap@example.com", "spamtrap"),
        ("donotmail@example.com", "do_not_mail"),
        ("unknown@example.com", "vendor_unknown"),
        ("shiny_new_status@example.com", "vendor_unknown"),
    ],
    "neverbounce": [
        ("anyone@example.com", "api_verified"),
        ("invalid@example.com", "no_such_user"),
        ("trap@example.com", "do_not_mail"),
        ("inconclusive@example.com", "vendor_unknown"),
    ],
    "kickbox": [
        ("anyone@example.com", "api_verified"),
        ("rejected-email@example.com", "no_such_user"),
        ("person+accept-all@example.com", "catch_all"),
        ("timeout@example.com", "smtp_timeout"),
        ("new-result@example.com", "vendor_unknown"),
    ],
    "emailable": [
        ("deliverable@example.com", "api_verified"),
        ("undeliverable@example.com", "no_such_user"),
        ("mailbox-full@example.com", "mailbox_full"),
        ("new-state@example.com", "vendor_unknown"),
    ],
    "bouncer": [
        ("anyone@example.com", "api_verified"),
        ("disabled@example.com", "mailbox_disabled"),
        ("greylisted@example.com", "greylisted"),
        ("unsupported@example.com", "provider_unverifiable"),
    ],
}


@pytest.fixture(params=list(FAKES))
def vendor(request: pytest.FixtureRequest) -> Iterator[tuple[Adapter, FakeVendor]]:
    with FAKES[request.param]() as fake:
        yield ADAPTERS[request.param](), fake


def ask(
    adapter: Adapter,
    fake: FakeVendor,
    use: Callable[[VendorHttp], Awaitable[T]],
    key: str = GOOD_KEY,
) -> T:
    async def run() -> T:
        http = VendorHttp(adapter.name, adapter.origins, key, FAST, adapter.limits, base=fake.url)
        async with http:
            return await use(http)

    return asyncio.run(run())


def test_balance_and_the_sandbox_addresses(vendor: tuple[Adapter, FakeVendor]) -> None:
    adapter, fake = vendor
    assert ask(adapter, fake, adapter.balance) == 1_000
    for address, reason in MAGIC[adapter.name]:

        async def check(http: VendorHttp, a: str = address) -> Any:
            return await http.retrying(lambda: adapter.check(http, a))

        assert ask(adapter, fake, check).reason.value == reason, address


def test_a_bulk_job_finishes_after_its_polls(vendor: tuple[Adapter, FakeVendor]) -> None:
    adapter, fake = vendor
    addresses = [a for a, _ in MAGIC[adapter.name]]

    async def bulk(http: VendorHttp) -> tuple[int, dict[str, str]]:
        job = await adapter.submit(http, addresses)
        polls = 1
        while not (await adapter.status(http, job)).done:
            polls += 1
        found = await adapter.results(http, job)
        return polls, {a: r.reason.value for a, r in found.items()}

    polls, found = ask(adapter, fake, bulk)
    assert polls == 2  # the fake's jobs are done on their second status poll
    assert found == {a.lower(): r for a, r in MAGIC[adapter.name]}


def test_a_refused_key_is_a_refusal_and_its_words_hold_no_key(
    vendor: tuple[Adapter, FakeVendor],
) -> None:
    adapter, fake = vendor
    with pytest.raises(VendorError) as raised:
        ask(adapter, fake, adapter.balance, key=BAD_KEY)
    assert raised.value.failure is Failure.KEY_REFUSED
    assert BAD_KEY not in str(raised.value)  # NeverBounce's fake quotes the key back

    async def check(http: VendorHttp) -> Any:
        return await adapter.check(http, "anyone@example.com")

    with pytest.raises(VendorError) as again:
        ask(adapter, fake, check, key=BAD_KEY)
    # ZeroBounce's one message for two causes is settled by getcredits' "-1".
    assert again.value.failure is Failure.KEY_REFUSED


def test_an_empty_balance_is_no_credits_never_an_answer(vendor: tuple[Adapter, FakeVendor]) -> None:
    adapter, fake = vendor
    fake.balances[GOOD_KEY] = 0

    async def check(http: VendorHttp) -> Any:
        return await adapter.check(http, "anyone@example.com")

    with pytest.raises(VendorError) as raised:
        ask(adapter, fake, check)
    assert raised.value.failure is Failure.NO_CREDITS


def test_5xx_is_asked_again_then_unavailable(vendor: tuple[Adapter, FakeVendor]) -> None:
    adapter, fake = vendor
    fake.fail_next = [503, 520]

    async def check(http: VendorHttp) -> Any:
        return await adapter.check(http, "anyone@example.com")

    assert ask(adapter, fake, check).answered
    fake.fail_next = [500, 502, 504]
    with pytest.raises(VendorError) as raised:
        ask(adapter, fake, check)
    assert raised.value.failure is Failure.UNAVAILABLE


def test_neverbounce_throttle_inside_200_is_waited_out() -> None:
    with FakeNeverBounce() as fake:
        fake.throttle = 2
        adapter = NeverBounce()

        async def check(http: VendorHttp) -> Any:
            return await http.retrying(lambda: adapter.check(http, "a@example.com"))

        assert ask(adapter, fake, check).answered
        assert fake.count("/v4.2/single/check") == 3 and fake.spent == 1


def test_emailable_249_is_asked_again_for_free() -> None:
    with FakeEmailable() as fake:
        adapter = Emailable()

        async def check(http: VendorHttp) -> Any:
            return await http.retrying(lambda: adapter.check(http, "slow@example.com"))

        assert ask(adapter, fake, check).reason.value == "api_verified"
        assert fake.count("/v1/verify") == 2 and fake.spent == 1


def test_kickbox_403_is_read_for_which_cause() -> None:
    with FakeKickbox() as fake:
        adapter = Kickbox()

        async def check(http: VendorHttp) -> Any:
            return await adapter.check(http, "insufficient-balance@example.com")

        with pytest.raises(VendorError) as raised:
            ask(adapter, fake, check)
        assert raised.value.failure is Failure.NO_CREDITS


def test_zerobounce_error_inside_200_with_credits_left_is_no_credits_only_when_it_says() -> None:
    with FakeZeroBounce(credits=1) as fake:
        adapter = ZeroBounce()

        async def two(http: VendorHttp) -> Any:
            await adapter.check(http, "valid@example.com")
            return await adapter.check(http, "valid2@example.com")

        with pytest.raises(VendorError) as raised:
            ask(adapter, fake, two)
        assert raised.value.failure is Failure.NO_CREDITS
        assert fake.count("/v2/getcredits") == 1  # the balance told the two causes apart


def test_bouncer_and_the_key_in_headers_only() -> None:
    with FakeBouncer() as fake:
        adapter = Bouncer()
        ask(adapter, fake, lambda http: adapter.check(http, "a@example.com"))
        assert all(GOOD_KEY not in str(c.query) for c in fake.calls)


def test_the_api_url_replaces_scheme_host_and_port_only() -> None:
    assert origin_of("http://127.0.0.1:8080/", "kickbox") == "http://127.0.0.1:8080"
    assert (
        origin_of("https://api-eu.zerobounce.net", "zerobounce") == "https://api-eu.zerobounce.net"
    )
    for bad in ("http://api.kickbox.com", "https://proxy.example/v2", "ftp://x", "nothing"):
        with pytest.raises(UsageError):
            origin_of(bad, "kickbox")


def test_redact_blanks_every_key_parameter() -> None:
    url = "https://api.zerobounce.net/v2/validate?api_key=SECRET&email=a%40b.c&key=S2&apikey=S3"
    shown = redact(url)
    assert "SECRET" not in shown and "S2" not in shown and "S3" not in shown
    assert "email=a%40b.c" in shown
