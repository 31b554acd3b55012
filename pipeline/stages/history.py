"""The run's history step: each run of a list recorded under the list's name, and what changed
since the list's last run (``since_last_run`` in the summary, the ``--changes`` file).

The step is written once, in :func:`pipeline.stages.sequence.run_stages`: before the write the
way opens the run's :class:`Memory` (:meth:`~pipeline.stages.sequence.Way.remembering`), the
write feeds it the decided rows its way, then :meth:`Memory.compare` gives the changes (and
stages the changes file for the commit point), and once the run's files are published
:meth:`Memory.keep` keeps the run in the history. A run that fails before that leaves nothing
in the history: its staged parts are removed (or, killed, by the list's next run).

Here is the local way (:class:`LocalMemory`): each batch's distinct addresses are hashed,
compared with the last run's and added to the history as one part, as the batch is written,
so memory holds the last run's table (about 13 MB per million addresses) and one batch. The
Dask way is :mod:`pipeline.stages.dask.history`'s.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from pipeline.core.calibration.store import calibration_of
from pipeline.core.calibration.types import Calibration
from pipeline.core.config import Config
from pipeline.core.db.database import Where, shown, store_where
from pipeline.core.engine import Engine
from pipeline.core.history.compare import CHANGE_COLUMNS, Previous, compare, kept_of, remembered
from pipeline.core.history.names import list_name_of, settings_digest
from pipeline.core.history.store import Packed, RunHistory, packed
from pipeline.core.history.types import Changes, RunStart
from pipeline.stages.provenance import recorded_settings
from pipeline.stages.write.changes import ChangesSink, changes_path
from pipeline.stages.write.publish import Publication
from pipeline.version import __version__

_ISO = "%Y-%m-%dT%H:%M:%SZ"
PART_ROWS = 131_072  # rows of a batch remembered at a time, each the history's part


@dataclass(frozen=True)
class HistoryPlan:
    """What a run keeps in the history, decided before any work."""

    list_name: str
    where: Where | None  # the history's file or URL; None: not recorded ([history] record)
    sandbox: bool  # a --sandbox run: kept apart from real runs
    retention_days: int = 0
    changes: Path | None = None  # --changes PATH
    # The list's calibration of SCORE, kept beside the history (`listclean calibrate`); None:
    # the rules' SCORE. Found in the history's database even when runs are not recorded.
    calibration: Calibration | None = None


def plan_history(
    config: Config,
    input_name: str,
    domain_cache: Path,
    *,
    list_name: str | None = None,
    sandbox: bool = False,
    changes: str | None = None,
) -> HistoryPlan:
    """The history plan of a run over the input *input_name*: the list's name (*list_name*,
    else ``[history] list_name``, else :func:`list_name_of` the input), the store beside
    *domain_cache* unless ``[history] db`` names one, and the list's calibration found there."""
    settings = config.history
    name = (list_name or settings.list_name or list_name_of(input_name)).strip()
    store = store_where(domain_cache, "history", settings.db)
    where = store if settings.record else None
    target = changes_path(changes) if changes else None
    calibration = calibration_of(store, name, sandbox)
    return HistoryPlan(name, where, sandbox, settings.retention_days, target, calibration)


def with_calibration(engine: Engine, plan: HistoryPlan | None) -> Engine:
    """*engine* with the calibration of the run's list (the plan's, None included); without a
    plan, as it is (``[history] list_name``'s, from the assembly)."""
    if plan is None:
        return engine
    return dataclasses.replace(engine, calibration=plan.calibration)


def run_start(plan: HistoryPlan, config: Config) -> RunStart:
    """The run as the history stages it: a new id, now, the digest of its settings."""
    digest = settings_digest(recorded_settings(config))
    started = time.time()
    return RunStart(uuid.uuid4().hex, plan.list_name, plan.sandbox, started, digest, __version__)


@dataclass(frozen=True)
class Remembered:
    """What the history step tells the summary."""

    list_name: str
    since_last_run: dict[str, Any] | None  # summary.json's since_last_run
    run_id: str = ""  # "" when the run is not recorded
    settings_digest: str = ""
    store: str = ""  # where the history is, as a message may show it
    warnings: tuple[str, ...] = field(default_factory=tuple)
    changes: Path | None = None  # the changes file written

    def as_dict(self) -> dict[str, Any]:
        """``summary.json``'s ``history``."""
        return {"run_id": self.run_id, "settings_digest": self.settings_digest, "store": self.store}


class Memory(Protocol):
    """A run's history as its way keeps it."""

    seconds: float  # spent on the history while the write handed over its rows

    def compare(self, publication: Publication) -> Remembered:
        """Every decided row has been handed over: the changes since the list's last run,
        the changes file staged for *publication*."""
        ...

    def keep(self, counts: dict[str, Any]) -> None:
        """The run's files are published: keep the run (with its *counts*) in the history."""
        ...

    def close(self) -> None:
        """The run is over: a run not kept is taken out of the history again."""
        ...


def remembered_of(
    plan: HistoryPlan, start: RunStart, changes: Changes | None, previous_digest: str | None
) -> Remembered:
    """What the history step tells the summary, from the merged *changes* (None: the list's
    first run) and the last run's settings digest."""
    since = None if changes is None else changes.as_dict(iso(changes.previous_run_at))
    warnings: tuple[str, ...] = ()
    if previous_digest is not None and previous_digest != start.settings_digest:
        warnings = (
            f"The settings differ from those of the last run of the list {plan.list_name!r} "
            f"(digest {start.settings_digest}, was {previous_digest}): some of the changes since "
            "then may come from the settings rather than from the list.",
        )
    store = shown(plan.where) if plan.where is not None else ""
    run_id = start.run_id if plan.where is not None else ""
    return Remembered(
        plan.list_name, since, run_id, start.settings_digest, store, warnings, plan.changes
    )


def iso(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime(_ISO)


@dataclass(frozen=True)
class Prepared:
    """A part of a batch as the history will keep it (:meth:`LocalMemory.prepare`)."""

    decided: pl.DataFrame  # one row per distinct address (pipeline.core.history.compare)
    counted: Changes | None  # how they differ from the last run; None on the list's first
    rows: pl.DataFrame  # their rows of the changes file
    packed: Packed  # what the history keeps of them


class LocalMemory:
    """The history of a run on this machine: see the module's doc."""

    def __init__(self, plan: HistoryPlan, start: RunStart) -> None:
        self._plan = plan
        self._start = start
        self._store: RunHistory | None = None
        self._previous: Previous | None = None
        self._changes: Changes | None = None
        self._kept = False
        self._parts = 0
        self.addresses = 0
        started = time.perf_counter()
        try:
            if plan.where is not None:
                self._store = RunHistory(plan.where, plan.retention_days)
                self._previous = self._store.previous(start, reasons=plan.changes is not None)
                self._store.begin(start)
            self._changes = self._previous.changes if self._previous else None
            self._sink = ChangesSink(plan.changes, CHANGE_COLUMNS) if plan.changes else None
        except BaseException:
            self.close()
            raise
        self.seconds = time.perf_counter() - started  # the last run read: the history's time

    def prepare(self, work: pl.DataFrame) -> list[Prepared]:
        """A batch of decided rows (work columns) as the history will keep it, a part per
        :data:`PART_ROWS` rows (what the history holds beside the batch stays small): each
        part's distinct addresses and how they compare with the last run. Any thread may
        prepare batches, beside deciding them, so this time counts as the write's (as the
        Dask way's does); one thread adds them, in the list's order (:meth:`add_prepared`)."""
        if self._store is None:  # not recorded: nothing to compare with, nothing kept
            return []
        prepared = []
        for offset in range(0, work.height, PART_ROWS):
            decided = remembered(work.slice(offset, PART_ROWS))
            counted, rows = compare(decided, self._previous, self._start.started_at)
            prepared.append(Prepared(decided, counted, rows, packed(kept_of(decided))))
        return prepared

    def add_prepared(self, prepared: list[Prepared]) -> None:
        """A prepared batch's parts counted, listed when new or changed, and added to the
        staged run."""
        started = time.perf_counter()
        for part in prepared:
            if self._changes is not None and part.counted is not None:
                self._changes.merge(part.counted)
            if self._sink is not None:
                self._sink.write(part.rows)
            if self._store is not None:
                self._store.add_part(self._start.run_id, self._parts, part.packed)
            self._parts += 1
            self.addresses += part.decided.height
        self.seconds += time.perf_counter() - started

    def compare(self, publication: Publication) -> Remembered:
        if self._sink is not None:
            self._sink.stage(publication)
        digest = self._previous.run.settings_digest if self._previous else None
        return remembered_of(self._plan, self._start, self._changes, digest)

    def keep(self, counts: dict[str, Any]) -> None:
        if self._store is not None:
            self._kept = self._store.finish(self._start.run_id, self.addresses, counts)

    def close(self) -> None:
        sink = getattr(self, "_sink", None)
        if sink is not None:
            sink.close()
        if self._store is not None:
            try:
                if not self._kept:
                    self._store.discard(self._start.run_id)
            finally:
                self._store.close()
