"""The driver's side of the run history on a Dask cluster (see :mod:`.`): it submits the
history's tasks and merges the parts' counts; it never opens the history."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.core.db.database import is_url
from pipeline.core.history.types import Changes, RunStart
from pipeline.stages.dask.history.tasks import (
    compare_part,
    counts_of,
    decide_remembering,
    discard_run,
    finish_run,
    first,
    keep_part,
    open_run,
    previous_digest,
    reach_marker,
    second,
    write_changes,
)
from pipeline.stages.dask.tasks import decide_partition
from pipeline.stages.history import HistoryPlan, Remembered, remembered_of
from pipeline.stages.write.publish import Publication, tmp_of

Submit = Callable[..., Any]


def decide_parts(
    submit: Submit,
    parts: Sequence[Any],
    tables: Sequence[Any],
    answers: Sequence[Any],
    common: tuple[Any, Any, Any, Any],
    memory: DaskMemory | None,
) -> list[Any]:
    """Each part decided where it is (:func:`~pipeline.stages.dask.tasks.decide_partition`,
    with its domain table and answers, and the *common* stores, further columns, lists and
    the list's calibration):
    the futures of its output rows; when the history is recorded, the futures of the parts'
    narrow tables go to *memory* (``memory.parts``)."""
    stores, further, lists, calibration = common
    args = [
        (part, tables[p], stores, answers[p], further, lists, calibration)
        for p, part in enumerate(parts)
    ]
    if memory is None or not memory.recording:
        return [submit(decide_partition, *one) for one in args]
    both = [submit(decide_remembering, *one) for one in args]
    # Taken apart at the write's priority: a part's rows go on to its write before the next
    # part is decided, rather than every part decided first and held (spilled) until written.
    memory.parts = [submit(second, b, priority=1) for b in both]
    return [submit(first, b, priority=1) for b in both]


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
        if self.recording and not is_url(plan.where) and compared:
            kept: Any = 0
            for index, part in enumerate(compared):
                kept = self._submit(keep_part, plan, start, index, part, kept)
            waits.append(kept)
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
