"""What a process that runs lists through the stages tells polars through its environment.

Polars reads these variables once (the allocator when polars is imported, the CSV reader's at
its first scan), so :func:`prepare_polars` runs before polars is first imported: in the list
commands (:mod:`pipeline.cli.commands`) and in a bulk job's process
(:mod:`pipeline.service.jobs.worker`). A variable the environment already sets is left as it
is. A Dask cluster's workers, started from such a process, inherit them.

- How polars' allocator (jemalloc, ``_RJEM_MALLOC_CONF``) keeps the pages a list's batches
  free: five seconds in each of its two stages before they go back to the system. Polars asks
  for half a second and one second (its own defaults, set on import, with what the
  environment says appended: the later setting wins). The next batches reuse the pages
  instead of faulting fresh ones in: the 10M-row list's run made half the page faults, 0.95x
  the wall time and 0.94x the CPU, for about 75 MiB more at its peak (bench/RESULTS.md).
- How many bytes of a CSV polars' streaming reader cuts at a time
  (``POLARS_CSV_CHUNK_SIZE``): 4 MiB. It reads several such chunks ahead of the batches asked
  of it, whatever their size: the 10M-row list read alone held 355 MiB with its own chunk
  size, 168 MiB with these (polars itself: 26 MiB), at the same speed; the run's peak
  1,130 -> 916 MiB (bench/RESULTS.md).
"""

from __future__ import annotations

import os
from typing import Final

LIST_ENVIRONMENT: Final = {
    "_RJEM_MALLOC_CONF": "dirty_decay_ms:5000,muzzy_decay_ms:5000",
    "POLARS_CSV_CHUNK_SIZE": str(4 << 20),
}


def prepare_polars() -> None:
    """Set the variables of :data:`LIST_ENVIRONMENT` the environment does not set."""
    for name, value in LIST_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
