"""Answers refreshed within budget: lifetimes drawn between ttl_floor x TTL and the TTL when an
answer is learned (never asked again before), the budget's order (never answered first, then
due answers, oldest first), and a due answer the budget does not reach shown with its age."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest

from pipeline.core.config import VendorConfig, VerifyConfig
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.cache import MailboxCache
from pipeline.core.mailboxes.checkers import SmtpChecker, unreached
from pipeline.core.mailboxes.smtp import smtp_settings
from pipeline.core.mailboxes.step import stale_note
from pipeline.core.mailboxes.types import (
    Budget,
    Mailbox,
    MailboxResult,
    Plan,
    Refresh,
    lifetime,
    refresh_of,
)
from pipeline.core.mailboxes.vendors.store import PaidAnswers
from pipeline.core.mailboxes.vendors.types import VendorAnswer
from pipeline.core.verdict import Reason

DAY = 86400.0
TTL = 30 * DAY


class Clock:
    def __init__(self) -> None:
        self.at = 1_800_000_000.0

    def __call__(self) -> float:
        return self.at


def rows(*addresses: str) -> pl.DataFrame:
    """Rows the address step would probe, on one good domain, in this order."""
    n = len(addresses)
    return pl.DataFrame(
        {
            "KEY": list(addresses),
            "EMAIL": list(addresses),
            "DOMAIN": ["x.org"] * n,
            "MX": ["mx.x.org"] * n,
            "DNS_STATUS": ["mx"] * n,
            "SYNTAX": ["ok"] * n,
            "DUPLICATE": [False] * n,
            "DISPOSABLE": [False] * n,
            "SUGGESTED_DOMAIN": [""] * n,
        }
    )


def checker(cache: MailboxCache, budget: int | None, plans: list[Plan]) -> SmtpChecker:
    config = VerifyConfig(helo="probe.example.net", mail_from="p@example.net")
    settings = smtp_settings(config)
    return SmtpChecker(config, settings, cache, Budget(budget), on_plan=plans.append)


@pytest.mark.parametrize("floor", [0.0, 0.5, 0.9])
def test_lifetimes_lie_between_the_floor_and_the_ttl_and_spread(floor: float) -> None:
    drawn = [lifetime(TTL, f"a{i}@x.org", 1_800_000_000.0, floor) for i in range(5_000)]
    assert all(floor * TTL <= d <= TTL for d in drawn)
    # Spread over the whole range: each tenth of it holds a tenth of the answers, give or take.
    width = (1 - floor) * TTL / 10
    tenths = [sum(1 for d in drawn if floor * TTL + i * width <= d < floor * TTL + (i + 1) * width)
              for i in range(10)]  # fmt: skip
    assert min(tenths) > 400 and max(tenths) < 600


def test_a_floor_of_one_is_no_jitter_and_a_draw_is_the_same_everywhere() -> None:
    assert lifetime(TTL, "a@x.org", 5.0, 1.0) == TTL
    assert lifetime(TTL, "a@x.org", 5.0, 0.5) == lifetime(TTL, "a@x.org", 5.0, 0.5)
    assert lifetime(TTL, "a@x.org", 5.0, 0.5) != lifetime(TTL, "a@x.org", 6.0, 0.5)


def test_an_answer_is_not_asked_again_within_its_lifetime(tmp_path: Path) -> None:
    clock = Clock()
    config = VerifyConfig(ttl_good=int(TTL), ttl_floor=0.5)
    with MailboxCache(tmp_path / "m.sqlite", config, clock) as cache:
        cache.put("a@x.org", MailboxResult(Mailbox.OK, "250 ok", clock.at))
        lasts = lifetime(TTL, "a@x.org", clock.at, 0.5)
        clock.at += lasts - 1
        assert list(cache.with_due(["a@x.org"])[0]) == ["a@x.org"]
        clock.at += 2
        fresh, due = cache.with_due(["a@x.org"])
        assert not fresh and due["a@x.org"].at == clock.at - lasts - 1


def test_the_budget_goes_to_the_never_answered_then_to_the_oldest_due(
    tmp_path: Path, lists: DomainLists
) -> None:
    clock = Clock()
    config = VerifyConfig(ttl_good=int(TTL), ttl_floor=1.0)
    plans: list[Plan] = []
    with MailboxCache(tmp_path / "m.sqlite", config, clock) as cache:
        cache.put_catch_all({"x.org": False})
        for age in (40, 35, 50):  # days since each answer was learned
            key = f"aged{age}@x.org"
            at = clock.at - age * DAY
            clock.at, now = at, clock.at
            cache.put(key, MailboxResult(Mailbox.OK, "250 2.1.5 Ok", at))
            clock.at = now
        cache.put("fresh@x.org", MailboxResult(Mailbox.OK, "250 2.1.5 Ok", clock.at))
        order = ["aged40@x.org", "new1@x.org", "fresh@x.org", "aged35@x.org", "aged50@x.org"]
        order += ["new2@x.org"]
        work = checker(cache, 4, plans).assign(rows(*order), lists)
        reached = [t.key for t in work.reached]
        assert reached == ["new1@x.org", "new2@x.org", "aged50@x.org", "aged40@x.org"]
        assert [t.key for t in work.skipped] == ["aged35@x.org"]
        assert list(work.answers) == ["fresh@x.org"]  # never asked again before it is due
        assert work.refresh == Refresh(due=3, refreshed=2, runs=2)  # 5 to ask, 4 a run
        (plan,) = plans
        assert plan.refresh == work.refresh and plan.need_checks == 5 and plan.cached == 1
        shown = unreached(work, clock.at)["aged35@x.org"]
        assert shown.outcome is Mailbox.OK  # the last answer stands
        assert (
            shown.reply == "250 2.1.5 Ok (answered 2026-12-11, 35 days ago: due again, "
            "and this run's budget did not refresh it)"
        )


def test_without_a_budget_every_due_answer_is_refreshed_in_one_run(
    tmp_path: Path, lists: DomainLists
) -> None:
    clock = Clock()
    with MailboxCache(tmp_path / "m.sqlite", VerifyConfig(ttl_floor=1.0), clock) as cache:
        clock.at -= 60 * DAY
        cache.put("old@x.org", MailboxResult(Mailbox.NO_SUCH_USER, "550", clock.at))
        clock.at += 60 * DAY
        work = checker(cache, None, []).assign(rows("old@x.org", "new@x.org"), lists)
        assert [t.key for t in work.reached] == ["new@x.org", "old@x.org"]
        assert work.refresh == Refresh(1, 1, 1)


def test_how_many_runs_refresh_them_all() -> None:
    assert refresh_of(0, 0, 10, Budget(3)) == Refresh()
    assert refresh_of(10, 0, 25, Budget(10)) == Refresh(10, 0, 3)
    assert refresh_of(5, 5, 5, Budget(None)) == Refresh(5, 5, 1)


def test_the_note_says_the_age() -> None:
    learned = 1_800_000_000.0
    assert stale_note(learned, learned + 86400 * 1.5).startswith("answered 2027-01-15, 1 day ago")
    assert "past its lifetime" in stale_note(None, learned)


def test_paid_answers_get_a_lifetime_too_and_stay_once_due(tmp_path: Path) -> None:
    clock = Clock()
    config = VendorConfig(ttl=int(TTL))
    with PaidAnswers(tmp_path / "paid.sqlite", config, clock, floor=0.5) as store:
        answer = VendorAnswer(Reason.MAILBOX_OK, "valid", "zerobounce", True, clock.at)
        store.put("a@x.org", answer)
        lasts = lifetime(TTL, "a@x.org", clock.at, 0.5)
        assert 0.5 * TTL <= lasts < TTL
        clock.at += lasts - 1
        assert list(store.answers(["a@x.org"])) == ["a@x.org"]  # still paid for
        clock.at += 2
        fresh, due = store.with_due(["a@x.org"])
        assert not fresh and dataclasses.replace(due["a@x.org"], at=answer.at) == answer
