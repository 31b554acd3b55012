"""The calibration's value types: a level of SCORE with its evidence and its calibrated value,
a calibration (a list's levels), and a group of the report (a bin, a REASON, a provider)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Final

BINS: Final = 10  # equal-width SCORE bins of the calibration error (ECE)


class LevelStatus(StrEnum):
    APPLIED = "applied"  # enough sends: the fitted rate is the level's SCORE
    FEW_SENDS = "few_sends"  # fewer than calibration.min_sends: the default SCORE is kept
    ABOVE_BAND = "above_band"  # observed above its VERDICT's band: the band's top edge
    BELOW_BAND = "below_band"  # observed below its VERDICT's band: the band's bottom edge


@dataclass(frozen=True)
class Level:
    """One calibration level: every send whose SCORE (as the rules gave it) was *score*."""

    score: float  # the default SCORE, in hundredths
    verdict: str  # the VERDICT whose band holds *score* (bands do not overlap)
    sends: int
    bounces: int  # hard bounces among the sends
    observed: float  # deliveries / sends
    fitted: float  # the isotonic fit within the band, before the band's edges
    calibrated: float  # the SCORE later runs give: fitted inside the band, or the default
    status: LevelStatus

    @property
    def applied(self) -> bool:
        return self.status != LevelStatus.FEW_SENDS


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

    def mapping(self) -> dict[int, float]:
        """SCORE in hundredths -> calibrated SCORE, for the levels applied."""
        return {round(lv.score * 100): lv.calibrated for lv in self.levels if lv.applied}

    def as_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["levels"] = [asdict(lv) for lv in self.levels]
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Calibration:
        levels = tuple(
            Level(**{**lv, "status": LevelStatus(lv["status"])}) for lv in record["levels"]
        )
        return cls(**{**record, "levels": levels})

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
                    "score": lv.score,
                    "sends": lv.sends,
                    "observed": lv.observed,
                    "calibrated": lv.calibrated,
                    "status": lv.status.value,
                }
                for lv in self.levels
            ],
        }


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
