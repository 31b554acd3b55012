"""A remote API's and a paid verifier's checks on a cluster: the local engine's share-out (the
same addresses asked, the budget and the quota kept), from one owner task; the quota ledger
and the answers shared through the caches, so that a second run asks nothing and a third
stays within the quota; a vendor's bulk job that outlives its owner's worker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
from distributed import Client, get_task_stream

from pipeline.cli import main
from pipeline.sandbox.files import SANDBOX_SETTINGS
from tests.conftest import SAMPLE_CSV
from tests.stages.dask.checks.test_owners import cluster  # noqa: F401 (the fixture)
from tests.stages.dask.clusters import two_workers
from tests.test_verify_api import SECRET, FakeApi


def running(client: Client, task: str) -> list[str]:
    """The workers running a task named *task* now."""

    def busy(dask_worker: Any) -> bool:
        return any(task in str(key) for key in dask_worker.state.executing)

    found: dict[str, bool] = client.run(busy)
    return [address for address, now in found.items() if now]


def clean_api(tmp: Path, source: Path, api: FakeApi, output: str, *extra: str) -> Any:
    tmp.mkdir(exist_ok=True)
    config = tmp / "api.toml"
    config.write_text("[api]\ntimeout = 0.5\nretries = 2\nbackoff = 0.01\nhorizon = 60\n")
    args = ["clean", f"file://{source}", "-o", f"file://{tmp / output}", "--sandbox"]
    args += ["--config", str(config), "--cache-dir", str(tmp / "cache"), "--verify", "api"]
    args += ["--api-url", f"http://127.0.0.1:{api.port}", "--api-key", SECRET, "--quiet"]
    assert main([*args, *extra]) == 0
    return json.loads((tmp / output.replace(".parquet", ".summary.json")).read_text())


def emails(api: FakeApi) -> set[str]:
    return {query.split("email=", 1)[1] for query, _ in api.behaviour.requests}


def test_a_remote_api_is_asked_by_one_owner_as_a_local_run_asks_it(
    cluster: Client,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    domains = ["gmail.com", "yahoo.com", "outlook.com", "acme-widgets.com"]
    people = [f"person{i}@{domains[i % 7 % 4]}" for i in range(120)]
    source = tmp_path / "list.csv"
    pl.DataFrame({"email": people + people[:10]}).write_csv(source)
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address)
    with FakeApi() as local_api, FakeApi() as cluster_api:
        local = clean_api(tmp_path / "local", source, local_api, "out.parquet", "--budget", "50")
        with get_task_stream(cluster) as stream:
            spread = clean_api(
                tmp_path / "dask", source, cluster_api, "out.parquet", "--budget", "50", *dask
            )
        assert emails(cluster_api) == emails(local_api) and len(emails(local_api)) == 50
        assert spread["api_requests"] == local["api_requests"] == 50
        owners = [t for t in stream.data if str(t["key"]).startswith("ask_api")]
        assert len(owners) == 1
        columns = ["EMAIL", "VERDICT", "SCORE", "REASON"]
        expected = pl.read_parquet(tmp_path / "local" / "out.parquet").select(columns)
        got = pl.read_parquet(tmp_path / "dask" / "out.parquet").select(columns)
        assert got.equals(expected)
        # The answers are shared: the budget goes to the addresses not asked yet, and the
        # quota ledger (the shared caches') keeps what the service allows this month.
        cluster_api.behaviour.quota = 100
        again = clean_api(tmp_path / "dask", source, cluster_api, "again.parquet", *dask)
        assert again["api_requests"] == 50 and len(cluster_api.behaviour.requests) == 100
        more = clean_api(tmp_path / "dask", source, cluster_api, "more.parquet", *dask)
        assert more["api_requests"] == 0


def test_a_vendor_job_outlives_its_owner(tmp_path: Path) -> None:
    """The worker of a paid verifier's owner SIGKILLed while its bulk job runs: the job's id
    was committed the moment the vendor named it, so the owner, run again on the other worker,
    collects it and never submits (nor pays for) its addresses again. The same rows as a run
    whose job was never interrupted."""
    from worlds.vendors.base import GOOD_KEY
    from worlds.vendors.zerobounce import FakeZeroBounce

    config = tmp_path / "vendor.toml"
    config.write_text(SANDBOX_SETTINGS.read_text() + "\n[vendor]\npoll_interval = 0.05\n")
    paid = ("--verify", "zerobounce", "--api-key", GOOD_KEY, "--config", str(config))
    with FakeZeroBounce() as reference:
        local = ["clean", str(SAMPLE_CSV), "-o", str(tmp_path / "local.parquet"), "--sandbox"]
        local += ["--cache-dir", str(tmp_path / "cache-local"), "--quiet"]
        assert main([*local, *paid, "--api-url", reference.url]) == 0
        billed = reference.spent
    with (
        FakeZeroBounce(polls=100) as fake,  # a job of about five seconds
        two_workers(tmp_path / "workers") as client,
    ):
        args = ["clean", f"file://{SAMPLE_CSV}", "-o", f"file://{tmp_path / 'dask.parquet'}"]
        args += ["--sandbox", "--cache-dir", str(tmp_path / "cache-dask"), "--quiet", *paid]
        args += ["--api-url", fake.url, "--engine", "dask", "--scheduler", client.scheduler.address]
        run = subprocess.Popen([sys.executable, "-m", "pipeline", *args])
        victim = None
        deadline = time.monotonic() + 120
        while victim is None and time.monotonic() < deadline and run.poll() is None:
            busy = running(client, "ask_vendor")
            if busy and fake.jobs and next(iter(fake.jobs.values())).polls > 5:
                victim = busy[0]
            time.sleep(0.05)
        assert victim is not None, "the vendor's owner was not seen polling its job"
        os.kill(client.run(os.getpid)[victim], signal.SIGKILL)
        assert run.wait(timeout=300) == 0
        assert len(fake.jobs) == 1 and fake.spent == billed  # collected, never sent again
    columns = ["EMAIL", "VERDICT", "SCORE", "REASON", "DETAIL"]
    expected = pl.read_parquet(tmp_path / "local.parquet").select(columns)
    assert pl.read_parquet(tmp_path / "dask.parquet").select(columns).equals(expected)
