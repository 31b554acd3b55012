"""The fit: isotonic regression within each VERDICT's band, levels with too few sends left at
the default, findings where the observed rate lies outside the band, and the calibration
error; the rule both fronts apply keeps every SCORE inside its VERDICT's band."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.core.calibration.apply import calibrated
from pipeline.core.calibration.fit import SENDS, ece, fit, pav
from pipeline.core.calibration.types import Calibration, LevelStatus
from pipeline.core.verdict import BANDS, Verdict


@pytest.mark.parametrize(
    ("values", "weights", "expected"),
    [
        ([0.1, 0.2, 0.3], [1, 1, 1], [0.1, 0.2, 0.3]),
        ([0.5, 0.4], [1, 1], [0.45, 0.45]),
        ([0.5, 0.4], [1, 3], [0.425, 0.425]),
        ([0.9, 0.1, 0.5], [1, 1, 1], [0.5, 0.5, 0.5]),
        ([0.2, 0.8, 0.6, 0.7], [1, 1, 1, 1], [0.2, 0.7, 0.7, 0.7]),
        ([], [], []),
    ],
)
def test_pav_gives_the_nearest_non_decreasing_sequence(
    values: list[float], weights: list[float], expected: list[float]
) -> None:
    assert pav(values, weights) == pytest.approx(expected)


def sends(*groups: tuple[float, str, str, int, int]) -> pl.DataFrame:
    """(SCORE, VERDICT, REASON, sends, hard bounces) per group, provider gmail.com."""
    rows = [
        (score, verdict, reason, "gmail.com", i < hard)
        for score, verdict, reason, n, hard in groups
        for i in range(n)
    ]
    return pl.DataFrame(rows, schema=dict(SENDS), orient="row")


def test_levels_with_enough_sends_take_their_observed_rate() -> None:
    report = fit(
        sends((0.9, "Valid", "", 400, 20), (0.97, "Valid", "mailbox_ok", 300, 3)), "l", False, 200
    )
    levels = {lv.score: lv for lv in report.calibration.levels}
    assert levels[0.9].calibrated == pytest.approx(0.95)
    assert levels[0.97].calibrated == pytest.approx(0.99)
    assert {lv.status for lv in levels.values()} == {LevelStatus.APPLIED}
    assert report.calibration.mapping() == {90: pytest.approx(0.95), 97: pytest.approx(0.99)}


def test_a_level_below_min_sends_keeps_the_default_and_says_so() -> None:
    report = fit(
        sends((0.9, "Valid", "", 400, 20), (0.81, "Valid", "role", 199, 100)), "l", False, 200
    )
    few = next(lv for lv in report.calibration.levels if lv.score == 0.81)
    assert few.status == LevelStatus.FEW_SENDS and few.calibrated == 0.81
    assert 81 not in report.calibration.mapping()


def test_levels_of_one_band_are_made_monotone() -> None:
    report = fit(
        sends((0.81, "Valid", "role", 400, 20), (0.9, "Valid", "", 400, 60)), "l", False, 200
    )
    values = [lv.calibrated for lv in report.calibration.levels]
    assert values == pytest.approx([0.9, 0.9])


def test_an_observed_rate_outside_the_band_is_a_finding_and_takes_the_edge() -> None:
    report = fit(
        sends((0.6, "Risky", "catch_all", 500, 50), (0.02, "Invalid", "no_such_user", 300, 0)),
        "l",
        False,
        200,
    )
    levels = {lv.score: lv for lv in report.calibration.levels}
    assert levels[0.6].status == LevelStatus.ABOVE_BAND
    assert levels[0.6].calibrated == BANDS[Verdict.RISKY][1]
    assert levels[0.02].status == LevelStatus.ABOVE_BAND
    assert levels[0.02].calibrated == BANDS[Verdict.INVALID][1]
    assert len(report.findings) == 2
    assert "catch" not in report.findings[0] and "0.60" in report.findings[1]


def test_the_report_counts_bins_reasons_and_providers() -> None:
    report = fit(
        sends((0.9, "Valid", "", 300, 30), (0.87, "Valid", "mailbox_ok;role", 200, 4)),
        "l",
        False,
        200,
    )
    by = {(g.kind, g.name): g for g in report.groups}
    assert by[("bin", "0.8-0.9")].sends == 200 and by[("bin", "0.9-1.0")].bounces == 30
    assert by[("reason", "none")].sends == 300
    assert by[("reason", "role")].sends == 200 and by[("reason", "mailbox_ok")].bounces == 4
    assert by[("provider", "gmail.com")].observed == pytest.approx(1 - 34 / 500)
    assert report.ece_after < report.ece_before


def test_ece_is_the_send_weighted_gap_per_bin() -> None:
    frame = sends((0.9, "Valid", "", 100, 20), (0.3, "Risky", "x", 100, 50))
    # bin 0.9: predicted 0.9, observed 0.8; bin 0.3: predicted 0.3, observed 0.5
    assert ece(pl.col("SCORE"), pl.col("HARD"), frame) == pytest.approx(0.15)
    assert ece(pl.col("SCORE"), pl.col("HARD"), frame.clear()) == 0.0


def test_the_rule_keeps_a_calibrated_score_inside_its_verdicts_band() -> None:
    made = fit(sends((0.9, "Valid", "", 400, 200)), "l", False, 200).calibration
    assert made.levels[0].status == LevelStatus.BELOW_BAND
    rows = pl.DataFrame({"VERDICT": ["Valid", "Valid", "Risky"], "SCORE": [0.9, 0.97, 0.5]})
    out = calibrated(rows, made)
    assert out.get_column("SCORE").to_list() == [0.7, 0.97, 0.5]
    assert out.get_column("SCORE_DEFAULT").to_list() == [0.9, 0.97, 0.5]
    assert calibrated(rows, None).equals(rows)


def test_a_calibration_round_trips_through_its_dict() -> None:
    made = fit(sends((0.9, "Valid", "", 400, 20)), "crm", True, 200).calibration
    assert Calibration.from_dict(made.as_dict()) == made
    assert made.named()["levels_applied"] == 1 and made.named()["list_name"] == "crm"
