"""What every stage hands back: the rows it produced and a typed summary of its work."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import polars as pl


class ReadsAgain(Protocol):
    """How the input's own columns of a batch are read again from the input."""

    def frame(self) -> pl.DataFrame: ...


@dataclass(frozen=True)
class Batch:
    """The rows in flight: the input's own columns, and our work columns beside them.

    They are kept apart so that an input column can never clash with a work column; the
    write stage puts them side by side. Both frames always have the same height and order,
    but for a batch held without its own columns (*originals* empty) until the write, which
    reads them *again* from the input (a Dask part: its worker holds only the work columns).
    """

    originals: pl.DataFrame
    work: pl.DataFrame
    again: ReadsAgain | None = None

    def __sizeof__(self) -> int:
        # What the frames' buffers hold (and how it is read again): a Dask worker sizes what it
        # keeps by this.
        frames = int(self.originals.estimated_size() + self.work.estimated_size()) + 128
        return frames + (sys.getsizeof(self.again) if self.again is not None else 0)


@dataclass(frozen=True)
class StageSummary:
    name: str
    rows_in: int
    rows_out: int
    seconds: float
    details: Mapping[str, int | float | str] = field(default_factory=dict)
