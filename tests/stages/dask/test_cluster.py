"""The cluster a Dask run stands on: what workers hold is sized for Dask's memory manager, a
worker killed mid-run costs time and not the run, and a worker of another version is refused
before any work."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from distributed import Client, get_task_stream
from distributed.diagnostics.plugin import WorkerPlugin

from pipeline.cli import main
from pipeline.core.config import ListsConfig, StorageConfig
from pipeline.core.errors import UsageError
from pipeline.stages.dask import reading
from pipeline.stages.dask.cluster import check_versions, connect, versions
from pipeline.stages.dask.stores import SHELF
from pipeline.stages.dask.tasks import scan_batch
from pipeline.stages.objects import filesystem
from pipeline.stages.read.reader import open_list
from pipeline.stages.runner import batch_rows
from tests.stages.dask.clusters import two_workers
from tests.stages.dask.test_dask_engine import clean, same
from tests.stages.test_objects import BUCKET, s3, s3_endpoint  # noqa: F401 (fixtures)
from tests.stages.test_streaming import messy_list


def staging_left(folder: Path) -> list[str]:
    """What a run left hidden in *folder*, beside its files: staging folders or shards (the
    shared caches' folder, .listclean-cache, is meant to stay)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name != SHELF)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Client]:
    """Two worker processes with a memory limit, this test's own: it kills one of them."""
    with two_workers(tmp_path / "workers", memory_limit="1GiB") as client:
        yield client


def test_a_frame_on_a_worker_is_sized_by_its_buffers(cluster: Client) -> None:
    """dask.sizeof used to see 56 bytes in a polars frame: nothing was ever spilled."""
    frame = pl.DataFrame(
        {"id": [f"{i:08d}" for i in range(50_000)], "email": ["a@b.example"] * 50_000}
    )
    pieces = cluster.submit(scan_batch, frame, "email", 0, ListsConfig(), pure=False)
    pieces.result()
    held = cluster.nbytes(keys=[pieces.key], summary=False)[pieces.key]  # as the worker counted it
    assert held > frame.estimated_size()


def test_parts_are_sized_for_the_workers_memory(cluster: Client) -> None:
    """A worker of 1 GiB and one thread takes parts sized for 256 MiB, whatever --memory asks
    above that; below it, --memory decides."""
    with connect(cluster.scheduler.address, 0) as joined:
        assert joined.thread_mb == 1024
        assert [joined.part_mb(asked) for asked in (4096, 1024, 256, 100)] == [256, 256, 256, 100]


def test_the_driver_keeps_no_log_of_the_tasks_it_sent(cluster: Client) -> None:
    """Dask keeps each comm's last 1,000 batches of messages: every task the driver submitted,
    tens of megabytes at 50M rows. The run's client keeps none."""
    with connect(cluster.scheduler.address, 0) as joined:
        sent = joined.client.scheduler_comm
        for _ in range(50):
            joined.client.submit(len, "x" * 1000, pure=False).result()
        assert sent.recent_message_log.maxlen == 0 and not sent.recent_message_log
    assert cluster.scheduler_comm.recent_message_log  # the default: kept


class KillOnce(WorkerPlugin):
    """SIGKILLs the worker that starts the first task named *prefix* (once in the cluster's
    life: *marker* is made first), as a machine lost or the kernel's OOM killer would."""

    def __init__(self, prefix: str, marker: str) -> None:
        self.prefix = prefix
        self.marker = marker

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "executing" or not str(key).startswith(self.prefix):
            return
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_while_duplicates_are_marked(cluster: Client, tmp_path: Path) -> None:
    source = tmp_path / "list.csv"
    messy_list(source, rows=6_000)
    local = clean(tmp_path, source, "local.parquet", "cache-local", "--offline", sandbox=False)
    marker = tmp_path / "killed"
    cluster.register_plugin(KillOnce("settle_bucket", str(marker)))
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address, "--offline")
    spread = clean(tmp_path, source, "dask.parquet", "cache-dask", *dask, sandbox=False)
    assert marker.exists()  # a worker was killed, during the duplicate marking
    same(local, spread)
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "dask.parquet").equals(expected)


def test_a_worker_of_another_version_is_refused() -> None:
    mine = versions()
    check_versions({"tcp://127.0.0.1:1": mine, "tcp://127.0.0.1:2": list(mine)})
    with pytest.raises(UsageError, match=r"tcp://127.0.0.1:2 runs listclean 0.0.1 .*1 of 2"):
        check_versions({"tcp://127.0.0.1:1": mine, "tcp://127.0.0.1:2": ("0.0.1", mine[1])})
    with pytest.raises(UsageError, match="cannot import listclean"):
        check_versions({"tcp://127.0.0.1:1": ModuleNotFoundError("pipeline")})


@pytest.mark.parametrize("group_rows", [300, 4_000])
def test_a_parquet_list_is_read_by_the_workers(
    cluster: Client, tmp_path: Path, group_rows: int
) -> None:
    """The driver plans from the footers; the workers read the row groups. Parts of one or
    of many row groups give the local output, row for row."""
    messy_list(tmp_path / "list.csv", rows=6_000)
    frame = pl.read_csv(tmp_path / "list.csv", infer_schema=False)
    notes = [f"{i:07d}" * 300 for i in range(frame.height)]
    frame = frame.with_columns(pl.Series("notes", notes))  # a few thousand rows a batch
    source = tmp_path / "list.parquet"
    frame.write_parquet(source, row_group_size=group_rows)
    reader = open_list(str(source), source, tmp_path, None)
    planned = reader.parts(batch_rows(64, reader.bytes_per_row))
    assert planned is not None and len(planned) > 1
    local = clean(tmp_path, source, "local.parquet", "cache-local", "--offline", sandbox=False)
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address, "--offline")
    with get_task_stream(cluster) as stream:
        spread = clean(tmp_path, source, "dask.parquet", "cache-dask", *dask, sandbox=False)
    read = [t for t in stream.data if str(t["key"]).startswith("scan_part")]
    assert len(read) == len(planned)
    same(local, spread)
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "dask.parquet").equals(expected)


def clean_to_folder(tmp: Path, source: Path, name: str, *extra: str) -> dict[str, Any]:
    args = ["clean", f"file://{source}", "-o", f"file://{tmp / name}/", "--quiet"]
    assert main([*args, "--offline", "--cache-dir", str(tmp / f"cache-{name}"), *extra]) == 0
    summary: dict[str, Any] = json.loads((tmp / f"{name}.summary.json").read_text())
    return summary


def test_a_folder_output_is_written_by_the_workers(cluster: Client, tmp_path: Path) -> None:
    """-o out/: each input batch a part file written by a worker, staged, published whole;
    the same rows in the same order as the local engine's folder, rejects beside it."""
    source = tmp_path / "list.csv"
    messy_list(source, rows=4_000)
    with source.open("a") as text:
        text.write('9999,"a, ""quoted"" value,\n')  # a ragged row: a reject with its line
    local = clean_to_folder(tmp_path, source, "local")
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address)
    with get_task_stream(cluster) as stream:
        spread = clean_to_folder(tmp_path, source, "dask", *dask)
    assert any(str(t["key"]).startswith("write_part") for t in stream.data)
    same(local, spread)
    assert local["rows_rejected"] == 1
    expected = pl.read_parquet(tmp_path / "local")
    assert pl.read_parquet(tmp_path / "dask").equals(expected)
    rejects = (tmp_path / "local.rejects.csv").read_bytes()
    assert rejects_in_parts(tmp_path / "dask.rejects") == rejects
    assert spread["rejects_file"] == str(tmp_path / "dask.rejects")
    assert not list(tmp_path.glob(".dask*"))  # no staging folder left


def rejects_in_parts(folder: Path) -> bytes:
    """A dataset's rejects folder (out.rejects/, each part with the header) as one file."""
    parts = [p.read_bytes() for p in sorted(folder.iterdir())]
    assert parts and all(p.name.startswith("part-") for p in folder.iterdir())
    header = parts[0].split(b"\n", 1)[0] + b"\n"
    assert all(part.startswith(header) for part in parts)
    return header + b"".join(part[len(header) :] for part in parts)


def awkward_csv(path: Path, encoding: str, end: str, bom: bool) -> None:
    """Quoted fields holding line ends, accented names, a ragged row and a blank one."""
    rows = ["name,notes,email"]
    for i in range(3_000):
        note = f'"line one{end}line two, café"' if i % 7 == 0 else "plain"
        rows.append(f"Zoë Ångström {i},{note},user{i % 900}@example.com")
        if i % 500 == 250:
            rows.append(f"ragged,{i},x,y,z")  # five fields: a reject, with its line number
    data = (end.join(rows) + end).encode(encoding)
    path.write_bytes(b"\xef\xbb\xbf" + data if bom else data)


@pytest.mark.parametrize(
    ("encoding", "end", "bom"), [("cp1252", "\r", False), ("utf-8", "\r\n", True)]
)
@pytest.mark.parametrize("range_bytes", [1_500, 40_000])
def test_an_awkward_csv_gives_the_local_rows_and_rejects(
    cluster: Client,
    tmp_path: Path,
    encoding: str,
    end: str,
    bom: bool,
    range_bytes: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cut into byte ranges of *range_bytes* (cuts inside quoted newlines, between a CR and
    its LF), each range read by a task of its own on the workers (which worker takes which is
    the scheduler's choice): the local rows, rejects and line numbers."""
    source = tmp_path / "list.csv"
    awkward_csv(source, encoding, end, bom)
    local = clean_to_folder(tmp_path, source, "local")
    monkeypatch.setattr(reading, "range_bytes", lambda *_: range_bytes)
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address)
    with get_task_stream(cluster) as stream:
        spread = clean_to_folder(tmp_path, source, "dask", *dask)
    reads = [t for t in stream.data if str(t["key"]).startswith("read_scanned")]
    assert len(reads) >= source.stat().st_size // range_bytes
    same(local, spread)
    assert local["rows_rejected"] == 6
    expected = pl.read_parquet(tmp_path / "local")
    assert expected.get_column("notes").str.contains("\n|\r").sum() > 400
    assert pl.read_parquet(tmp_path / "dask").equals(expected)
    rejects = (tmp_path / "local.rejects.csv").read_bytes()
    assert rejects_in_parts(tmp_path / "dask.rejects") == rejects


def test_a_single_file_output_is_joined_by_a_worker(cluster: Client, tmp_path: Path) -> None:
    """-o out.parquet: the workers write parts, one worker joins them in order into the file."""
    source = tmp_path / "list.csv"
    messy_list(source, rows=3_000)
    local = clean(tmp_path, source, "local.parquet", "cache-local", "--offline", sandbox=False)
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address, "--offline")
    with get_task_stream(cluster) as stream:
        spread = clean(tmp_path, source, "dask.parquet", "cache-dask", *dask, sandbox=False)
    names = {str(t["key"]).split("-")[0] for t in stream.data}
    assert {"survey", "read_scanned", "write_part", "write_joined_parquet"} <= names
    same(local, spread)
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "dask.parquet").equals(expected)
    assert not staging_left(tmp_path)


def test_progress_per_stage_from_the_parts(
    cluster: Client,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A log shows each stage's progress from the parts' tallies: the rows read, range by
    range, end at the list's rows; the duplicate marking counts parts."""
    source = tmp_path / "list.csv"
    messy_list(source, rows=6_000)
    monkeypatch.setattr(reading, "range_bytes", lambda *_: 20_000)
    monkeypatch.setenv("LISTCLEAN_RUN_PROGRESS_EVERY", "0.01")  # a line whenever it moves
    args = ["clean", f"file://{source}", "-o", f"file://{tmp_path / 'out'}/", "--offline"]
    dask = ["--engine", "dask", "--scheduler", cluster.scheduler.address]
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main([*args, *dask, *cache, "--log-format", "json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().err.strip().splitlines()]
    progress: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record.get("event") == "progress":
            progress.setdefault(record["stage"], []).append(record)
    assert progress["read"][-1]["done"] == 6_000 and progress["read"][-1]["unit"] == "row"
    parts = -(-source.stat().st_size // 20_000)
    assert progress["duplicates"][-1]["done"] == parts


def test_an_object_store_csv_is_read_in_ranges_by_the_workers(
    s3: Path,  # noqa: F811 (the fixture)
    cluster: Client,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An s3:// CSV (a real S3 server on loopback) is read by the workers in byte ranges
    through fsspec, never downloaded whole by the driver: the local engine's rows and rejects."""
    fs = filesystem("s3://x", StorageConfig(s3.read_text().split('"')[1]))
    source = tmp_path / "list.csv"
    awkward_csv(source, "utf-8", "\r\n", True)
    fs.put_file(str(source), f"{BUCKET}/in/list.csv")
    local = clean_to_folder(tmp_path, source, "local")
    monkeypatch.setattr(reading, "range_bytes", lambda *_: 30_000)
    args = ["clean", f"s3://{BUCKET}/in/list.csv", "-o", f"file://{tmp_path / 'dask'}/"]
    dask = ["--engine", "dask", "--scheduler", cluster.scheduler.address, "--quiet"]
    extra = ["--offline", "--config", str(s3), "--cache-dir", str(tmp_path / "cache-dask")]
    with get_task_stream(cluster) as stream:
        assert main([*args, *dask, *extra]) == 0
    reads = [t for t in stream.data if str(t["key"]).startswith("read_scanned")]
    assert len(reads) >= source.stat().st_size // 30_000
    spread = json.loads((tmp_path / "dask.summary.json").read_text())
    assert spread["rows_in"] == local["rows_in"] and spread["rows_rejected"] == 6
    expected = pl.read_parquet(tmp_path / "local")
    assert pl.read_parquet(tmp_path / "dask").equals(expected)
    rejects = (tmp_path / "local.rejects.csv").read_bytes()
    assert rejects_in_parts(tmp_path / "dask.rejects") == rejects
    assert not list(tmp_path.glob("**/input*"))  # no copy of the object anywhere
