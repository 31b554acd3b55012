"""Lists in and out of an object store: a real S3 server (moto's) on 127.0.0.1, reached through
s3fs with the usual AWS_* settings and ``[storage] endpoint_url``."""

from __future__ import annotations

import json
import socket
import zipfile
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from moto.server import ThreadedMotoServer

from pipeline.cli import main
from pipeline.core.config import StorageConfig
from pipeline.core.errors import InputError
from pipeline.stages.objects import filesystem
from pipeline.stages.read.pin import InputPin
from tests.stages.test_streaming import messy_list

BUCKET = "lists"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Credentials in the environment, the endpoint in a config file (returned), an empty
    bucket."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test-key",
        "AWS_SECRET_ACCESS_KEY": "test-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    fs = filesystem("s3://x", StorageConfig(s3_endpoint))
    if fs.exists(BUCKET):
        fs.rm(BUCKET, recursive=True)
    fs.mkdir(BUCKET)
    config = tmp_path / "store.toml"
    config.write_text(f'[storage]\nendpoint_url = "{s3_endpoint}"\n')
    return config


def clean(tmp: Path, config: Path, source: str, output: str, *extra: str) -> int:
    return main(
        [
            "clean",
            source,
            "-o",
            output,
            "--offline",
            "--quiet",
            "--config",
            str(config),
            "--cache-dir",
            str(tmp / "cache"),
            "--memory",
            "64",
            *extra,
        ]
    )


def _store(config: Path) -> StorageConfig:
    text = config.read_text()
    return StorageConfig(text.split('"')[1])


def test_a_csv_in_the_store_is_cleaned_into_the_store(s3: Path, tmp_path: Path) -> None:
    fs = filesystem("s3://x", _store(s3))
    messy_list(tmp_path / "list.csv", rows=6_000)
    fs.put_file(str(tmp_path / "list.csv"), f"{BUCKET}/in/list.csv")
    assert clean(tmp_path, s3, str(tmp_path / "list.csv"), str(tmp_path / "local.parquet")) == 0
    url = f"s3://{BUCKET}/out/list.clean.parquet"
    assert clean(tmp_path, s3, f"s3://{BUCKET}/in/list.csv", url) == 0
    fs.get_file(url, str(tmp_path / "fetched.parquet"))
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "fetched.parquet").equals(expected)
    summary = json.loads(fs.cat_file(f"{BUCKET}/out/list.clean.summary.json"))
    assert summary["output"] == url and summary["input"] == f"s3://{BUCKET}/in/list.csv"
    assert summary["rows_out"] == 6_000
    rejects = fs.cat_file(f"{BUCKET}/out/list.clean.rejects.csv")
    assert rejects.startswith(b"line,reason,raw")
    assert not list(tmp_path.glob("listclean-upload-*"))  # staging removed


def test_a_parquet_dataset_in_the_store_becomes_a_dataset_there(s3: Path, tmp_path: Path) -> None:
    fs = filesystem("s3://x", _store(s3))
    messy_list(tmp_path / "list.csv", rows=9_000)
    frame = pl.read_csv(tmp_path / "list.csv", infer_schema=False)
    for n, start in enumerate(range(0, frame.height, 3_000)):
        shard = tmp_path / f"part-{n:05d}.parquet"
        frame.slice(start, 3_000).write_parquet(shard)
        fs.put_file(str(shard), f"{BUCKET}/export/part-{n:05d}.parquet")
    frame.write_parquet(tmp_path / "whole.parquet")
    assert clean(tmp_path, s3, str(tmp_path / "whole.parquet"), str(tmp_path / "a.parquet")) == 0
    expected = pl.read_parquet(tmp_path / "a.parquet")
    fs.put_file(str(tmp_path / "a.parquet"), f"{BUCKET}/cleaned/part-00099.parquet")  # stale
    for source in (f"s3://{BUCKET}/export/", f"s3://{BUCKET}/export/part-*.parquet"):
        assert clean(tmp_path, s3, source, f"s3://{BUCKET}/cleaned/") == 0
        parts = sorted(fs.ls(f"{BUCKET}/cleaned", detail=False))
        assert [p.rsplit("/", 1)[-1] for p in parts] == ["part-00000.parquet"]
        local = tmp_path / "got"
        fs.get(f"{BUCKET}/cleaned/", str(local), recursive=True)
        assert pl.read_parquet(local / "part-00000.parquet").equals(expected)
    summary = json.loads(fs.cat_file(f"{BUCKET}/cleaned.summary.json"))
    assert summary["output"] == f"s3://{BUCKET}/cleaned" and summary["rows_in"] == 9_000


def test_store_mistakes_are_refused_before_any_work(
    s3: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messy_list(tmp_path / "list.csv", rows=100)
    local = str(tmp_path / "list.csv")
    assert clean(tmp_path, s3, f"s3://{BUCKET}/nothere.csv", str(tmp_path / "o.parquet")) == 2
    assert "nothere.csv" in capsys.readouterr().err
    assert clean(tmp_path, s3, local, "s3://no-such-bucket/out.parquet") == 2
    assert "no-such-bucket" in capsys.readouterr().err
    assert clean(tmp_path, s3, local, "gs://bucket/out.parquet") == 2
    assert "gs://" in capsys.readouterr().err
    assert not (tmp_path / "o.parquet").exists() and not list(Path.cwd().glob("gs:*"))
    fs = filesystem("s3://x", _store(s3))
    assert fs.ls(BUCKET) == []


def test_a_zipped_list_in_the_store_is_cleaned_into_csv_and_xlsx_there(
    s3: Path, tmp_path: Path
) -> None:
    fs = filesystem("s3://x", _store(s3))
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as archive:
        archive.writestr("subscribed.csv", "Email Address\nann@gmail.com\n;;\n")
    fs.put_file(str(tmp_path / "export.zip"), f"{BUCKET}/in/export.zip")
    for suffix in ("csv", "xlsx"):
        url = f"s3://{BUCKET}/out/export.clean.{suffix}"
        assert clean(tmp_path, s3, f"s3://{BUCKET}/in/export.zip", url) == 0
        summary = json.loads(fs.cat_file(f"{BUCKET}/out/export.clean.summary.json"))
        assert summary["output"] == url and summary["output_format"] == suffix
        assert (summary["rows_out"], summary["rows_rejected"]) == (1, 1)
    fs.get_file(f"{BUCKET}/out/export.clean.csv", str(tmp_path / "fetched.csv"))
    fetched = pl.read_csv(tmp_path / "fetched.csv")
    assert fetched.select("EMAIL", "SOURCE_FILE").rows() == [("ann@gmail.com", "subscribed.csv")]
    rejects = fs.cat_file(f"{BUCKET}/out/export.clean.rejects.csv").decode()
    assert rejects.splitlines() == ["line,reason,raw,file", "3,empty_row,;;,subscribed.csv"]
    assert fs.cat_file(f"{BUCKET}/out/export.clean.xlsx")[:2] == b"PK"


def test_an_object_rewritten_while_it_is_read_is_refused(s3: Path, tmp_path: Path) -> None:
    """The pin of an object is its ETag, version and size, asked of the store afresh."""
    fs = filesystem("s3://x", _store(s3))
    url = f"s3://{BUCKET}/in/list.csv"
    fs.pipe_file(url, b"email\nann@example.com\n")
    pin = InputPin(url, url, _store(s3))
    pin.check()  # unchanged: nothing to say
    fs.pipe_file(url, b"email\nbob@example.com\n")  # the same size, other bytes
    with pytest.raises(InputError, match="changed while it was read"):
        pin.check()
    fs.rm_file(url)
    with pytest.raises(InputError, match="is gone"):
        pin.check()
