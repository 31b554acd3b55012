"""The tests' Dask cluster: two worker processes of one thread each, on loopback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from distributed import Client, LocalCluster


@contextlib.contextmanager
def two_workers(folder: Path, memory_limit: str | None = None) -> Iterator[Client]:
    """A client of two worker processes whose local directories are in *folder*, with
    *memory_limit* each (default: the machine's memory shared among them)."""
    limit = {} if memory_limit is None else {"memory_limit": memory_limit}
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # never the 8787 another cluster on the host may hold
            local_directory=str(folder),
            **limit,
        ) as local,
        Client(local) as client,
    ):
        client.wait_for_workers(2)
        yield client
