"""The run history's value types: a run as the history keeps it, what a run keeps of each
address, and what changed since the list's last run. Everything else in the room builds on
these."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import polars as pl

from pipeline.core.history.keys import HASH
from pipeline.core.verdict import Verdict

VERDICTS: Final = pl.Enum([v.value for v in Verdict])
# What a run keeps of each distinct address: its hash, VERDICT, REASON and SCORE.
KEPT: Final[Mapping[str, pl.DataType]] = {
    HASH: pl.UInt64(),
    "VERDICT": VERDICTS,
    "REASON": pl.String(),
    "SCORE": pl.Float64(),
}
# What a run's decided rows hand the history, one row per distinct address (its first row):
# the kept columns, and for the changes file its address and when its answer was learned.
DECIDED: Final[Mapping[str, pl.DataType]] = {
    **KEPT,
    "EMAIL": pl.String(),
    "LEARNED_AT": pl.Float64(),  # Unix time; null: learned by this run (its start)
}


@dataclass(frozen=True)
class RunStart:
    """A run as it begins: the history stages it, and keeps it once :meth:`finish` is called."""

    run_id: str
    list_name: str
    sandbox: bool  # a --sandbox run: a history of its own, never mixed with real runs
    started_at: float  # Unix time
    settings_digest: str
    version: str


@dataclass(frozen=True)
class PastRun:
    """A finished run of a list, as the history keeps it."""

    run_id: str
    list_name: str
    sandbox: bool
    started_at: float
    finished_at: float
    addresses: int  # distinct addresses kept
    settings_digest: str
    version: str
    counts: Mapping[str, Any] = field(default_factory=dict)  # the run's own figures


@dataclass
class Changes:
    """What changed since the list's last run, counted part by part (:meth:`merge`).

    ``unchanged`` counts the distinct addresses in both runs, whatever their VERDICT (the
    issue's word); ``transitions`` those of them whose VERDICT changed, by ``"Before->After"``.
    """

    previous_run_at: float
    previous_addresses: int
    new: int = 0
    unchanged: int = 0
    transitions: Counter[str] = field(default_factory=Counter)

    @property
    def gone(self) -> int:
        return self.previous_addresses - self.unchanged

    def merge(self, other: Changes) -> None:
        self.new += other.new
        self.unchanged += other.unchanged
        self.transitions.update(other.transitions)

    def as_dict(self, at: str) -> dict[str, Any]:
        """``summary.json``'s ``since_last_run``; *at*: the previous run's time as written."""
        ranked = sorted(self.transitions.items(), key=lambda item: (-item[1], item[0]))
        return {
            "previous_run_at": at,
            "new": self.new,
            "gone": self.gone,
            "unchanged": self.unchanged,
            "transitions": dict(ranked),
        }
