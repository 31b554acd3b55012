"""The run history on a Dask cluster (:mod:`pipeline.stages.history`'s step, the Dask way):
the workers write it, not the driver.

Each input part is decided where it is (:func:`decide_remembering`), which keeps beside its
output rows the part's narrow table: one row per distinct address, its hash, VERDICT, REASON,
SCORE (and, for the changes file, the address and when its answer was learned). One worker
task opens the history, stages the run and loads the list's last run (:func:`open_run`); each
part's worker compares its table with it (:func:`compare_part`). Then the rule for writing:

* ``[history] db`` a ``postgresql://`` URL: each part's worker adds its own part to the
  staged run, the moment it is compared (PostgreSQL takes writers from any machine);
* a SQLite file: one worker task adds every part (:func:`keep_parts`), the parts' tables
  reaching it worker to worker. SQLite takes one writer at a time, and its locks are not to
  be trusted across machines, so the file must be on storage every worker reaches and only
  this one task writes it. Before anything is staged a marker the driver leaves beside the
  file must be found by the worker (:func:`reach_marker`): a history on storage the workers
  do not reach (a driver's local cache) stops the run with a message, never a history
  scattered over the workers' disks.

The changes file is written by one worker (:func:`write_changes`) under the name the driver
gives it, and published at the run's commit point with the other files; the driver gathers
only each part's counts. Once the files are published one more task keeps the run
(:func:`finish_run`); a run that fails has its staged run removed (:func:`discard_run`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.db.database import is_url
from pipeline.core.errors import StoreError
from pipeline.core.history.compare import (
    CHANGE_COLUMNS,
    Previous,
    compare,
    kept_of,
    remembered,
)
from pipeline.core.history.store import RunHistory
from pipeline.core.history.types import Changes, RunStart
from pipeline.stages.base import Batch
from pipeline.stages.dask.tasks import ShippedFlags, decide_partition
from pipeline.stages.history import HistoryPlan, Remembered, remembered_of
from pipeline.stages.steps import decide_work
from pipeline.stages.write.changes import ChangesSink
from pipeline.stages.write.outputs import output_frame
from pipeline.stages.write.publish import Publication, tmp_of

Submit = Callable[..., Any]


def decide_remembering(
    part: Batch, table: pl.DataFrame, bounces: ShippedFlags | None, answers: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The part's output rows (as :func:`~pipeline.stages.dask.tasks.decide_partition` gives
    them) and its narrow table for the history (:func:`~pipeline.core.history.compare.remembered`),
    decided once."""
    scope = bounces.scope() if bounces is not None else None
    work = decide_work(part, table, bounces, scope, answers, pl.DataFrame())
    return output_frame(Batch(part.originals, work)), remembered(work)


def first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def second(pair: tuple[Any, Any]) -> Any:
    return pair[1]


def decide_parts(
    submit: Submit,
    parts: list[Any],
    tables: list[Any],
    flags: Sequence[ShippedFlags | None],
    found: Any,
    memory: DaskMemory | None,
) -> list[Any]:
    """Each part decided where it is: the futures of its output rows; when the history is
    recorded, the futures of the parts' narrow tables go to *memory* (``memory.parts``)."""
    if memory is None or not memory.recording:
        return [
            submit(decide_partition, part, tables[p], flags[p], found)
            for p, part in enumerate(parts)
        ]
    both = [
        submit(decide_remembering, part, tables[p], flags[p], found) for p, part in enumerate(parts)
    ]
    memory.parts = [submit(second, b) for b in both]
    return [submit(first, b) for b in both]


# --- worker tasks ---------------------------------------------------------------------------


def reach_marker(plan: HistoryPlan, run_id: str) -> Path | None:
    """The marker beside a SQLite history by which a worker shows it reaches the file."""
    if plan.where is None or is_url(plan.where):
        return None
    where = Path(plan.where)
    return where.with_name(f".{where.name}.{run_id}.reach")


def _history(plan: HistoryPlan, run_id: str) -> RunHistory:
    """The history, opened on this worker (a SQLite file only once its marker is seen)."""
    assert plan.where is not None
    marker = reach_marker(plan, run_id)
    if marker is not None and not marker.exists():
        raise StoreError(
            f"The run history {plan.where} is not on storage this Dask worker reaches. With "
            "--engine dask the workers write the history: set [history] db to a postgresql:// "
            "URL, or to a file on storage every worker mounts at the same path."
        )
    return RunHistory(plan.where, plan.retention_days)


def open_run(plan: HistoryPlan, start: RunStart) -> Previous | None:
    """The list's last run (held by this worker for the parts' comparisons); *start* staged."""
    with _history(plan, start.run_id) as history:
        previous = history.previous(start)
        history.begin(start)
    return previous


def previous_digest(previous: Previous | None) -> str | None:
    return previous.run.settings_digest if previous is not None else None


@dataclass(frozen=True)
class PartCompared:
    """One part against the last run: its counts, its changes rows, and what the history
    keeps of it (None once its worker has added it to a PostgreSQL history)."""

    changes: Changes | None
    rows: pl.DataFrame
    kept: pl.DataFrame | None
    addresses: int


def compare_part(
    plan: HistoryPlan, start: RunStart, index: int, decided: pl.DataFrame, previous: Any
) -> PartCompared:
    counted, rows = compare(decided, previous, start.started_at)
    kept = kept_of(decided)
    if plan.where is not None and is_url(plan.where):  # each part's worker writes its own
        with _history(plan, start.run_id) as history:
            history.add_part(start.run_id, index, kept)
        return PartCompared(counted, rows, None, decided.height)
    return PartCompared(counted, rows, kept, decided.height)


def counts_of(part: PartCompared) -> tuple[Changes | None, int]:
    return part.changes, part.addresses


def keep_parts(plan: HistoryPlan, start: RunStart, *parts: PartCompared) -> int:
    """Every part added to a SQLite history by this one task, in order."""
    with _history(plan, start.run_id) as history:
        for index, part in enumerate(parts):
            if part.kept is not None:
                history.add_part(start.run_id, index, part.kept)
    return len(parts)


def write_changes(path: Path, tmp: Path, *parts: PartCompared) -> Path:
    """The changes file, written by this worker under the temporary name *tmp*."""
    sink = ChangesSink(path, CHANGE_COLUMNS, tmp)
    try:
        for part in parts:
            sink.write(part.rows)
        return sink.finish()
    except BaseException:
        sink.close()
        raise


def finish_run(plan: HistoryPlan, run_id: str, addresses: int, counts: dict[str, Any]) -> bool:
    with _history(plan, run_id) as history:
        return history.finish(run_id, addresses, counts)


def discard_run(plan: HistoryPlan, run_id: str) -> None:
    with _history(plan, run_id) as history:
        history.discard(run_id)


# --- the driver's side ----------------------------------------------------------------------


class DaskMemory:
    """The run's history on the cluster (see the module's doc): the driver submits and
    merges counts; the workers read and write the history."""

    def __init__(self, submit: Submit, plan: HistoryPlan, start: RunStart) -> None:
        self._submit = submit
        self._plan = plan
        self._start = start
        self._kept = False
        self._addresses = 0
        self.seconds = 0.0  # the parts' tables are made by the workers, as they decide
        self.parts: list[Any] = []  # futures of the parts' narrow tables, in input order
        self._marker = reach_marker(plan, start.run_id)
        if self._marker is not None:
            self._marker.parent.mkdir(parents=True, exist_ok=True)
            self._marker.touch()
        self._previous = submit(open_run, plan, start) if plan.where is not None else None

    def compare(self, publication: Publication) -> Remembered:
        plan, start = self._plan, self._start
        # Not recorded: no part is compared, and the changes file holds its header only.
        compared = [
            self._submit(compare_part, plan, start, i, part, self._previous)
            for i, part in enumerate(self.parts if self.recording else [])
        ]
        waits = []
        if self.recording and not is_url(plan.where):
            waits.append(self._submit(keep_parts, plan, start, *compared))
        if plan.changes is not None:
            tmp = tmp_of(plan.changes)
            waits.append(self._submit(write_changes, plan.changes, tmp, *compared))
        counts = [self._submit(counts_of, part) for part in compared]
        digest = self._submit(previous_digest, self._previous) if self._previous else None
        merged, self._addresses = _merged([c.result() for c in counts])
        for future in waits:
            future.result()
        if plan.changes is not None:
            publication.stage(tmp_of(plan.changes), plan.changes)
        previous = digest.result() if digest is not None else None
        return remembered_of(plan, start, merged, previous)

    @property
    def recording(self) -> bool:
        """Whether the run is recorded (``[history] record``): its parts are then kept."""
        return self._previous is not None

    def keep(self, counts: dict[str, Any]) -> None:
        if self.recording:
            run_id = self._start.run_id
            finished = self._submit(finish_run, self._plan, run_id, self._addresses, counts)
            self._kept = bool(finished.result())

    def close(self) -> None:
        try:
            if self.recording and not self._kept:
                with contextlib.suppress(Exception):  # a cluster already gone: the next run sweeps
                    self._submit(discard_run, self._plan, self._start.run_id).result()
        finally:
            if self._marker is not None:
                self._marker.unlink(missing_ok=True)


def _merged(counts: list[tuple[Changes | None, int]]) -> tuple[Changes | None, int]:
    merged: Changes | None = None
    addresses = 0
    for changes, n in counts:
        addresses += n
        if changes is None:
            continue
        if merged is None:
            merged = Changes(changes.previous_run_at, changes.previous_addresses)
        merged.merge(changes)
    return merged, addresses
