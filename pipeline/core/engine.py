"""The verification engine: the steps both fronts (batch and service) run, written once.

Every step is a function over a polars frame plus injected resources (:class:`Engine`), so the
batch stages, the ``verify`` command and the HTTP service share one implementation of each
rule, and a distributed runner can call the same functions per partition.

    annotate_addresses  raw addresses -> EMAIL, LOCAL, DOMAIN, KEY, SYNTAX, ROLE, DUPLICATE
    check_domains       distinct domains -> DNS answer (cache, then DNS), disposable, typo
    attach_domains      join the domain table back onto the rows
    check_addresses     the mailbox answers (SMTP or a remote API) and the bounce ledger's flags
    decide              VERDICT, SCORE, REASON and the other spec fields (:mod:`.decide`),
                        SCORE then calibrated to the list's own sends (:mod:`.calibration`)

The service answers a plain address whose domain it has answered before from that answer's
shape (:mod:`.domains.shapes`): the steps' own text, with the address put in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import polars as pl

from pipeline.core.addresses.step import annotate_addresses, annotate_domains
from pipeline.core.addresses.syntax import Syntax
from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.bounces.step import attach_bounces, bounce_keys, join_bounce_flags
from pipeline.core.bounces.types import BounceFlags
from pipeline.core.calibration.apply import calibrated
from pipeline.core.calibration.types import Calibration
from pipeline.core.config import Config
from pipeline.core.decide import decide, detail, with_address_columns
from pipeline.core.domains.cache import DomainCache
from pipeline.core.domains.dns import DnsAnswer, SharedResolver
from pipeline.core.domains.exchanges import Routing
from pipeline.core.domains.shapes import AnswerShapes
from pipeline.core.domains.step import (
    DomainWork,
    attach_domains,
    domain_answers,
    domain_table,
    resolvable_domains,
)
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.checkers import AddressChecker
from pipeline.core.mailboxes.types import CheckStats
from pipeline.core.progress import ProgressFactory
from pipeline.core.schema import SPEC_COLUMNS

T = TypeVar("T")


@dataclass(frozen=True)
class Engine:
    """The resources the engine's steps run with; built by :mod:`pipeline.core.assembly.build`."""

    config: Config
    lists: DomainLists
    dns: SharedResolver  # the run's (or the service's) one resolver, made on first use
    cache: DomainCache | None = None
    offline: bool = False
    progress: ProgressFactory | None = None  # (total, label, unit) -> a progress meter
    # Address-level checks (SMTP or a remote API); None: decide at the domain level.
    checker: AddressChecker | None = None
    # The bounce ledger; None: no bounce history (both bounce flags false).
    bounces: BounceLedger | None = None
    # Which addresses mail can reach: implicit MX records must lead somewhere routable.
    routing: Routing = field(default_factory=Routing)
    # The list's calibration of SCORE (pipeline.core.calibration); None: the rules' SCORE.
    calibration: Calibration | None = None

    @property
    def domains(self) -> DomainWork:
        """What the domain step needs of the engine."""
        return DomainWork(
            self.lists,
            self.dns,
            self.config.dns,
            self.cache,
            self.offline,
            self.progress,
            self.routing,
        )


async def check_addresses(
    engine: Engine, rows: pl.DataFrame, flags: Mapping[str, BounceFlags] | None = None
) -> tuple[pl.DataFrame, CheckStats | None]:
    """Add the address-level answers (bounce ledger, SMTP or a remote API), null without them,
    and what the checker sent (None: no checker ran). *flags*: the ledger's answer for the
    rows' keys, when the caller asked it already (the batch then decides on one reading)."""
    ledger = engine.bounces
    if flags is not None:
        rows = join_bounce_flags(rows, flags)
    else:
        rows = await _asked(ledger, attach_bounces, ledger, rows)
    checker = engine.checker
    if checker is None or not asks_each_address(engine):
        return with_address_columns(rows), None
    checked, stats = await checker.check(rows, engine.dns, engine.lists)
    return with_address_columns(checked), stats


async def verify_many(
    engine: Engine, values: Sequence[str], *, domain_mode: bool = False, detailed: bool = False
) -> list[dict[str, object]]:
    """The spec's result objects (plus REASON), one per address (or domain in domain mode);
    *detailed*: with DETAIL too, as :func:`verify_once` (the Python API's)."""
    decided = await _verified(engine, values, domain_mode)
    extra = [detail().alias("DETAIL")] if detailed else []
    return decided.select(*SPEC_COLUMNS, "REASON", *extra).to_dicts()


def asks_each_address(engine: Engine) -> bool:
    """Whether the engine asks about each address (a mail server or a paid verifier)."""
    return engine.checker is not None and not engine.offline


async def verify_many_json(
    engine: Engine,
    values: Sequence[str],
    *,
    domain_mode: bool = False,
    shapes: AnswerShapes | None = None,
) -> list[str]:
    """:func:`verify_many`'s objects as JSON texts, encoded by polars (for the service: a
    third of the cost of Python objects encoded one by one). With *shapes* (the engine's
    own), a plain address whose answer is already decided per domain is answered from its
    shape (:mod:`pipeline.core.domains.shapes`), and the others run the steps as before."""
    if shapes is None or domain_mode or asks_each_address(engine):
        return _json(await _verified(engine, values, domain_mode))
    annotated = annotate_addresses(pl.Series(values, dtype=pl.String), engine.lists)
    answers, _stats = await domain_answers(engine.domains, resolvable_domains(annotated))
    listed = await _ledger_flags(engine.bounces, annotated)
    texts: list[str | None] = []
    keys: list[tuple[object, ...] | None] = []
    # Columns as lists, zipped: a frame's own rows cost six times as much on a service batch.
    columns = (annotated.get_column(c).to_list() for c in _SHAPED_BY)
    for email, local, domain, key, syntax, role, duplicate, repaired in zip(*columns, strict=True):
        answer = answers.get(domain)
        plain = syntax == Syntax.OK.value and not repaired and answer is not None
        shape_key = (domain, answer, role, duplicate) if plain and key not in listed else None
        keys.append(shape_key)
        texts.append(None if shape_key is None else shapes.answer(shape_key, email, local))
    rest = [i for i, text in enumerate(texts) if text is None]
    if rest:
        # On the ledger's same reading: a bounce recorded meanwhile must not make the shape
        # of a key that was read as having none.
        decided = await _decided(engine, annotated[rest], answers, False, listed)
        for i, email, local, text in zip(
            rest,
            decided.get_column("EMAIL").to_list(),
            decided.get_column("LOCAL").to_list(),
            _json(decided),
            strict=True,
        ):
            texts[i] = text
            if keys[i] is not None:
                shapes.learn(keys[i], email, local, text)
    answered = [text for text in texts if text is not None]
    if len(answered) != len(values):
        raise RuntimeError(f"{len(answered)} answers for {len(values)} values")
    return answered


# What an answer depends on besides the domain's DNS answer (see pipeline.core.domains.shapes).
_SHAPED_BY = ("EMAIL", "LOCAL", "DOMAIN", "KEY", "SYNTAX", "ROLE", "DUPLICATE", "REPAIRED")


async def _ledger_flags(
    ledger: BounceLedger | None, rows: pl.DataFrame
) -> Mapping[str, BounceFlags]:
    """The flags of the keys of *rows* the bounce ledger has something to say about."""
    if ledger is None:
        return {}
    wanted = bounce_keys(rows, None)
    return await _asked(ledger, ledger.flags, wanted) if wanted else {}


async def _asked(ledger: BounceLedger | None, work: Callable[..., T], *args: object) -> T:
    """*work*(*args*), which asks *ledger*: round trips to a database leave the event loop; a
    local file answers in microseconds, and its one connection stays on the loop."""
    if ledger is not None and ledger.remote:
        return await asyncio.to_thread(work, *args)
    return work(*args)


def _json(decided: pl.DataFrame) -> list[str]:
    encoded = pl.struct(*SPEC_COLUMNS, "REASON").struct.json_encode()
    return decided.select(encoded).to_series().to_list()


async def _verified(engine: Engine, values: Sequence[str], domain_mode: bool) -> pl.DataFrame:
    if domain_mode:
        annotated = annotate_domains(values)
    else:
        annotated = annotate_addresses(pl.Series(values, dtype=pl.String), engine.lists)
    answers, _stats = await domain_answers(engine.domains, resolvable_domains(annotated))
    return await _decided(engine, annotated, answers, domain_mode)


async def _decided(
    engine: Engine,
    annotated: pl.DataFrame,
    answers: Mapping[str, DnsAnswer],
    domain_mode: bool,
    flags: Mapping[str, BounceFlags] | None = None,
) -> pl.DataFrame:
    """Annotated rows, their domains' DNS *answers* (and the ledger's *flags*) at hand,
    through the rest of the steps."""
    table = domain_table(engine.lists, resolvable_domains(annotated), answers)
    rows = attach_domains(annotated, table)
    if not domain_mode:
        rows, _sent = await check_addresses(engine, rows, flags)
    # A list's calibration is of its addresses' sends: a domain's answer keeps the rules' SCORE.
    calibration = None if domain_mode else engine.calibration
    return calibrated(decide(rows, domain_mode=domain_mode), calibration)


async def verify_once(
    engine: Engine, value: str, *, domain_mode: bool = False
) -> dict[str, object]:
    """The spec's object for a single value, with REASON and DETAIL (what explains the
    answer in words, as a cleaned list's DETAIL), as a whole event loop's work: the engine's
    resolver is closed before the loop ends."""
    try:
        decided = await _verified(engine, [value], domain_mode)
        return decided.select(*SPEC_COLUMNS, "REASON", detail().alias("DETAIL")).to_dicts()[0]
    finally:
        await engine.dns.close()
