"""The lists of a zip archive read as one: every member's rows, one member after the other,
with a ``SOURCE_FILE`` column naming the member each row came from.

Members need not have the same columns (Mailchimp's ``unsubscribed_`` export has ``UNSUB_TIME``
and ``UNSUB_REASON``, its ``subscribed_`` one does not): the list's columns are every member's,
in the order they are first seen, empty where a member lacks one. Every member must have the
email column. A reject names its member in the rejects file's ``file`` column, its ``line``
being the line in that member.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import polars as pl

from pipeline.core.errors import InputError
from pipeline.core.schema import SOURCE_COLUMN
from pipeline.stages.read.csv_source import REJECT_SCHEMA, CsvSource


@dataclass(frozen=True)
class Part:
    name: str  # the member's path in the archive
    source: CsvSource


class MemberSource:
    """Several CSV members as one list (see the module's doc)."""

    def __init__(self, parts: Sequence[Part]) -> None:
        self._parts = list(parts)
        self._renamed = [_clashes(part.source.columns) for part in self._parts]
        own: dict[str, None] = {}
        for part, renamed in zip(self._parts, self._renamed, strict=True):
            own.update(dict.fromkeys(renamed.get(c, c) for c in part.source.columns))
        self.columns = [*own, SOURCE_COLUMN]
        self.encoding = _joined(p.source.encoding for p in self._parts)
        self.delimiter = _joined(p.source.delimiter for p in self._parts)
        self.warnings = tuple(w for p in self._parts for w in p.source.warnings)
        self._current = 0  # the member being read: the one a ReadAgain is about

    @property
    def header_row(self) -> int:
        """The line the first member's header starts on."""
        return self._parts[0].source.header_row if self._parts else 0

    @property
    def names(self) -> list[str]:
        return [part.name for part in self._parts]

    @property
    def exact(self) -> bool:
        return self._parts[self._current].source.exact

    @exact.setter
    def exact(self, value: bool) -> None:
        self._parts[self._current].source.exact = value

    @property
    def schema(self) -> dict[str, pl.DataType]:
        return dict.fromkeys(self.columns, pl.String())

    @property
    def reject_schema(self) -> dict[str, pl.DataType]:
        return {**{k: v() for k, v in REJECT_SCHEMA.items()}, "file": pl.String()}

    @property
    def expected_rows(self) -> int:
        return sum(part.source.expected_rows for part in self._parts)

    @property
    def bytes_per_row(self) -> float:
        return max(part.source.bytes_per_row for part in self._parts)

    def require(self, column: str) -> None:
        """InputError unless every member has *column* (the email column)."""
        for part, renamed in zip(self._parts, self._renamed, strict=True):
            if column not in (renamed.get(c, c) for c in part.source.columns):
                raise InputError(
                    f"The member {part.name!r} of the archive has no column {column!r}, which "
                    "the other members hold the addresses in. Name its email column with "
                    "--email-column, or pick one member with --member."
                )

    def batches(self, rows: int) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
        for index, part in enumerate(self._parts):
            self._current = index
            renamed = self._renamed[index]
            for frame, rejects in part.source.batches(rows):
                yield (
                    self._conform(frame.rename(renamed), part.name),
                    rejects.with_columns(pl.lit(part.name, pl.String).alias("file")),
                )
        self._current = 0

    def _conform(self, frame: pl.DataFrame, name: str) -> pl.DataFrame:
        missing = [
            pl.lit(None, pl.String).alias(c)
            for c in self.columns
            if c not in frame and c != SOURCE_COLUMN
        ]
        return frame.with_columns(*missing, pl.lit(name, pl.String).alias(SOURCE_COLUMN)).select(
            self.columns
        )


def _clashes(columns: list[str]) -> dict[str, str]:
    """A member's columns named like ``SOURCE_FILE`` (ignoring case), kept as ``input_...``."""
    taken = {c.casefold() for c in columns} | {SOURCE_COLUMN.casefold()}
    renamed = {}
    for column in columns:
        if column.casefold() == SOURCE_COLUMN.casefold():
            new = f"input_{column}"
            while new.casefold() in taken:
                new = f"input_{new}"
            renamed[column] = new
            taken.add(new.casefold())
    return renamed


def _joined(values: Iterator[str] | Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(values))
