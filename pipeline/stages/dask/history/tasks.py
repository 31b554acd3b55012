"""The worker tasks of the run history on a Dask cluster (see :mod:`.`): each part decided
and its narrow table made, the last run loaded, each part compared with it, the parts kept,
the changes file written, the run finished or discarded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.calibration.types import Calibration
from pipeline.core.config import ListsConfig
from pipeline.core.db.database import is_url
from pipeline.core.errors import StoreError
from pipeline.core.history.compare import CHANGE_COLUMNS, Previous, compare, kept_of, remembered
from pipeline.core.history.store import RunHistory
from pipeline.core.history.types import Changes, RunStart
from pipeline.stages.base import Batch
from pipeline.stages.dask.stores import Stores, bounce_source
from pipeline.stages.dask.tasks import NOTHING_HELD, restored, worker_lists
from pipeline.stages.history import HistoryPlan
from pipeline.stages.read.email_column import Further
from pipeline.stages.steps import decide_work, rows_of
from pipeline.stages.write.changes import ChangesSink


def decide_remembering(
    part: Batch,
    table: pl.DataFrame,
    stores: Stores,
    answers: pl.DataFrame | None,
    further: Further,
    lists: ListsConfig,
    calibration: Calibration | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The part's output rows (as :func:`~pipeline.stages.dask.tasks.decide_partition` gives
    them) and its narrow table for the history
    (:func:`~pipeline.core.history.compare.remembered`), decided once."""
    source = bounce_source(stores)
    scope = source.scope() if source is not None else None
    part = restored(part)
    work = decide_work(part, table, source, scope, answers, NOTHING_HELD, calibration)
    more = (further, worker_lists(lists))
    return rows_of(part, work, (table, source, scope, answers), more), remembered(work)


def first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def second(pair: tuple[Any, Any]) -> Any:
    return pair[1]


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
        previous = history.previous(start, reasons=plan.changes is not None)
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

    def __sizeof__(self) -> int:
        # What Dask sizes it by, so that it can spill it.
        kept = self.kept.estimated_size() if self.kept is not None else 0
        return int(self.rows.estimated_size() + kept) + 256


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


def keep_part(plan: HistoryPlan, start: RunStart, index: int, part: PartCompared, kept: int) -> int:
    """Part *index* added to a SQLite history, after the *kept* parts before it (each part's
    task waits for the one before: one writer, in order, and one part's table on a worker at
    a time, where one task taking every part would hold the whole list's)."""
    if part.kept is not None:
        with _history(plan, start.run_id) as history:
            history.add_part(start.run_id, index, part.kept)
    return kept + 1


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
