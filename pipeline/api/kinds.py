"""What :func:`pipeline.clean` accepts, and the same kind given back.

A list reaches a notebook in many shapes; each becomes one Parquet file the run reads (a
frame is never converted row by row), and the enriched rows can be handed back in the shape
they came in:

    given                                   read as                    given back
    a path, an s3:// URL                    the file, as the CLI       a polars DataFrame
    polars DataFrame                        written once as Parquet    a polars DataFrame
    polars LazyFrame                        sunk as Parquet (streamed) a polars LazyFrame
    pandas DataFrame                        through Arrow              a pandas DataFrame
    pyarrow Table or RecordBatch            as it is                   a pyarrow Table
    an iterable of address strings          one column, ``address``    a list of dicts

pandas is not a dependency: a pandas frame is recognised by its class only when pandas is
already imported (an object cannot be a pandas frame otherwise), so ``import pipeline`` never
imports it.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.errors import UsageError

ADDRESS_COLUMN: Final = "address"  # the column an iterable of addresses becomes


class Kind(enum.StrEnum):
    PATH = "path"
    POLARS = "polars"
    LAZY = "lazy"
    PANDAS = "pandas"
    ARROW = "arrow"
    ADDRESSES = "addresses"


def kind_of(data: object) -> Kind:
    """Which of the accepted kinds *data* is; a UsageError naming ``data`` when none."""
    if isinstance(data, str | os.PathLike):
        return Kind.PATH
    if isinstance(data, pl.DataFrame):
        return Kind.POLARS
    if isinstance(data, pl.LazyFrame):
        return Kind.LAZY
    if isinstance(data, pa.Table | pa.RecordBatch):
        return Kind.ARROW
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(data, pandas.DataFrame):
        return Kind.PANDAS
    if isinstance(data, bytes | bytearray | dict) or not isinstance(data, Iterable):
        raise UsageError(
            f"clean(data=...) got {data!r:.60} ({type(data).__name__}): pass a path, a polars or "
            "pandas "
            "DataFrame, a polars LazyFrame, a pyarrow Table, or an iterable of address strings."
        )
    return Kind.ADDRESSES


def write_parquet(data: Any, kind: Kind, path: Path) -> None:
    """*data* (any kind but a path) as one Parquet file at *path*."""
    if kind is Kind.POLARS:
        data.write_parquet(path)
    elif kind is Kind.LAZY:
        data.sink_parquet(path)  # streamed: a lazy plan need not fit in memory
    elif kind is Kind.ARROW:
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        pq.write_table(table, path)
    elif kind is Kind.PANDAS:
        # The index is a column only when it means something (not 0..n-1).
        pq.write_table(pa.Table.from_pandas(data, preserve_index=None), path)
    else:
        column = pl.Series(ADDRESS_COLUMN, _addresses(data), dtype=pl.String)
        column.to_frame().write_parquet(path)


def _addresses(values: Iterable[Any]) -> list[str | None]:
    """The iterable's items, each a string (or None, a missing address)."""
    addresses: list[str | None] = []
    for index, value in enumerate(values):
        if value is not None and not isinstance(value, str):
            raise UsageError(
                f"clean(data=...) got an iterable whose item {index} is a "
                f"{type(value).__name__} ({value!r:.60}): an iterable must hold address strings."
            )
        addresses.append(value)
    return addresses


def given_back(frame: pl.DataFrame, kind: Kind) -> Any:
    """*frame* (the enriched rows) as the kind the data was given in."""
    if kind is Kind.LAZY:
        return frame.lazy()
    if kind is Kind.ARROW:
        return frame.to_arrow()
    if kind is Kind.PANDAS:
        return frame.to_pandas()
    if kind is Kind.ADDRESSES:
        return frame.to_dicts()
    return frame
