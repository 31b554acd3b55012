"""The run history's worker tasks on a Dask cluster: a SQLite history only where the workers
reach it (the two nights through a cluster are in tests/stages/dask/test_dask_engine.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.errors import StoreError
from pipeline.core.history.types import RunStart
from pipeline.stages.dask.history.tasks import open_run, reach_marker
from pipeline.stages.history import HistoryPlan


def test_a_history_the_workers_cannot_reach_stops_the_run(tmp_path: Path) -> None:
    plan = HistoryPlan("crm", tmp_path / "history.sqlite", False)
    start = RunStart("r1", "crm", False, 1.0, "d", "1")
    with pytest.raises(StoreError, match="not on storage this Dask worker reaches"):
        open_run(plan, start)  # no marker beside the file: another machine's disk
    marker = reach_marker(plan, "r1")
    assert marker is not None
    marker.touch()
    assert open_run(plan, start) is None  # the list's first run, staged
