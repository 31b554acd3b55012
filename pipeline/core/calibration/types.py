"""The calibration's value types: a cell of SCORE (a level, or a REASON or a provider at a
level) with its evidence and its calibrated value, a calibration (a list's cells), and a group
of the report (a bin, a REASON, a provider)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Final

from pipeline.core.verdict import BANDS

BINS: Final = 10  # equal-width SCORE bins of the calibration error (ECE)
OTHER: Final = "other"  # the provider of every domain that is not a major mailbox provider's


class LevelStatus(StrEnum):
    APPLIED = "applied"  # enough sends: the fitted rate is the level's SCORE
    FEW_SENDS = "few_sends"  # fewer than calibration.min_sends: the default, where order allows
    ABOVE_BAND = "above_band"  # observed above its VERDICT's band: the band's top edge
    BELOW_BAND = "below_band"  # observed below its VERDICT's band: the band's bottom edge


@dataclass(frozen=True)
class Level:
    """One calibration cell: the sends whose SCORE (as the rules gave it) was *score* and, when
    named, whose REASON was *reason* and whose provider *provider*. A send belongs to the
    finest cell that has enough sends: its level, REASON and provider; else its level and
    REASON; else its level (the sends no finer cell took)."""

    score: float  # the default SCORE, in hundredths
    verdict: str  # the VERDICT whose band holds *score* (bands do not overlap)
    sends: int
    bounces: int  # hard bounces among the sends
    observed: float  # deliveries / sends
    fitted: float  # the monotone fit within the band (pipeline.core.calibration.order)
    calibrated: float  # the SCORE later runs give: the fit, rounded
    status: LevelStatus
    reason: str | None = None  # the whole REASON ("" for none); None: any
    provider: str | None = None  # the provider's name (or "other"); None: any

    @property
    def applied(self) -> bool:
        return self.status != LevelStatus.FEW_SENDS

    @property
    def name(self) -> str:
        """The cell as the table names it: "0.50", "0.50 greylisted", "0.90 none at gmail.com"."""
        parts = [f"{self.score:.2f}"]
        if self.reason is not None:
            parts.append(self.reason or "none")
        if self.provider is not None:
            parts.append(f"at {self.provider}")
        return " ".join(parts)

    def key(self) -> str:
        """What :mod:`.apply` looks a row up by: "level|REASON" or "level|REASON|provider"."""
        level = round(self.score * 100)
        if self.provider is None:
            return f"{level}|{self.reason}"
        return f"{level}|{self.reason}|{self.provider}"


@dataclass(frozen=True)
class Calibration:
    """A list's calibration, as :mod:`.store` keeps it and runs apply it."""

    calibration_id: str
    list_name: str
    sandbox: bool
    created_at: float  # Unix time
    min_sends: int
    sends: int
    levels: tuple[Level, ...]
    # The domains of the providers some cell names -> the provider's name.
    providers: Mapping[str, str] = field(default_factory=dict)

    # Both lookups are made once a calibration (a run's decides every batch with them).

    @functools.cached_property
    def cells(self) -> dict[str, float]:
        """The cells finer than a level ("level|REASON[|provider]") -> calibrated SCORE."""
        return {lv.key(): lv.calibrated for lv in self.levels if lv.reason is not None}

    @functools.cached_property
    def by_level(self) -> dict[int, float]:
        """Every SCORE (hundredths) of a band the calibration has cells in -> the SCORE it
        calibrates to when no finer cell holds the row: its level's cell; else the default,
        kept between the cells of the levels below and above it (a higher SCORE never
        calibrates lower)."""
        whole = {round(lv.score * 100): lv.calibrated for lv in self.levels if lv.reason is None}
        mapped: dict[int, float] = {}
        for low, high in _bands():
            inside = [lv for lv in self.levels if low <= round(lv.score * 100) <= high]
            if not inside:
                continue
            for h in range(low, high + 1):
                if h in whole:
                    mapped[h] = whole[h]
                    continue
                under = [lv.calibrated for lv in inside if round(lv.score * 100) < h]
                over = [lv.calibrated for lv in inside if round(lv.score * 100) > h]
                floor = max(under, default=low / 100)
                mapped[h] = min(max(h / 100, floor), min(over, default=high / 100))
        return mapped

    def as_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["levels"] = [asdict(lv) for lv in self.levels]
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Calibration:
        levels = tuple(
            Level(**{**lv, "status": LevelStatus(lv["status"])}) for lv in record["levels"]
        )
        return cls(**{**record, "levels": levels, "providers": record.get("providers", {})})

    def named(self) -> dict[str, Any]:
        """How ``summary.json``'s ``run`` names the calibration a run used."""
        return {
            "id": self.calibration_id,
            "list_name": self.list_name,
            "created_at": self.created_at,
            "levels_applied": sum(lv.applied for lv in self.levels),
            # What the report draws: predicted (the rules' SCORE) against observed.
            "levels": [
                {
                    "name": lv.name,
                    "score": lv.score,
                    "sends": lv.sends,
                    "observed": lv.observed,
                    "calibrated": lv.calibrated,
                    "status": lv.status.value,
                    "reason": lv.reason,
                    "provider": lv.provider,
                }
                for lv in self.levels
            ],
        }


def _bands() -> list[tuple[int, int]]:
    """The VERDICTs' bands in hundredths."""
    return [(round(low * 100), round(high * 100)) for low, high in BANDS.values()]


@dataclass(frozen=True)
class Group:
    """One row of the report: the sends of a bin, a REASON or a provider."""

    kind: str  # "bin" | "reason" | "provider"
    name: str
    sends: int
    bounces: int
    observed: float  # deliveries / sends
    predicted: float  # mean SCORE the runs gave
    calibrated: float  # mean SCORE the calibration gives


@dataclass(frozen=True)
class Report:
    """What ``calibrate`` prints: the groups, the calibration error before and after (over
    :data:`BINS` bins), the findings, and the calibration it stored."""

    calibration: Calibration
    groups: tuple[Group, ...]
    ece_before: float
    ece_after: float
    findings: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {
            "calibration": self.calibration.as_dict(),
            "groups": [asdict(g) for g in self.groups],
            "ece_before": self.ece_before,
            "ece_after": self.ece_after,
            "findings": list(self.findings),
        }
