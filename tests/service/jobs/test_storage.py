"""The jobs' files in a folder and in an object store (a real S3 server, moto's, on loopback):
the same calls, and a whole job run with its files in the store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.config import StorageConfig
from pipeline.service.jobs.storage import Storage, default_root
from tests.service.conftest import Env, run
from tests.service.jobs.conftest import (
    csv_rows,
    download,
    form,
    post_job,
    session,
    wait_for,
    with_jobs,
)
from tests.stages.test_objects import BUCKET, s3, s3_endpoint  # noqa: F401 (fixtures)


@pytest.fixture(params=["folder", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "folder":
        return Storage(str(tmp_path / "jobs"), StorageConfig())
    request.getfixturevalue("s3")
    endpoint = request.getfixturevalue("s3_endpoint")
    return Storage(f"s3://{BUCKET}/jobs", StorageConfig(endpoint))


def test_files_go_in_whole_and_come_out_as_they_went(storage: Storage, tmp_path: Path) -> None:
    local = tmp_path / "upload.csv"
    local.write_bytes(b"email\na@b.org\n")
    storage.put(local, "j_1", "input", "list.csv")
    assert not local.exists()
    assert storage.exists("j_1", "input", "list.csv")
    assert not storage.exists("j_1", "input", "other.csv")
    assert storage.size("j_1", "input", "list.csv") == 14
    with storage.open("j_1", "input", "list.csv") as handle:
        assert handle.read() == b"email\na@b.org\n"
    with pytest.raises(FileNotFoundError), storage.open("j_1", "out", "nothing.csv"):
        pass
    storage.remove("j_1")
    assert not storage.exists("j_1", "input", "list.csv")
    storage.remove("j_never")  # nothing there is no error


def test_where_a_folder_is_when_none_is_named(tmp_path: Path) -> None:
    assert default_root(tmp_path / "service.sqlite", tmp_path / "data") == tmp_path / "jobs"
    assert default_root("postgresql://db/x", tmp_path / "data") == tmp_path / "data" / "jobs"


@pytest.mark.usefixtures("s3")
def test_a_job_with_its_files_in_an_object_store(
    env: Env, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    endpoint = request.getfixturevalue("s3_endpoint")
    config = with_jobs(env.config(), tmp_path, storage=f"s3://{BUCKET}/jobs")
    config = replace(config, engine=replace(config.engine, storage=StorageConfig(endpoint)))
    _, secret = env.key("starter")

    async def scenario() -> tuple[dict[str, Any], Any, Any]:
        async with env.serving(config) as url, session() as s:
            job = (await post_job(s, url, secret, form(split="true"))).json["id"]
            done = await wait_for(s, url, secret, job)
            csv = await download(s, url, secret, f"/api/jobs/{job}/result?format=csv")
            xlsx = await download(s, url, secret, f"/api/jobs/{job}/result?format=xlsx")
            return done, csv, xlsx

    done, csv, xlsx = run(scenario())
    assert done["state"] == "done", done
    assert csv[0] == 200 and len(csv_rows(csv[1])) == 297
    assert xlsx[0] == 200 and xlsx[1][:2] == b"PK"
    store = Storage(f"s3://{BUCKET}/jobs", StorageConfig(endpoint))
    assert store.exists(done["id"], "out", "list.clean.parquet")
    assert store.exists(done["id"], "input", "list.csv")
    assert not (tmp_path / "jobs").exists()  # nothing of it on this host's disk
