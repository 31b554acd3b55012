"""The cluster a Dask run joins: connected, its workers' versions checked, and what a lost
worker means for the run.

Tasks are never tied to a worker's address: the scheduler places them, and a task whose worker
was lost (SIGKILL, a nanny's restart for memory) runs again on another worker from its inputs.
What cannot run again is data the driver sent (the batches it read): when a worker holding some
of it is lost, the cluster's stages start again from the read (:data:`ATTEMPTS` times in all),
nothing having been published; the domain answers learned so far are in the cache already, so
the second attempt is the cheaper one.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipeline.core.errors import ListcleanError, UsageError
from pipeline.version import __version__

ATTEMPTS = 3  # runs of the cluster's stages, in all, before lost workers fail the run
# A worker thread holds the part it works on and the results of a few others (its own, and
# those it keeps for the next stage): a part is sized for a quarter of a thread's memory.
PARTS_A_THREAD_HOLDS = 4


@dataclass(frozen=True)
class Cluster:
    client: Any  # a distributed.Client
    workers: tuple[str, ...]  # worker addresses when the run began, in a stable order
    thread_mb: int | None = None  # the smallest worker memory limit a thread, None: no limit

    def part_mb(self, asked_mb: int) -> int:
        """The memory a part is sized for: the run's (--memory), or less where the workers'
        limits call for it (a part of the local engine's size passes a 2 GiB worker's limit
        while it waits for its neighbours)."""
        if self.thread_mb is None:
            return asked_mb
        return max(64, min(asked_mb, self.thread_mb // PARTS_A_THREAD_HOLDS))


def thread_memory(workers: dict[str, Any]) -> int | None:
    """MiB a worker thread may use, on the smallest worker (scheduler_info()'s workers);
    None when no worker has a memory limit."""
    limits = [
        int(info["memory_limit"]) // max(1, int(info.get("nthreads", 1))) // 2**20
        for info in workers.values()
        if info.get("memory_limit")
    ]
    return min(limits) if limits else None


class LostWorkers(ListcleanError):
    """The cluster lost workers during every attempt of a run (see :data:`ATTEMPTS`)."""


@contextlib.contextmanager
def connect(scheduler: str | None, workers: int) -> Iterator[Cluster]:
    """The cluster at *scheduler*, or a LocalCluster of *workers* processes (closed after);
    refused when a worker runs another listclean or polars than this one."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise UsageError("--engine dask needs Dask: pip install 'listclean[dask]'.") from exc
    with contextlib.ExitStack() as stack:
        # Dask keeps the last 1,000 batches of messages each comm sent, for debugging: on the
        # driver, every task it submitted, tens of megabytes once a list has thousands of parts.
        stack.enter_context(dask.config.set({"distributed.admin.low-level-log-length": 0}))
        if scheduler:
            try:
                client = stack.enter_context(Client(scheduler, timeout="20s"))  # type: ignore[no-untyped-call]
            except OSError as exc:
                raise UsageError(f"Cannot reach the Dask scheduler {scheduler}: {exc}.") from exc
        else:
            # ":0": the scheduler's HTTP server on a port of the system's choosing. Without a
            # dashboard it still listens, on 8787 unless told: a second run at the same time
            # (or any other Dask cluster on the host) would be warned off it.
            # Its processes log to this terminal: only what would stop them (the run's own
            # messages say what went wrong), never a heartbeat's traceback as the run ends.
            local = LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                silence_logs=logging.CRITICAL,
            )
            stack.enter_context(local)
            client = stack.enter_context(Client(local))  # type: ignore[no-untyped-call]
        client.wait_for_workers(1)
        check_versions(client.run(versions, on_error="return"))
        joined: dict[str, Any] = dict(client.scheduler_info()["workers"])
        yield Cluster(client, tuple(sorted(joined)), thread_memory(joined))


def versions() -> tuple[str, str]:
    """This process's listclean and polars versions (run on every worker by :func:`connect`)."""
    return __version__, pl.__version__


def check_versions(found: dict[str, Any]) -> None:
    """Refuse a cluster whose workers run another listclean or polars: partitions are chosen
    by polars' hash, and the rules by listclean's version, so every process must agree."""
    mine = versions()
    odd = {
        a: got for a, got in found.items() if isinstance(got, BaseException) or tuple(got) != mine
    }
    if not odd:
        return
    address, got = sorted(odd.items(), key=str)[0]
    seen = "cannot import listclean" if isinstance(got, BaseException) else _named(tuple(got))
    raise UsageError(
        f"The Dask worker {address} {seen}, and this machine runs {_named(mine)} "
        f"({len(odd)} of {len(found)} workers differ). Install the same versions on every "
        "worker (pip install 'listclean[dask]' from the same lock) and start them again."
    )


def _named(pair: tuple[str, ...]) -> str:
    return f"runs listclean {pair[0]} with polars {pair[1]}"


def lost_work() -> tuple[type[BaseException], type[BaseException]]:
    """The errors that say workers were lost: (a task's inputs forgotten with a worker, which
    a new attempt mends; a task that ended every worker it ran on, which it would not)."""
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError

    return FutureCancelledError, KilledWorker


def give_up(attempts: int, exc: BaseException) -> LostWorkers:
    """The run's one message when lost workers end it (no remote traceback)."""
    if attempts:
        what = f"lost workers in each of {attempts} attempts ({exc})"
    else:
        what = f"lost every worker that ran one task ({exc})"
    return LostWorkers(
        f"The Dask cluster {what}; nothing was published. See the workers' logs (a memory "
        "limit too low for --memory, a machine gone) and run again."
    )
