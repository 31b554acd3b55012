"""Answers decided per domain (pipeline/core/domains/shapes.py): a plain address answered from
its domain's shape gets, byte for byte, the text the engine's steps write for it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.assembly.build import EngineOptions, open_engine
from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.bounces.types import BounceFlags
from pipeline.core.calibration.types import Calibration, Level, LevelStatus
from pipeline.core.config import BouncesConfig, Config
from pipeline.core.domains.dns import DnsAnswer, DnsStatus
from pipeline.core.domains.shapes import AnswerShapes
from pipeline.core.engine import Engine, verify_many_json
from tests.conftest import StoreAt
from tests.core.bounces.common import HARD, SAMPLE_NOW, SOFT, event

# Every kind of DNS answer, a disposable domain, a free provider, a typo of one (suggested),
# a company's domain, an IDN, and a domain the ledger finds dead.
WORLD = {
    "gmail.com": DnsAnswer(DnsStatus.MX, "gmail-smtp-in.l.google.com"),
    "outlook.com": DnsAnswer(DnsStatus.MX, "outlook-com.olc.protection.outlook.com"),
    "gmial.com": DnsAnswer(DnsStatus.NO_DOMAIN),
    "yahooo.com": DnsAnswer(DnsStatus.NULL_MX),
    "mailinator.com": DnsAnswer(DnsStatus.MX, "mail.mailinator.com"),
    "acme-widgets.com": DnsAnswer(DnsStatus.MX, "mx1.acme-widgets.com"),
    "implicit.example.org": DnsAnswer(DnsStatus.IMPLICIT_MX, "implicit.example.org"),
    "nomail.example.net": DnsAnswer(DnsStatus.NO_MAIL_HOST),
    "slow.example.net": DnsAnswer(DnsStatus.TIMEOUT),
    "broken.example.net": DnsAnswer(DnsStatus.SERVFAIL),
    "xn--bcher-kva.de": DnsAnswer(DnsStatus.MX, "mx.xn--bcher-kva.de"),
    "dead.example.com": DnsAnswer(DnsStatus.MX, "mx.dead.example.com"),
}
DOMAINS = [*WORLD, "GMAIL.COM", "Outlook.Com", "bücher.de", "gmail.com."]
LOCALS = [
    "john",
    "john.smith",
    "J.Smith",
    "mary+news",
    "o'brien",
    "a/b=c?d^e_f`g{h|i}j~k",
    "x!#$%&*-y",
    "info",
    "Info+x",
    "no-reply",
    "postmaster",
    "sales",
    "a",
    "mx",
    "gmail",
    "Valid",
    "true",
    "EMAIL",
    "u" * 64,
]
BROKEN = [
    "",
    "   ",
    "john..smith@gmail.com",
    "john smith@gmail.com",
    "John Smith <john@gmail.com>",
    "mailto:john@gmail.com",
    '"john smith"@gmail.com',
    "jöhn@gmail.com",
    "john@[127.0.0.1]",
    "john@",
    "@gmail.com",
    "john@localhost",
    "u" * 65 + "@gmail.com",
    "john@gmail",
]
KNOWN_BOUNCE = "john@acme-widgets.com"
SOFT_BOUNCE = "sales@acme-widgets.com"


@pytest.fixture
def engine(tmp_path: Path, store_at: StoreAt) -> Iterator[Engine]:
    with contextlib.ExitStack() as stack:
        opened = open_engine(stack, Config(), tmp_path / "domains.sqlite", EngineOptions())
        assert opened.cache is not None and opened.checker is None
        opened.cache.put_many(WORLD)
        bounces = BouncesConfig()
        ledger = stack.enter_context(
            BounceLedger(store_at("bounces.sqlite"), bounces, lambda: SAMPLE_NOW)
        )
        day = 86400.0
        dead = [
            event(f"user{i}@dead.example.com", HARD, SAMPLE_NOW - day)
            for i in range(bounces.domain_min_addresses + 5)
        ]
        soft = [event(SOFT_BOUNCE, SOFT, SAMPLE_NOW - day * i) for i in range(1, 6)]
        ledger.add([event(KNOWN_BOUNCE, HARD, SAMPLE_NOW - day), *dead, *soft])
        yield dataclasses.replace(opened, bounces=ledger, calibration=_calibration())


def _calibration() -> Calibration:
    """Cells at the level, at a REASON and at a provider, so SCORE moves in each way."""

    def level(score: float, reason: str | None, provider: str | None, to: float) -> Level:
        return Level(score, "Valid", 500, 10, to, to, to, LevelStatus.APPLIED, reason, provider)

    levels = (
        level(0.9, None, None, 0.86),
        level(0.9, "", "gmail", 0.97),
        level(0.81, "role", None, 0.83),
    )
    return Calibration("cal-1", "crm", True, 1.0, 200, 1500, levels, {"gmail.com": "gmail"})


def _values(rng: random.Random, count: int) -> list[str]:
    values = []
    for _ in range(count):
        if rng.random() < 0.1:
            values.append(rng.choice(BROKEN))
        else:
            values.append(f"{rng.choice(LOCALS)}@{rng.choice(DOMAINS)}")
    return values


def _answers(
    engine: Engine, batches: Sequence[list[str]], shapes: AnswerShapes | None
) -> list[list[str]]:
    async def run() -> list[list[str]]:
        try:
            return [await verify_many_json(engine, b, shapes=shapes) for b in batches]
        finally:
            await engine.dns.close()

    return asyncio.run(run())


def test_an_answer_from_a_shape_is_the_engines_own(engine: Engine) -> None:
    rng = random.Random(34)
    # Batches of every size up to the service's, values drawn with repeats (so some rows
    # repeat an earlier row of their batch), plus the known bounces among them.
    batches = [_values(rng, rng.randint(1, 64)) for _ in range(150)]
    batches.append([KNOWN_BOUNCE, SOFT_BOUNCE, "user1@dead.example.com", "john@gmail.com"] * 3)
    shapes = AnswerShapes()
    assert _answers(engine, batches, shapes) == _answers(engine, batches, None)
    # Most answers came from shapes; a shape is kept per domain, answer, role and repeat.
    assert shapes.hits > 3 * shapes.misses
    assert len(shapes) <= len(WORLD) * 2 * 2


def test_the_ledger_is_asked_about_every_address(engine: Engine) -> None:
    shapes = AnswerShapes()
    first = _answers(engine, [["mary@acme-widgets.com"] * 1, ["bob@acme-widgets.com"]], shapes)
    assert '"VERDICT":"Valid"' in first[1][0] and shapes.hits == 1
    assert engine.bounces is not None
    engine.bounces.add([event("bob@acme-widgets.com", HARD, SAMPLE_NOW - 60)])
    [[after]] = _answers(engine, [["bob@acme-widgets.com"]], shapes)
    assert '"VERDICT":"Invalid"' in after and '"HAS_KNOWN_BOUNCES":true' in after


class _BounceWhileAsked(BounceLedger):
    """A ledger that records a hard bounce for *key* right after it is first asked: a
    bounce report arriving while a batch is being answered."""

    def __init__(self, *args: Any, key: str) -> None:
        super().__init__(*args)
        self._key: str | None = key

    def flags(self, keys: Iterable[str]) -> dict[str, BounceFlags]:
        found = super().flags(keys)
        if self._key is not None:
            self.add([event(self._key, HARD, SAMPLE_NOW - 60)])
            self._key = None
        return found


def test_a_bounce_recorded_during_a_pass_never_becomes_a_domains_shape(
    engine: Engine, tmp_path: Path
) -> None:
    with _BounceWhileAsked(
        tmp_path / "racing.sqlite", BouncesConfig(), lambda: SAMPLE_NOW, key="bob@acme-widgets.com"
    ) as ledger:
        racing = dataclasses.replace(engine, bounces=ledger)
        shapes = AnswerShapes()
        # Bob's batch is answered on the ledger as it was read: no bounce yet.
        [[bob]] = _answers(racing, [["bob@acme-widgets.com"]], shapes)
        [[carol]] = _answers(racing, [["carol@acme-widgets.com"]], shapes)
        assert '"VERDICT":"Valid"' in bob and shapes.hits == 1
        [[plain]] = _answers(racing, [["carol@acme-widgets.com"]], None)
        assert carol == plain
        [[bob_now]] = _answers(racing, [["bob@acme-widgets.com"]], shapes)
        assert '"HAS_KNOWN_BOUNCES":true' in bob_now


def test_a_domain_whose_answer_changes_gets_a_new_shape(engine: Engine) -> None:
    shapes = AnswerShapes()
    [[before]] = _answers(engine, [["mary@acme-widgets.com"]], shapes)
    assert engine.cache is not None
    engine.cache.put_many({"acme-widgets.com": DnsAnswer(DnsStatus.NULL_MX)})
    [[after]] = _answers(engine, [["bob@acme-widgets.com"]], shapes)
    [[plain]] = _answers(engine, [["bob@acme-widgets.com"]], None)
    assert after == plain and '"VERDICT":"Invalid"' in after and '"VERDICT":"Valid"' in before


def test_an_answer_that_holds_the_address_elsewhere_is_not_shaped() -> None:
    shapes = AnswerShapes()
    suggested = (
        '{"EMAIL":"ann@gmial.com","VERDICT":"Invalid","LOCAL":"ann","SUGGESTION":"ann@gmail.com"}'
    )
    shapes.learn("typo", "ann@gmial.com", "ann", suggested)
    assert len(shapes) == 0
    plain = '{"EMAIL":"ann@x.com","VERDICT":"Valid","LOCAL":"ann","DOMAIN":"x.com"}'
    shapes.learn("x", "ann@x.com", "ann", plain)
    assert shapes.answer("x", "bo@x.com", "bo") == plain.replace("ann", "bo")
    # Text JSON would escape is never put into a shape, nor learned from.
    assert shapes.answer("x", 'b"o@x.com', 'b"o') is None
    shapes.learn("y", 'b"o@x.com', 'b"o', plain.replace("ann", 'b\\"o'))
    assert len(shapes) == 1


def test_the_oldest_shape_goes_past_the_limit() -> None:
    shapes = AnswerShapes(limit=2)
    for key in ("a", "b", "c"):
        shapes.learn(key, "ann@x.com", "ann", '{"EMAIL":"ann@x.com","LOCAL":"ann"}')
    assert len(shapes) == 2
    assert shapes.answer("a", "bo@x.com", "bo") is None
    assert shapes.answer("c", "bo@x.com", "bo") == '{"EMAIL":"bo@x.com","LOCAL":"bo"}'
