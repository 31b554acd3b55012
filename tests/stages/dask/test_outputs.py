"""Every output kind of a Dask run is written by the workers, never by the driver: CSV (with and
without a BOM), xlsx, --split's files, a folder with its rejects beside it, and an object
store's output (moto's S3 server on loopback). Each equals the local engine's (bytes for CSV
and the rejects file, cells for xlsx, frames for Parquet); the task stream shows the writes
on the workers; a run stopped after its parts were written publishes nothing."""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import polars as pl
import pytest
from distributed import Client, get_task_stream
from moto.server import ThreadedMotoServer

from pipeline.cli import main
from pipeline.core.config import StorageConfig
from pipeline.core.errors import OutputError
from pipeline.sandbox.files import SANDBOX_SETTINGS
from pipeline.stages import sequence
from pipeline.stages.dask import engine as dask_engine
from pipeline.stages.dask.engine import DaskRun
from pipeline.stages.objects import filesystem
from tests.stages.dask.clusters import two_workers
from tests.stages.dask.test_cluster import rejects_in_parts, staging_left
from tests.stages.test_streaming import messy_list

ROWS = 6_000  # wide rows: three input parts or so at --memory 64
BUCKET = "cleaned-lists"
AWS = {
    "AWS_ACCESS_KEY_ID": "test-key",
    "AWS_SECRET_ACCESS_KEY": "test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}
SPLIT = ("valid", "risky", "invalid", "suppressed")


@pytest.fixture(scope="module")
def store() -> Iterator[str]:
    """moto's S3 server on loopback, and the credentials for it in this process's environment,
    where the cluster's worker processes (started after it) find them too."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS.items():
            patch.setenv(name, value)
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
            patch.delenv(name, raising=False)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.stop()


@pytest.fixture(scope="module")
def cluster(store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """Two worker processes, each with a local directory of its own."""
    with two_workers(tmp_path_factory.mktemp("workers")) as client:
        yield client


@pytest.fixture(scope="module")
def wide_list(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A list of several input parts: some addresses opted out (--split's suppressed rows),
    and two rejects, one in a middle part and one at the very end."""
    path = tmp_path_factory.mktemp("list") / "list.csv"
    messy_list(path, rows=ROWS)
    frame = pl.read_csv(path, infer_schema=False)
    status = ["unsubscribed" if i % 37 == 5 else "subscribed" for i in range(ROWS)]
    notes = [f"{i:07d}" * 300 for i in range(ROWS)]
    frame.with_columns(pl.Series("Status", status), pl.Series("notes", notes)).write_csv(path)
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(3_100, "ragged,1,2,3,4,5\n")  # too many fields: a reject, with its line
    lines.append('9999,"a, ""quoted"" value,\n')  # a quote never closed
    path.write_text("".join(lines))
    return path


def clean(tmp: Path, source: Path, output: str, *extra: str, code: int = 0) -> dict[str, Any]:
    """*source* cleaned into *output* (under *tmp*, or a URL), the domain answers from one
    cache, so that both engines decide from the same answers; its summary when local."""
    target = output if "://" in output else f"file://{tmp}/{output}"  # out/: a dataset
    got = main(
        [
            "clean",
            f"file://{source}",
            "-o",
            target,
            "--quiet",
            "--memory",
            "64",
            "--cache-dir",
            str(tmp / "cache"),
            *extra,
        ]
    )
    assert got == code
    if code or "://" in output:
        return {}
    stem = output.rstrip("/").rsplit(".", 1)[0] if "." in output else output.rstrip("/")
    summary: dict[str, Any] = json.loads((tmp / f"{stem}.summary.json").read_text())
    return summary


def on_the_cluster(client: Client) -> tuple[str, ...]:
    return ("--engine", "dask", "--scheduler", client.scheduler.address)


def writes_on_workers(client: Client, stream: Any) -> dict[str, int]:
    """The write tasks the run ran, by name: every one on a worker of the cluster."""
    workers = set(client.scheduler_info()["workers"])
    found: dict[str, int] = {}
    for task in stream.data:
        name = str(task["key"]).split("-")[0]
        if name.startswith("write_"):
            assert task["worker"] in workers
            found[name] = found.get(name, 0) + 1
    return found


def sheet(path: Path) -> list[tuple[Any, ...]]:
    book = openpyxl.load_workbook(path, read_only=True)
    try:
        return [tuple(row) for row in book.active.iter_rows(values_only=True)]
    finally:
        book.close()


def test_the_driver_has_no_way_to_write_rows() -> None:
    assert not hasattr(DaskRun, "_write")
    assert not hasattr(dask_engine, "open_outputs") and not hasattr(dask_engine, "RejectsSink")


@pytest.mark.parametrize("bom", [False, True])
def test_a_csv_output_is_the_local_bytes(
    cluster: Client, wide_list: Path, tmp_path: Path, bom: bool
) -> None:
    extra = ("--sandbox", "--config", str(SANDBOX_SETTINGS), *(["--csv-bom"] if bom else []))
    local = clean(tmp_path, wide_list, "local.csv", *extra)
    with get_task_stream(cluster) as stream:
        spread = clean(tmp_path, wide_list, "dask.csv", *extra, *on_the_cluster(cluster))
    writes = writes_on_workers(cluster, stream)
    assert writes["write_part"] >= 3 and writes["write_joined_csv"] == 2  # output, rejects
    assert writes["write_reject_part"] >= 1
    data = (tmp_path / "dask.csv").read_bytes()
    assert data == (tmp_path / "local.csv").read_bytes()
    assert data.startswith(b"\xef\xbb\xbfid,") if bom else data.startswith(b"id,")
    assert data.count(b"\xef\xbb\xbf") == bom and data.count(b"\nid,email,") == 0
    rejects = (tmp_path / "dask.rejects.csv").read_bytes()
    assert rejects == (tmp_path / "local.rejects.csv").read_bytes()
    assert (local["rows_rejected"], spread["rows_rejected"]) == (2, 2)
    assert spread["rejects_by_reason"] == local["rejects_by_reason"]
    assert spread["verdicts"] == local["verdicts"] and len(local["verdicts"]) == 3
    assert not staging_left(tmp_path)


def test_an_xlsx_output_has_the_local_cells(
    cluster: Client, wide_list: Path, tmp_path: Path
) -> None:
    local = clean(tmp_path, wide_list, "local.xlsx", "--offline")
    with get_task_stream(cluster) as stream:
        spread = clean(tmp_path, wide_list, "dask.xlsx", "--offline", *on_the_cluster(cluster))
    writes = writes_on_workers(cluster, stream)
    assert writes["write_workbook"] == 1 and writes["write_part"] >= 3
    cells = sheet(tmp_path / "dask.xlsx")
    assert len(cells) == ROWS + 1 and cells == sheet(tmp_path / "local.xlsx")
    assert spread["verdicts"] == local["verdicts"]
    assert not staging_left(tmp_path)


def test_split_files_are_joined_per_role(cluster: Client, wide_list: Path, tmp_path: Path) -> None:
    extra = ("--sandbox", "--config", str(SANDBOX_SETTINGS), "--split")
    clean(tmp_path, wide_list, "local.parquet", *extra)
    with get_task_stream(cluster) as stream:
        clean(tmp_path, wide_list, "dask.parquet", *extra, *on_the_cluster(cluster))
    writes = writes_on_workers(cluster, stream)
    assert writes["write_joined_parquet"] == 1 + len(SPLIT)
    for role in ("", *(f".{r}" for r in SPLIT)):
        expected = pl.read_parquet(tmp_path / f"local{role}.parquet")
        assert pl.read_parquet(tmp_path / f"dask{role}.parquet").equals(expected), role
        assert expected.height, role  # every role has rows
    assert not staging_left(tmp_path)


def test_a_folder_output_has_its_rejects_beside_it(
    cluster: Client, wide_list: Path, tmp_path: Path
) -> None:
    """-o out/ --split: every file a folder of the workers' parts, the rejects in out.rejects/
    beside the dataset (never inside it), each part with the header."""
    extra = ("--offline", "--split")
    clean(tmp_path, wide_list, "local/", *extra)
    (tmp_path / "dask").mkdir()
    (tmp_path / "dask" / "part-00099.parquet").write_bytes(b"an earlier run's part")
    with get_task_stream(cluster) as stream:
        spread = clean(tmp_path, wide_list, "dask/", *extra, *on_the_cluster(cluster))
    writes = writes_on_workers(cluster, stream)
    assert "write_joined_csv" not in writes and "write_joined_parquet" not in writes
    assert spread["rejects_file"] == str(tmp_path / "dask.rejects")
    for role in ("", *(f".{r}" for r in SPLIT)):
        expected = pl.read_parquet(tmp_path / f"local{role}")
        assert pl.read_parquet(tmp_path / f"dask{role}").equals(expected), role
        names = {p.name for p in (tmp_path / f"dask{role}").iterdir()}
        assert names and all(n.startswith("part-") and n.endswith(".parquet") for n in names)
    assert "part-00099.parquet" not in {p.name for p in (tmp_path / "dask").iterdir()}
    rejects = rejects_in_parts(tmp_path / "dask.rejects")
    assert rejects == (tmp_path / "local.rejects.csv").read_bytes()
    assert len(list((tmp_path / "dask.rejects").iterdir())) == 2  # a part for each reject
    assert not staging_left(tmp_path)


def test_an_object_store_output_is_written_there_by_the_workers(
    cluster: Client, wide_list: Path, tmp_path: Path, store: str
) -> None:
    """A folder and a CSV file in S3: the workers write under a staging prefix beside each,
    the commit point copies the staged keys to their own and deletes them; an earlier run's
    part beyond the new ones is gone; a run that fails after its parts publishes nothing."""
    fs = filesystem("s3://x", StorageConfig(store))
    if fs.exists(BUCKET):
        fs.rm(BUCKET, recursive=True)
    fs.mkdir(BUCKET)
    fs.pipe_file(f"{BUCKET}/out/part-00099.parquet", b"an earlier run's part")
    config = tmp_path / "store.toml"
    config.write_text(f'[storage]\nendpoint_url = "{store}"\n')
    extra = ("--offline", "--config", str(config))
    clean(tmp_path, wide_list, "local/", *extra)
    clean(tmp_path, wide_list, "local.csv", *extra)
    dask = on_the_cluster(cluster)
    with get_task_stream(cluster) as stream:
        clean(tmp_path, wide_list, f"s3://{BUCKET}/out/", *extra, *dask)
        clean(tmp_path, wide_list, f"s3://{BUCKET}/list.clean.csv", *extra, *dask)
    writes = writes_on_workers(cluster, stream)
    assert writes["write_part"] >= 6 and writes["write_joined_csv"] == 2
    fs.get(f"{BUCKET}/out/", str(tmp_path / "fetched"), recursive=True)
    expected = pl.read_parquet(tmp_path / "local")
    assert pl.read_parquet(tmp_path / "fetched").equals(expected)
    assert "part-00099.parquet" not in os.listdir(tmp_path / "fetched")
    fs.get(f"{BUCKET}/out.rejects/", str(tmp_path / "rejects"), recursive=True)
    assert rejects_in_parts(tmp_path / "rejects") == (tmp_path / "local.rejects.csv").read_bytes()
    assert fs.cat_file(f"{BUCKET}/list.clean.csv") == (tmp_path / "local.csv").read_bytes()
    rejects = fs.cat_file(f"{BUCKET}/list.clean.rejects.csv")
    assert rejects == (tmp_path / "local.rejects.csv").read_bytes()
    summary = json.loads(fs.cat_file(f"{BUCKET}/list.clean.summary.json"))
    assert summary["rejects_file"] == f"s3://{BUCKET}/list.clean.rejects.csv"
    published = sorted(fs.find(BUCKET))
    assert not [key for key in published if "/." in key]  # no staging prefix left
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sequence, "stage_summaries", _fail)
        clean(tmp_path, wide_list, f"s3://{BUCKET}/list.clean.csv", *extra, *dask, code=2)
    assert sorted(fs.find(BUCKET)) == published
    assert fs.cat_file(f"{BUCKET}/list.clean.csv") == (tmp_path / "local.csv").read_bytes()


def _fail(*args: Any) -> None:
    raise OutputError("The run was stopped on purpose after its parts were written.")


def _terminate(*args: Any) -> None:
    os.kill(os.getpid(), signal.SIGTERM)  # its handler raises Interrupted here


def test_a_run_stopped_after_its_parts_publishes_nothing(
    cluster: Client, wide_list: Path, tmp_path: Path
) -> None:
    """SIGTERM on the driver once the workers have written and joined every file: the earlier
    files stay byte for byte, and no staging folder is left."""
    clean(tmp_path, wide_list, "out.csv", "--offline", "--split")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    with pytest.MonkeyPatch.context() as patch, get_task_stream(cluster) as stream:
        patch.setattr(sequence, "stage_summaries", _terminate)
        dask = on_the_cluster(cluster)
        clean(tmp_path, wide_list, "out.csv", "--offline", "--split", *dask, code=143)
    writes = writes_on_workers(cluster, stream)
    assert writes["write_part"] >= 3 and writes["write_joined_csv"] == 1 + len(SPLIT) + 1
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before
    assert not staging_left(tmp_path)


@pytest.mark.parametrize("output", ["out.csv", "out.xlsx", "out.parquet", "out/"])
def test_a_list_with_no_row_still_gets_every_file(
    cluster: Client, tmp_path: Path, output: str
) -> None:
    """A header and blank lines only: no part holds a row, and the files still come, as the
    local engine writes them (the header, every column; the rejects file with its header)."""
    source = tmp_path / "list.csv"
    source.write_text("id,email\n\n\n")
    local = clean(tmp_path, source, f"local-{output}", "--offline", "--split")
    spread = clean(tmp_path, source, output, "--offline", "--split", *on_the_cluster(cluster))
    assert (spread["rows_out"], spread["rows_rejected"]) == (local["rows_out"], 2) == (0, 2)
    for role in ("", *(f".{r}" for r in SPLIT)):
        ours, theirs = tmp_path / f"out{role}", tmp_path / f"local-out{role}"
        if output == "out.csv":
            assert ours.with_suffix(".csv").read_bytes() == theirs.with_suffix(".csv").read_bytes()
        elif output == "out.xlsx":
            assert sheet(ours.with_suffix(".xlsx")) == sheet(theirs.with_suffix(".xlsx"))
        else:
            fmt = ".parquet" if output == "out.parquet" else ""
            got = pl.read_parquet(ours.with_name(ours.name + fmt))
            assert got.equals(pl.read_parquet(theirs.with_name(theirs.name + fmt)))
    if output == "out/":
        rejects = rejects_in_parts(tmp_path / "out.rejects")
    else:
        rejects = (tmp_path / "out.rejects.csv").read_bytes()
    assert rejects == (tmp_path / "local-out.rejects.csv").read_bytes()
