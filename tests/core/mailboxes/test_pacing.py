"""How long the pacing settings make a run's probes take: the busiest provider decides."""

from __future__ import annotations

import pytest

from pipeline.core.config import VerifyConfig
from pipeline.core.domains.dns import DnsStatus
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.pacing import pace_of, provider_of
from pipeline.core.mailboxes.step import runs_of
from pipeline.core.mailboxes.types import Target

CONFIG = VerifyConfig(rcpts_per_minute_per_host=120, rcpts_per_minute_per_provider=300)


def targets(domain: str, n: int) -> list[Target]:
    return [Target(f"u{i}@{domain}", f"u{i}@{domain}", domain, DnsStatus.MX) for i in range(n)]


def test_hosts_of_one_registrable_domain_are_one_provider(lists: DomainLists) -> None:
    assert provider_of("alt1.gmail-smtp-in.l.google.com", lists) == "google.com"
    assert provider_of("mx.example.co.uk", lists) == "example.co.uk"


@pytest.mark.parametrize(
    ("mx", "minutes"),
    [
        # One host: 120 a minute. 599 addresses and the catch-all probe: 5 minutes.
        ({"a.com": "mx.a.com"}, 600 / 120),
        # Three hosts of one provider: the provider's 300 a minute is the lower limit.
        ({"a.com": "mx1.p.net", "b.com": "mx2.p.net", "c.com": "mx3.p.net"}, 603 / 300),
    ],
)
def test_the_pace_is_the_slowest_limit(
    lists: DomainLists, mx: dict[str, str], minutes: float
) -> None:
    reached = [t for d in mx for t in targets(d, 599 if len(mx) == 1 else 200)]
    pace = pace_of(runs_of(reached), {}, mx, CONFIG, lists)
    assert pace is not None
    assert pace.seconds == pytest.approx(minutes * 60)
    assert pace.greylist_seconds == sum(CONFIG.greylist_delays)


def test_providers_are_probed_side_by_side(lists: DomainLists) -> None:
    mx = {"big.com": "mx.big.com", "small.com": "mx.small.com"}
    reached = targets("big.com", 239) + targets("small.com", 10)
    pace = pace_of(runs_of(reached), {"small.com": False}, mx, CONFIG, lists)
    assert pace is not None
    assert (pace.busiest, pace.requests, pace.per_minute) == ("big.com", 240, 120)
    assert pace.seconds == pytest.approx(120.0)


def test_known_catch_all_domains_need_no_probe_and_nothing_reached_takes_no_time(
    lists: DomainLists,
) -> None:
    reached = runs_of(targets("a.com", 120))
    pace = pace_of(reached, {"a.com": True}, {"a.com": "mx.a.com"}, CONFIG, lists)
    assert pace is not None and pace.requests == 120
    assert pace_of([], {}, {}, CONFIG, lists) is None


def test_an_implicit_mx_is_the_domain_itself(lists: DomainLists) -> None:
    pace = pace_of(runs_of(targets("solo.org", 5)), {}, {}, CONFIG, lists)
    assert pace is not None and pace.busiest == "solo.org"
