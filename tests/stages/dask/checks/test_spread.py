"""A remote API's checks on a cluster: the local engine's share-out (the same addresses asked,
the budget and the quota kept), from one owner task; the quota ledger and the answers shared
through the caches, so that a second run asks nothing and a third stays within the quota."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
from distributed import Client, get_task_stream

from pipeline.cli import main
from tests.stages.dask.checks.test_owners import cluster  # noqa: F401 (the fixture)
from tests.test_verify_api import SECRET, FakeApi


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
