"""The ledger: idempotent imports, the known/suspected rules, store errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.bounces.types import BounceEvent, BounceFlags, BounceKind, ImportReport
from pipeline.core.config import BouncesConfig
from pipeline.core.errors import StoreError
from tests.conftest import REPO, StoreAt
from tests.core.bounces.common import (
    DAY,
    DELIVERED,
    HARD,
    SAMPLE_CSV,
    SAMPLE_MBOX,
    SAMPLE_NOW,
    SOFT,
    event,
)

# --------------------------------------------------------------------------- the ledger


@pytest.fixture
def ledger(store_at: StoreAt) -> Iterator[BounceLedger]:
    with BounceLedger(store_at("bounces.sqlite"), BouncesConfig(), lambda: SAMPLE_NOW) as opened:
        yield opened


def test_importing_twice_adds_nothing(store_at: StoreAt) -> None:
    path = store_at("bounces.sqlite")
    with BounceLedger(path, BouncesConfig()) as ledger:
        first = ledger.import_file(SAMPLE_CSV)
        assert first == ImportReport(read=32, added=32, duplicates=0, rejected=[])
        mbox = ledger.import_file(SAMPLE_MBOX)
        assert (mbox.read, mbox.added, mbox.duplicates, len(mbox.rejected)) == (6, 6, 0, 1)
    with BounceLedger(path, BouncesConfig()) as ledger:  # and across reopening
        assert ledger.import_file(SAMPLE_CSV) == ImportReport(32, 0, 32, [])
        assert ledger.import_file(SAMPLE_MBOX).added == 0


def test_add_counts_duplicates_within_one_batch_and_skips_keyless_events(
    ledger: BounceLedger,
) -> None:
    one = event("a@b.com", HARD, 1.0, "5.1.1", "gone")
    other_reason = event("a@b.com", HARD, 1.0, "5.1.1", "user unknown")
    keyless = BounceEvent("??", "", "", HARD, "", 1.0, "", "test")
    assert ledger.add([one, one, other_reason, keyless]) == (2, 1)
    assert ledger.add([]) == (0, 0)


@pytest.mark.parametrize(
    ("history", "known"),
    [
        ([(HARD, 1)], True),
        ([(HARD, 1), (DELIVERED, 2)], False),
        ([(DELIVERED, 1), (HARD, 2)], True),
        ([(HARD, 1), (DELIVERED, 2), (HARD, 3)], True),
        ([(HARD, 2), (DELIVERED, 2)], False),  # a delivery as new as the bounce clears it
        ([(SOFT, 1)], False),
        ([(DELIVERED, 1)], False),
    ],
)
def test_a_later_delivery_clears_a_known_bounce(
    ledger: BounceLedger, history: list[tuple[BounceKind, int]], known: bool
) -> None:
    ledger.add(event("a@b.com", kind, SAMPLE_NOW - 10 * DAY + at) for kind, at in history)
    last_hard = max(
        (SAMPLE_NOW - 10 * DAY + at for kind, at in history if kind is HARD), default=None
    )
    delivered = not known and any(kind is DELIVERED for kind, _ in history)
    flags = BounceFlags(known, False, last_hard, delivered)
    assert ledger.flags(["a@b.com"]) == {"a@b.com": flags}


@pytest.mark.parametrize(
    ("soft_days_ago", "delivered_days_ago", "config", "suspected"),
    [
        ([1, 2, 3], None, BouncesConfig(), True),
        ([1, 2], None, BouncesConfig(), False),
        ([1, 2, 89.9], None, BouncesConfig(), True),
        ([1, 2, 90.1], None, BouncesConfig(), False),  # the third is outside the window
        ([1, 2, 3], 2.5, BouncesConfig(), False),  # only two since the last delivery
        ([1, 2, 3], 10, BouncesConfig(), True),
        ([1, 2], None, BouncesConfig(soft_threshold=2), True),
        ([1, 2, 20], None, BouncesConfig(soft_window_days=10), False),
    ],
)
def test_repeated_soft_bounces_within_the_window(
    store_at: StoreAt,
    soft_days_ago: list[float],
    delivered_days_ago: float | None,
    config: BouncesConfig,
    suspected: bool,
) -> None:
    now = SAMPLE_NOW
    events = [event("a@b.com", SOFT, now - days * DAY) for days in soft_days_ago]
    if delivered_days_ago is not None:
        events.append(event("a@b.com", DELIVERED, now - delivered_days_ago * DAY))
    with BounceLedger(store_at("b.sqlite"), config, lambda: now) as ledger:
        ledger.add(events)
        delivered = delivered_days_ago is not None
        flags = BounceFlags(False, suspected, None, delivered)
        assert ledger.flags(["a@b.com"])["a@b.com"] == flags


def test_the_window_moves_with_the_clock(store_at: StoreAt) -> None:
    now = [SAMPLE_NOW]
    with BounceLedger(store_at("b.sqlite"), BouncesConfig(), lambda: now[0]) as ledger:
        ledger.add(event("a@b.com", SOFT, SAMPLE_NOW - days * DAY) for days in (1, 2, 3))
        assert ledger.flags(["a@b.com"])["a@b.com"].suspected
        now[0] += 88 * DAY
        assert not ledger.flags(["a@b.com"])["a@b.com"].suspected


def dead_domain_events(hard: int, soft: int, cleared: int = 0) -> list[BounceEvent]:
    """*hard* addresses of closed.net with a hard bounce, *soft* with a soft one only, and
    *cleared* whose hard bounce a later delivery cleared."""
    events = [event(f"h{i}@closed.net", HARD, SAMPLE_NOW - DAY) for i in range(hard)]
    events += [event(f"s{i}@closed.net", SOFT, SAMPLE_NOW - DAY) for i in range(soft)]
    for i in range(cleared):
        events += [
            event(f"c{i}@closed.net", HARD, SAMPLE_NOW - 2 * DAY),
            event(f"c{i}@closed.net", DELIVERED, SAMPLE_NOW - DAY),
        ]
    return events


@pytest.mark.parametrize(
    ("hard", "soft", "cleared", "config", "dead"),
    [
        (10, 0, 0, BouncesConfig(), True),
        (9, 0, 0, BouncesConfig(), False),  # too few addresses to judge
        (10, 10, 0, BouncesConfig(), True),  # exactly half
        (10, 11, 0, BouncesConfig(), False),  # less than half
        (10, 0, 11, BouncesConfig(), False),  # cleared bounces do not count
        (9, 0, 1, BouncesConfig(), False),
        (3, 3, 0, BouncesConfig(domain_min_addresses=3, domain_hard_rate=0.5), True),
        (10, 1, 0, BouncesConfig(domain_hard_rate=0.95), False),
    ],
)
def test_a_domain_whose_addresses_bounce_makes_all_its_addresses_suspected(
    store_at: StoreAt, hard: int, soft: int, cleared: int, config: BouncesConfig, dead: bool
) -> None:
    with BounceLedger(store_at("b.sqlite"), config, lambda: SAMPLE_NOW) as ledger:
        ledger.add(dead_domain_events(hard, soft, cleared))
        found = ledger.flags(["h0@closed.net", "s0@closed.net", "new@closed.net", "x@open.net"])
    assert found["h0@closed.net"] == BounceFlags(True, dead, SAMPLE_NOW - DAY)
    if soft:
        assert found["s0@closed.net"] == BounceFlags(False, dead, None)
    # An address the ledger never saw is flagged only through its domain.
    assert found.get("new@closed.net") == (BounceFlags(False, True, None) if dead else None)
    assert "x@open.net" not in found


def test_the_sample_reports_at_the_sample_date(ledger: BounceLedger) -> None:
    ledger.import_file(SAMPLE_CSV)
    ledger.import_file(SAMPLE_MBOX)
    keys = [e.key for e in ledger.events(limit=-1)] + ["someone.new@oldtown-isp.net"]
    found = ledger.flags(keys)
    closed_isp = {k for k in found if k.endswith("@oldtown-isp.net")}
    assert len(closed_isp) == 12 + 2 + 1
    assert {k for k, f in found.items() if f.known} == {
        "dlopez@gmail.com",
        "noreply@contoso-bank.co.uk",
        "linda.sato1966@icloud.com",
        "tom@empty-records.com",
        "jonas.jones2004@initech.io",
        "lmuller@northwind-traders.com",
        "sarahfischer@northwind-traders.com",
        *(
            k
            for k in closed_isp
            if k
            not in {
                "richard.hill@oldtown-isp.net",
                "susan.green@oldtown-isp.net",
                "someone.new@oldtown-isp.net",
            }
        ),
    }
    assert {k for k, f in found.items() if f.suspected} == {
        "olga.patel@hotmail.com",
        "priya.laurent@orange.fr",
        *closed_isp,
    }
    # Cleared by a later delivery; three soft bounces but one too old; single soft bounces.
    for key in ("lmartinez@outlook.com", "ivanov.m@gmail.com", "yuki.harris@live.com"):
        assert not found[key].known and not found[key].suspected


def test_flags_for_a_hundred_thousand_keys(ledger: BounceLedger) -> None:
    ledger.add(dead_domain_events(hard=50, soft=0))
    ledger.add(event(f"user{i}@gmail.com", SOFT, SAMPLE_NOW - i * 60) for i in range(0, 1000, 7))
    keys = [f"user{i}@gmail.com" for i in range(100_000)] + ["h1@closed.net", "x@closed.net"]
    found = ledger.flags(keys)
    assert len(found) == len(range(0, 1000, 7)) + 2
    assert found["user7@gmail.com"] == BounceFlags(False, False, None)
    assert found["x@closed.net"] == BounceFlags(False, True, None)


def test_events_newest_first_by_any_spelling(ledger: BounceLedger) -> None:
    ledger.add(
        [
            event("ann@gmail.com", HARD, 3.0, "5.1.1"),
            event("ann@gmail.com", SOFT, 1.0, "4.2.2"),
            event("ann@gmail.com", DELIVERED, 2.0, "2.0.0"),
            event("bob@gmail.com", SOFT, 4.0),
        ]
    )
    assert [e.at for e in ledger.events("  ANN@GMAIL.COM ")] == [3.0, 2.0, 1.0]
    assert [e.key for e in ledger.events(limit=2)] == ["bob@gmail.com", "ann@gmail.com"]
    assert ledger.events("nobody@gmail.com") == []
    assert ledger.events("ann@gmail.com", limit=1) == [event("ann@gmail.com", HARD, 3.0, "5.1.1")]


def test_ledger_store_location(tmp_path: Path) -> None:
    from pipeline.core.db.sqlite import beside_domain_cache

    cache = tmp_path / "domains.sqlite"
    assert beside_domain_cache(cache, "bounces", BouncesConfig().db) == tmp_path / "bounces.sqlite"
    assert beside_domain_cache(cache, "bounces", BouncesConfig(db="/srv/b.sqlite").db) == Path(
        "/srv/b.sqlite"
    )
    sandbox = tmp_path / "sandbox-domains.sqlite"
    assert beside_domain_cache(sandbox, "bounces") == tmp_path / "sandbox-bounces.sqlite"


def test_an_unusable_ledger_file_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(StoreError, match="Cannot open the bounce ledger"):
        BounceLedger(tmp_path / "dir.sqlite", BouncesConfig())


def test_scope_is_the_keys_with_events_and_the_dead_domains(store_at: StoreAt) -> None:
    from pipeline.core.bounces.ledger import BounceLedger
    from pipeline.core.config import BouncesConfig

    with BounceLedger(store_at("scope.sqlite"), BouncesConfig()) as ledger:
        assert ledger.scope() == (set(), set())  # an empty ledger costs a batch nothing
        ledger.import_file(REPO / "sample_data" / "bounces.csv")
        keys, dead = ledger.scope()
    assert "dlopez@gmail.com" in keys
    assert dead == {"oldtown-isp.net"}
