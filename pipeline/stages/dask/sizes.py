"""What a worker holds, sized as it is, so Dask's memory manager can spill it.

Dask measures each result a worker keeps with :func:`dask.sizeof.sizeof`; for a type it does
not know that is :func:`sys.getsizeof`, which for a polars frame is the few dozen bytes of the
Python object, not the Arrow buffers behind it (56 bytes for a 30 MB frame). A worker then
believes it holds almost nothing, never spills, and is restarted by its nanny when the real
memory runs out. Registering polars' own estimate (:meth:`polars.DataFrame.estimated_size`)
lets the worker's memory manager see, and spill, what it holds.

The registration runs when this module is imported: :mod:`pipeline.stages.dask.tasks` imports
it, and every worker imports that module to unpickle the first task it runs, before it holds
any result of ours. The containers our tasks return (:class:`~pipeline.stages.base.Batch`, the
partition) size themselves through ``__sizeof__``, which ``sizeof`` falls back to.
"""

from __future__ import annotations

import polars as pl
from dask.sizeof import sizeof


def _frame(frame: pl.DataFrame) -> int:
    return int(frame.estimated_size()) + 64  # the buffers, and the Python object around them


def _series(series: pl.Series) -> int:
    return int(series.estimated_size()) + 64


sizeof.register(pl.DataFrame, _frame)  # type: ignore[no-untyped-call]
sizeof.register(pl.Series, _series)  # type: ignore[no-untyped-call]


def size_of(value: object) -> int:
    """Bytes *value* holds as Dask counts them (frames by their buffers)."""
    return int(sizeof(value))
