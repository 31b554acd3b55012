"""The one commit point: files staged under temporary names, published together."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.core.errors import OutputError
from pipeline.stages.write.publish import Publication, tmp_of


class Sent:
    """A store that keeps what reached it, in order."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []

    def publish(self, path: Path) -> None:
        self.log.append(("publish", str(path)))

    def adopt(self, staged: str, final: Path) -> None:
        self.log.append(("adopt", f"{staged} -> {final.name}"))

    def remove(self, staged: str) -> None:
        self.log.append(("remove", staged))


def test_staged_files_wait_for_the_commit_then_appear_together(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old")
    store = Sent()
    with Publication(store) as run:
        run.write_text(tmp_path / "a.txt", "new a")
        run.write_text(tmp_path / "b.txt", "new b")
        assert (tmp_path / "a.txt").read_text() == "old"
        assert not (tmp_path / "b.txt").exists()
        assert run.commit() == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    assert store.log == [("publish", str(tmp_path / "a.txt")), ("publish", str(tmp_path / "b.txt"))]
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"]
    assert (tmp_path / "a.txt").read_text() == "new a"


def test_a_run_that_stops_before_its_commit_leaves_no_trace(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old")
    with pytest.raises(RuntimeError), Publication() as run:
        run.write_text(tmp_path / "a.txt", "new")
        assert tmp_of(tmp_path / "a.txt").exists()
        raise RuntimeError("stopped")
    assert os.listdir(tmp_path) == ["a.txt"]
    assert (tmp_path / "a.txt").read_text() == "old"


def test_a_file_that_cannot_be_written_says_where(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "list.clean.report.html"
    with Publication() as run, pytest.raises(OutputError, match=r"missing/list\.clean\.report"):
        run.write_text(path, "page")
    assert not path.parent.exists()


def test_a_commit_that_fails_part_way_names_what_was_replaced(tmp_path: Path) -> None:
    first, second = tmp_path / "out.parquet", tmp_path / "out.summary.json"
    with Publication() as run:
        run.write_text(first, "rows")
        run.write_text(second, "{}")
        tmp_of(second).unlink()  # its rename cannot happen
        with pytest.raises(OutputError) as failed:
            run.commit()
    message = str(failed.value)
    assert f"Cannot put {second} in place" in message
    assert f"Already replaced: {first}; left as they were: {second}." in message


def test_a_dataset_folder_swaps_with_the_one_it_replaces(tmp_path: Path) -> None:
    final = tmp_path / "out"
    final.mkdir()
    (final / "part-00000.parquet").write_text("old")
    staged = tmp_of(final)
    staged.mkdir()
    (staged / "part-00000.parquet").write_text("new")
    with Publication() as run:
        run.stage(staged, final)
        run.commit()
    assert os.listdir(tmp_path) == ["out"]
    assert (final / "part-00000.parquet").read_text() == "new"


STAGED = "s3://lists/.out.parquet.123.tmp/joined.parquet"  # what workers wrote in the store


def test_what_workers_staged_in_the_store_is_adopted_in_order(tmp_path: Path) -> None:
    store = Sent()
    with Publication(store) as run:
        run.stage(STAGED, tmp_path / "out.parquet")
        run.write_text(tmp_path / "out.summary.json", "{}")
        assert run.commit() == [str(tmp_path / "out.parquet"), str(tmp_path / "out.summary.json")]
    summary = str(tmp_path / "out.summary.json")
    assert store.log == [("adopt", f"{STAGED} -> out.parquet"), ("publish", summary)]


def test_a_run_that_stops_removes_what_workers_staged_in_the_store(tmp_path: Path) -> None:
    store = Sent()
    with pytest.raises(RuntimeError), Publication(store) as run:
        run.stage(STAGED, tmp_path / "out.parquet")
        raise RuntimeError("stopped")
    assert store.log == [("remove", STAGED)]
    with pytest.raises(ValueError, match="goes to none"), Publication() as local:
        local.stage(STAGED, tmp_path / "out.parquet")
