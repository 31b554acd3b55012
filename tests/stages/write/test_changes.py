"""The changes file's sink: written under a temporary name, published whole or not at all, in
the format its suffix names."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline.core.errors import UsageError
from pipeline.core.history.compare import CHANGE_COLUMNS
from pipeline.stages.write.changes import ChangesSink, changes_path
from pipeline.stages.write.publish import Publication

ROW = pl.DataFrame(
    [("a@x.org", "Valid", "Invalid", "mailbox_ok", "no_such_user", "2027-01-15T08:00:00Z")],
    schema=CHANGE_COLUMNS,
    orient="row",
)


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl", ".xlsx"])
def test_nothing_is_seen_until_the_commit_point(tmp_path: Path, suffix: str) -> None:
    final = tmp_path / f"changes{suffix}"
    sink = ChangesSink(final, CHANGE_COLUMNS)
    sink.write(ROW)
    sink.write(ROW.clear())
    with Publication() as publication:
        sink.stage(publication)
        assert not final.exists()
        publication.commit()
    assert final.exists() and sink.rows == 1
    assert [p.name for p in tmp_path.iterdir()] == [final.name]


def test_a_failed_run_leaves_no_file(tmp_path: Path) -> None:
    sink = ChangesSink(tmp_path / "changes.csv", CHANGE_COLUMNS)
    sink.write(ROW)
    sink.close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("wrong", ["changes.txt", "changes", "s3://bucket/changes.csv"])
def test_a_path_in_no_format_is_refused(wrong: str) -> None:
    with pytest.raises(UsageError, match="--changes"):
        changes_path(wrong)


def test_a_file_url_is_a_local_path() -> None:
    assert changes_path("file:///shared/changes.CSV") == Path("/shared/changes.CSV")
