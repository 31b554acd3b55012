"""The Dask engine on a cluster started as a team starts one: `dask scheduler` and two
`dask worker --nthreads 1 --memory-limit 1GiB` processes (nannies on, no listclean-specific
flag), the command line run as its own process with `file://` paths. The output equals the
local engine's row for row, the rejects byte for byte; and again with one worker SIGKILLed
while the run's tasks are running (its nanny starts a new one)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from distributed import Client

from tests.stages.test_streaming import messy_list

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[str]:
    """A scheduler and two workers, each its own process group; the scheduler's address."""
    file = tmp_path / "scheduler.json"
    log = (tmp_path / "cluster.log").open("w")
    loopback = ["--host", "127.0.0.1"]
    alone = ["--port", "0", "--dashboard-address", ":0", "--scheduler-file", str(file)]
    started = [
        subprocess.Popen(
            [BIN / "dask", "scheduler", *loopback, *alone],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    ]
    try:
        while not file.exists():
            time.sleep(0.1)
        worker = [BIN / "dask", "worker", *loopback, "--scheduler-file", str(file)]
        worker += ["--nthreads", "1", "--memory-limit", "1GiB"]
        for n in range(2):
            place = ["--local-directory", str(tmp_path / f"worker-{n}")]
            started.append(
                subprocess.Popen([*worker, *place], stdout=log, stderr=log, start_new_session=True)
            )
        address: str = json.loads(file.read_text())["address"]
        with Client(address) as client:
            client.wait_for_workers(2)
        yield address
    finally:
        for process in reversed(started):
            os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            process.wait(timeout=60)
        log.close()


def clean(tmp: Path, source: Path, name: str, *extra: str) -> subprocess.Popen[str]:
    command = [BIN / "listclean", "clean", f"file://{source}", "-o", f"file://{tmp / name}"]
    command += ["--offline", "--quiet", "--memory", "64", "--cache-dir", str(tmp / f"c-{name}")]
    command += extra
    return subprocess.Popen([str(c) for c in command], text=True, stderr=subprocess.PIPE)


def finished(process: subprocess.Popen[str]) -> None:
    _, err = process.communicate(timeout=600)
    assert process.returncode == 0, err


def the_list(tmp: Path) -> Path:
    """Messy addresses with a note column holding quoted line ends: about 5 MiB, several byte
    ranges at --memory 64 (some cut inside a quoted field)."""
    source = tmp / "list.csv"
    messy_list(source, rows=120_000)
    frame = pl.read_csv(source, infer_schema=False)
    notes = [f"line one\nline two, {i}" if i % 7 == 0 else "plain" for i in range(frame.height)]
    frame.with_columns(pl.Series("note", notes)).write_csv(source)
    return source


def test_a_process_cluster_gives_the_local_output(scheduler: str, tmp_path: Path) -> None:
    source = the_list(tmp_path)
    finished(clean(tmp_path, source, "local.parquet"))
    finished(clean(tmp_path, source, "dask.parquet", "--engine", "dask", "--scheduler", scheduler))
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "dask.parquet").equals(expected)
    rejects = (tmp_path / "local.rejects.csv").read_bytes()
    assert (tmp_path / "dask.rejects.csv").read_bytes() == rejects


def test_a_worker_killed_mid_run_costs_time_not_the_output(scheduler: str, tmp_path: Path) -> None:
    source = the_list(tmp_path)
    finished(clean(tmp_path, source, "local.parquet"))
    run = clean(tmp_path, source, "dask/", "--engine", "dask", "--scheduler", scheduler)
    with Client(scheduler) as client:
        while not any(client.processing().values()):  # the run's tasks are on the workers
            assert run.poll() is None, "the run ended before a worker could be killed"
            time.sleep(0.05)
        pids = client.run(os.getpid)
        os.kill(pids[sorted(pids)[0]], signal.SIGKILL)
        finished(run)
        client.wait_for_workers(2)
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "dask").equals(expected)
