"""The steps both engines run on a stretch of rows, written once.

The local runner runs them on each batch of its spill; the Dask adapter
(:mod:`pipeline.stages.dask.engine`) on each input part of a list, on the worker that read it. A
stretch is a :class:`~pipeline.stages.base.Batch`: the input's own columns and our work columns.
"""

from __future__ import annotations

import polars as pl

from pipeline.core.addresses.step import classify_addresses
from pipeline.core.bounces.step import BounceScope, BounceSource, attach_bounces
from pipeline.core.calibration.apply import calibrated
from pipeline.core.calibration.types import Calibration
from pipeline.core.decide import decide, with_address_columns
from pipeline.core.domains.step import attach_domains, resolvable_domains
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.step import PROBEABLE, join_answers
from pipeline.stages.base import Batch
from pipeline.stages.further import further_columns, further_domains
from pipeline.stages.read.consent import consent_of
from pipeline.stages.read.email_column import Further
from pipeline.stages.write.outputs import output_frame


def normalize(frame: pl.DataFrame, email_column: str, lists: DomainLists) -> pl.DataFrame:
    """The work columns of a read batch: EMAIL, LOCAL, DOMAIN, KEY, SYNTAX, ROLE, and CONSENT
    (what the export says about sending to the row: :mod:`pipeline.stages.read.consent`)."""
    work = classify_addresses(frame.get_column(email_column), lists)
    return work.with_columns(consent_of(frame))


def probe_candidates(work: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    """The rows (with DUPLICATE) worth an address-level check, with their domain's answer."""
    return attach_domains(work, table).filter(PROBEABLE)


def answer_table(checked: pl.DataFrame, asked: pl.DataFrame) -> pl.DataFrame:
    """One row per address asked: KEY and the columns the checker added to *asked*."""
    answered = [c for c in checked.columns if c not in asked.columns]
    return checked.select("KEY", *answered).unique("KEY", keep="first")


def held_keys(work: pl.DataFrame) -> pl.DataFrame:
    """KEY and CONSENT of the addresses *work* holds back from sending, each once (its first
    row's reason)."""
    if work.get_column("CONSENT").null_count() == work.height:  # the export says nothing
        return work.select("KEY", "CONSENT").clear()
    # The two columns first: a filter of the whole batch copies all its columns.
    held = work.select("KEY", "CONSENT")
    held = held.filter(pl.col("CONSENT").is_not_null() & (pl.col("KEY") != ""))
    return held.unique("KEY", keep="first", maintain_order=True)


def with_held(work: pl.DataFrame, held: pl.DataFrame) -> pl.DataFrame:
    """*work* with CONSENT on every row of an address that *held* holds back: a person who
    unsubscribed on one row of the list is not mailed on another."""
    if held.is_empty():
        return work
    held = held.rename({"CONSENT": "_HELD"})
    found = work.join(held, on="KEY", how="left", maintain_order="left")
    return found.with_columns(pl.coalesce("CONSENT", "_HELD").alias("CONSENT")).drop("_HELD")


def list_domains(
    frame: pl.DataFrame, work: pl.DataFrame, further: Further, lists: DomainLists
) -> list[str]:
    """The distinct resolvable domains of a read batch: its own column's, then those of the
    further columns of addresses (:mod:`pipeline.stages.further`), first seen first."""
    found = resolvable_domains(work)
    if not further:
        return found
    return list(dict.fromkeys([*found, *further_domains(frame, further, lists)]))


def decide_rows(
    batch: Batch,
    table: pl.DataFrame,
    bounces: BounceSource | None,
    scope: BounceScope | None,
    answers: pl.DataFrame | None,
    held: pl.DataFrame | None = None,
    further: tuple[Further, DomainLists] | None = None,
    calibration: Calibration | None = None,
) -> pl.DataFrame:
    """The output rows of *batch* (work with DUPLICATE): see :func:`decide_work`; with
    *further* (the further columns of addresses, and the shipped lists), each further
    column's fields after them (:func:`rows_of`)."""
    work = decide_work(batch, table, bounces, scope, answers, held, calibration)
    return rows_of(batch, work, (table, bounces, scope, answers), further)


Answered = tuple[pl.DataFrame, BounceSource | None, BounceScope | None, pl.DataFrame | None]


def rows_of(
    batch: Batch,
    work: pl.DataFrame,
    answered: Answered,
    further: tuple[Further, DomainLists] | None = None,
) -> pl.DataFrame:
    """The output rows of *batch* whose decided work columns are *work*; with *further*, each
    further column's fields after them, from the same answers (*answered*: the domain table,
    the bounce source and scope, the address answers)."""
    rows = output_frame(Batch(batch.originals, work))
    if further is None or not further[0]:
        return rows
    columns, lists = further
    fields = further_columns(batch.originals, columns, lists, answered)
    return pl.concat([rows, fields], how="horizontal")


def decide_work(
    batch: Batch,
    table: pl.DataFrame,
    bounces: BounceSource | None,
    scope: BounceScope | None,
    answers: pl.DataFrame | None,
    held: pl.DataFrame | None = None,
    calibration: Calibration | None = None,
) -> pl.DataFrame:
    """The decided work columns of *batch* (work with DUPLICATE; :func:`rows_of` makes its
    output rows): domain answers, bounce flags and address answers joined by DOMAIN and KEY,
    the consent of every row of an address (*held*: the whole list's held-back addresses;
    None: those of *batch*, when it holds every row of its addresses; empty: none, CONSENT
    being already the whole list's, as in a Dask part), then decided, SCORE calibrated by the
    list's *calibration* (the rules' SCORE kept in SCORE_DEFAULT for the history)."""
    work = with_held(batch.work, held_keys(batch.work) if held is None else held)
    work = attach_bounces(bounces, attach_domains(work, table), scope)
    if answers is not None:
        work = join_answers(work, answers)
    return calibrated(decide(with_address_columns(work)), calibration)
