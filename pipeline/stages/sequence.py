"""The stages of a clean, written once: read and normalize (duplicates marked), domains,
addresses, decide and write; then the summary and the run's one commit point.

Each engine runs them its way (a :class:`Way`): the local runner over a stream of bounded
batches on this machine (:class:`pipeline.stages.runner.LocalWay`), the Dask engine over the
list's parts on a cluster's workers (:class:`pipeline.stages.dask.engine.DaskRun`). Both apply
the same stage functions (:mod:`pipeline.stages.steps` and the engine's steps); a way decides
only where the rows are and who works on them, and who writes them (the rejects with them).
Everything around the stages is here, once: the input pinned while it is read, the
provenance, the stage clock, the counts, the summary and what is published.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pipeline.core.domains.step import DomainStats
from pipeline.core.engine import Engine
from pipeline.core.history.types import RunStart
from pipeline.core.mailboxes.types import CheckStats
from pipeline.stages.base import StageSummary
from pipeline.stages.history import HistoryPlan, Memory, run_start
from pipeline.stages.job import CleanJob
from pipeline.stages.provenance import Digest, RunRecord
from pipeline.stages.read.pin import InputPin
from pipeline.stages.read.reader import ListReader
from pipeline.stages.summary import (
    Counts,
    NormalizeStats,
    RunSummary,
    Tally,
    provenance_of,
    stage_summaries,
    summarize,
)
from pipeline.stages.write.outputs import OutputPaths
from pipeline.stages.write.publish import Publication

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class StageClock:
    """Times each stage from the end of the one before."""

    def __init__(self) -> None:
        self.stages: list[StageSummary] = []
        self._last = time.perf_counter()

    def lap(
        self,
        name: str,
        rows_in: int,
        rows_out: int,
        stats: DataclassInstance | None = None,
        lent: float = 0.0,
    ) -> None:
        """The stage since the last lap, less *lent* seconds it spent on the next stage's
        work (the history's, done batch by batch while writing): those count for the next."""
        now = time.perf_counter()
        self.add(name, rows_in, rows_out, now - self._last - lent, stats)
        self._last = now - lent

    def add(
        self,
        name: str,
        rows_in: int,
        rows_out: int,
        seconds: float,
        stats: DataclassInstance | None = None,
    ) -> None:
        """A stage timed by its caller (stages that take turns within one pass)."""
        details = dataclasses.asdict(stats) if stats is not None else {}
        self.stages.append(StageSummary(name, rows_in, rows_out, round(seconds, 3), details))
        self._last = time.perf_counter()


@dataclass(frozen=True)
class Scanned:
    """What reading the list learned: its rows, its rejects, its distinct addresses."""

    rows: int
    rejected: int
    normalized: NormalizeStats
    reading: float  # seconds spent reading; the rest of the scan normalizing and marking


class Way(Protocol):
    """How an engine runs the stages: where the rows are, who works on them."""

    digest: Digest | None  # who hashes the input for the provenance; None: this process

    def open(self, job: CleanJob, folder: Path) -> ListReader:
        """The list, opened: its kind, columns and email column known, nothing read yet."""
        ...

    def files(self, job: CleanJob) -> OutputPaths:
        """The files the run writes (the job's, or as the way lays them out)."""
        ...

    def scan(
        self, job: CleanJob, reader: ListReader, stack: contextlib.ExitStack
    ) -> tuple[Scanned, ListReader]:
        """Every row read and normalized, its duplicates marked, its rejects kept for
        :meth:`write`; the reader that read it (the one :meth:`open` gave, or another when
        it had to)."""
        ...

    async def domains(self, engine: Engine) -> DomainStats:
        """Each distinct domain answered once (cache, then DNS)."""
        ...

    async def addresses(self, engine: Engine) -> CheckStats | None:
        """The address checker's answers, in the engine's order and within its budget."""
        ...

    def write(
        self,
        job: CleanJob,
        reader: ListReader,
        facts: dict[str, Any],
        publication: Publication,
        stack: contextlib.ExitStack,
    ) -> tuple[Tally, Counter[str]]:
        """Every row decided and written in input order, then the rejects, staged for
        *publication*; the rows' tally and the rejected records per reason."""
        ...

    def queries(self, engine: Engine) -> int:
        """The DNS queries the run sent, wherever they were sent from."""
        ...

    def remembering(self, plan: HistoryPlan, start: RunStart) -> Memory:
        """The run's history, kept its way (:mod:`pipeline.stages.history`): opened before
        :meth:`write`, which hands it the decided rows."""
        ...


async def run_stages(
    job: CleanJob, engine: Engine, folder: Path, way: Way, history: HistoryPlan | None = None
) -> RunSummary:
    """One clean of *job*, its way: the files written and published, the summary; with
    *history*, the run recorded under its list's name and compared with the list's last.
    The engine's calibration (:func:`~pipeline.stages.history.with_calibration`) is named in
    the summary's ``run``."""
    used = engine.calibration.named() if engine.calibration is not None else None
    clock = StageClock()
    pin = InputPin(job.input, job.name or str(job.input), job.storage)
    with pin.reading():
        reader = way.open(job, folder)
    paths = way.files(job)
    with contextlib.ExitStack() as stack:
        publication = stack.enter_context(paths.publication())
        record = stack.enter_context(RunRecord(job, engine.config, way.digest, used))
        started = time.perf_counter()
        with pin.reading():
            scan, reader = way.scan(job, reader, stack)
        clock.add("read", 0, scan.rows, scan.reading)
        normalizing = time.perf_counter() - started - scan.reading
        clock.add("normalize", scan.rows, scan.rows, normalizing, scan.normalized)
        dom = await way.domains(engine)
        clock.lap("domains", scan.rows, scan.rows, dom)
        checks = await way.addresses(engine)
        clock.lap("verify", scan.rows, scan.rows, checks)
        facts = provenance_of(job, reader, record.facts())
        memory = None
        if history is not None:
            opened = way.remembering(history, run_start(history, engine.config))
            memory = stack.enter_context(contextlib.closing(opened))
        with pin.reading():
            tally, rejected = way.write(job, reader, facts, publication, stack)
        clock.lap("write", scan.rows, scan.rows, lent=memory.seconds if memory else 0.0)
        remembered = memory.compare(publication) if memory is not None else None
        clock.lap("history", scan.rows, scan.rows)
        counts = Counts(
            scan.rows,
            scan.rejected,
            scan.normalized,
            dom,
            checks,
            way.queries(engine),
            tally,
            rejected,
        )
        run = record.facts()
        sandbox = engine.routing.sandbox
        summary = summarize(job, reader, counts, clock.stages, run, paths, sandbox, remembered)
        stage_summaries(summary, paths, publication)
        pin.check()  # the hash in the summary is of these bytes too
        publication.commit()
        if memory is not None:
            memory.keep(kept_counts(summary))
    return summary


def kept_counts(summary: RunSummary) -> dict[str, Any]:
    """The run's own figures, as the history keeps them beside the run."""
    record = summary.as_dict()
    names = ("input", "rows_in", "distinct_addresses", "verdicts_unique", "since_last_run")
    return {name: record.get(name) for name in names}
