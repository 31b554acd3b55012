"""The fit: cells of SCORE (a level, its REASONs, their providers) fitted monotone within each
VERDICT's band, levels with too few sends left at the default where the order allows, findings
where the observed rate lies outside the band or the order holds a cell from it, and the
calibration error; the rule both fronts apply keeps every SCORE inside its VERDICT's band."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.core.calibration.apply import calibrated
from pipeline.core.calibration.fit import SENDS, ece, fit
from pipeline.core.calibration.types import Calibration, Level, LevelStatus
from pipeline.core.verdict import BANDS, Verdict


def sends(*groups: tuple[float, str, str, int, int], provider: str = "gmail.com") -> pl.DataFrame:
    """(SCORE, VERDICT, REASON, sends, hard bounces) per group, at *provider*."""
    rows = [
        (score, verdict, reason, provider, i < hard)
        for score, verdict, reason, n, hard in groups
        for i in range(n)
    ]
    return pl.DataFrame(rows, schema=dict(SENDS), orient="row")


def scores(calibration: Calibration, *rows: tuple[float, str, str, str]) -> list[float]:
    """The calibrated SCORE of rows (SCORE, VERDICT, REASON, DOMAIN) as a run decides them."""
    frame = pl.DataFrame(rows, schema=["SCORE", "VERDICT", "REASON", "DOMAIN"], orient="row")
    return calibrated(frame, calibration).get_column("SCORE").to_list()


def by_level(report_levels: tuple[Level, ...]) -> dict[float, Level]:
    """The cells that hold a whole level (no REASON named)."""
    return {lv.score: lv for lv in report_levels if lv.reason is None}


def test_levels_with_enough_sends_take_their_observed_rate() -> None:
    report = fit(
        sends((0.9, "Valid", "", 400, 20), (0.97, "Valid", "mailbox_ok", 300, 3)), "l", False, 200
    )
    levels = by_level(report.calibration.levels)
    assert levels[0.9].calibrated == pytest.approx(0.95)
    assert levels[0.97].calibrated == pytest.approx(0.99)
    assert {lv.status for lv in report.calibration.levels} == {LevelStatus.APPLIED}
    made = report.calibration
    assert scores(
        made, (0.9, "Valid", "", "a.example"), (0.97, "Valid", "mailbox_ok", "b.example")
    ) == [0.95, 0.99]


def test_a_level_below_min_sends_keeps_the_default_and_says_so() -> None:
    report = fit(
        sends((0.9, "Valid", "", 400, 20), (0.81, "Valid", "role", 199, 100)), "l", False, 200
    )
    few = by_level(report.calibration.levels)[0.81]
    assert few.status == LevelStatus.FEW_SENDS and few.calibrated == 0.81
    assert scores(report.calibration, (0.81, "Valid", "role", "a.example")) == [0.81]


def test_a_default_kept_for_few_sends_still_keeps_the_order() -> None:
    # 0.87 delivers 0.75: the level of 0.81 below it, with too few sends, may not stay above.
    report = fit(
        sends((0.87, "Valid", "", 400, 100), (0.81, "Valid", "role", 50, 0)), "l", False, 200
    )
    levels = by_level(report.calibration.levels)
    assert levels[0.87].calibrated == pytest.approx(0.75)
    assert levels[0.81].status == LevelStatus.FEW_SENDS and levels[0.81].calibrated == 0.75
    # A SCORE no send had is kept between its neighbours too: 0.84 lies between them.
    made = report.calibration.by_level
    assert made[84] == 0.75 and made[95] == 0.95 and made[75] == 0.75 and made[70] == 0.7
    assert 50 not in made  # Risky: no cell, the rules' SCORE


def test_reasons_that_share_a_score_are_told_apart() -> None:
    report = fit(
        sends((0.5, "Risky", "greylisted", 600, 210), (0.5, "Risky", "smtp_timeout", 600, 270)),
        "l",
        False,
        200,
    )
    rows = [(0.5, "Risky", "greylisted", "gmail.com"), (0.5, "Risky", "smtp_timeout", "x.org")]
    # Observed 0.65 and 0.55, each pulled a little toward the level's 0.60.
    assert scores(report.calibration, *rows) == [0.64, 0.56]
    # A REASON the calibration never saw at that SCORE takes the level's.
    assert scores(report.calibration, (0.5, "Risky", "new_reason", "x.org")) == [0.6]
    assert report.findings == ()


def test_a_provider_that_takes_less_mail_is_told_apart() -> None:
    both = pl.concat(
        [
            sends((0.9, "Valid", "", 1000, 30), provider="gmail.com"),
            sends((0.9, "Valid", "", 1000, 200), provider="yahoo.com"),
        ]
    )
    names = {"gmail.com": "gmail.com", "googlemail.com": "gmail.com", "yahoo.com": "yahoo.com"}
    made = fit(both, "l", False, 200, names).calibration
    assert dict(made.providers) == names
    rows = [(0.9, "Valid", "", d) for d in ("googlemail.com", "yahoo.com", "corp.example")]
    # 0.97 and 0.80, pulled a sixth toward the REASON's 0.885; any other domain: the 0.885.
    assert scores(made, *rows) == pytest.approx([0.96, 0.81, 0.885], abs=0.0051)


def test_a_small_cell_is_pulled_toward_its_parent() -> None:
    both = pl.concat(
        [
            sends((0.9, "Valid", "", 2000, 100), provider="gmail.com"),
            sends((0.9, "Valid", "", 200, 100), provider="yahoo.com"),
        ]
    )
    report = fit(both, "l", False, 200, {"yahoo.com": "yahoo.com"})
    made = report.calibration
    cell = next(lv for lv in made.levels if lv.provider == "yahoo.com")
    kind = next(lv for lv in made.levels if lv.reason is None)
    # Its own 0.50 on 200 sends, and 200 sends at its REASON's rate (here its level's, 0.909).
    assert cell.observed == pytest.approx(0.5)
    assert cell.fitted == pytest.approx((100 + 200 * kind.fitted) / 400)
    # Its observed 0.50 lies below Valid's band, a finding; the pull itself is none (nothing
    # holds the cell away from the rate it was fitted to).
    assert len(report.findings) == 1 and "outside the band" in report.findings[0]


def test_levels_of_one_band_are_made_monotone() -> None:
    report = fit(
        sends((0.81, "Valid", "role", 400, 20), (0.9, "Valid", "", 400, 60)), "l", False, 200
    )
    values = [lv.calibrated for lv in report.calibration.levels]
    assert values == pytest.approx([0.9] * 2)
    # 0.81 delivers 0.95, more than 0.90's 0.85: the order holds both, and the report says so.
    assert len(report.findings) == 2 and all("rank this kind" in f for f in report.findings)


def test_an_observed_rate_outside_the_band_is_a_finding_and_takes_the_edge() -> None:
    report = fit(
        sends((0.6, "Risky", "catch_all", 500, 50), (0.02, "Invalid", "no_such_user", 300, 0)),
        "l",
        False,
        200,
    )
    levels = by_level(report.calibration.levels)
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
    assert {lv.status for lv in made.levels} == {LevelStatus.BELOW_BAND}
    rows = pl.DataFrame({"VERDICT": ["Valid", "Valid", "Risky"], "SCORE": [0.9, 0.97, 0.5]})
    out = calibrated(rows, made)
    assert out.get_column("SCORE").to_list() == [0.7, 0.97, 0.5]
    assert out.get_column("SCORE_DEFAULT").to_list() == [0.9, 0.97, 0.5]
    assert calibrated(rows, None).equals(rows)


def test_a_calibration_round_trips_through_its_dict() -> None:
    made = fit(
        sends((0.9, "Valid", "", 400, 20)), "crm", True, 200, {"gmail.com": "gmail.com"}
    ).calibration
    assert Calibration.from_dict(made.as_dict()) == made
    assert made.named()["levels_applied"] == 1 and made.named()["list_name"] == "crm"
    assert made.named()["levels"][0]["name"] == "0.90"


def test_a_calibration_kept_before_cells_were_named_still_applies() -> None:
    record = fit(sends((0.9, "Valid", "", 400, 20)), "crm", False, 200).calibration.as_dict()
    record.pop("providers")
    record["levels"] = [
        {k: v for k, v in lv.items() if k not in ("reason", "provider")}
        for lv in record["levels"]
        if lv["reason"] is None
    ]
    kept = Calibration.from_dict(record)
    assert scores(kept, (0.9, "Valid", "", "gmail.com")) == [0.95]


def test_an_order_the_sends_do_not_keep_is_a_finding() -> None:
    # The rules score greylisted (0.50) under implicit_mx (0.55); these sends say otherwise.
    report = fit(
        sends((0.5, "Risky", "greylisted", 1000, 320), (0.55, "Risky", "implicit_mx", 1000, 420)),
        "l",
        False,
        200,
    )
    values = {lv.name: lv.calibrated for lv in report.calibration.levels}
    assert values["0.50"] <= values["0.55"]
    assert values["0.50"] == pytest.approx(0.63, abs=0.006)
    assert any(f.startswith("SCORE 0.50 (Risky") and "rank this kind" in f for f in report.findings)


def test_the_pull_toward_a_parent_is_no_finding() -> None:
    # yahoo.com's 250 sends deliver 0.80, inside Valid's band, and are pulled toward the
    # level's 0.93: the cell's value moves, but no order holds it, so nothing is found.
    both = pl.concat(
        [
            sends((0.9, "Valid", "", 2000, 100), provider="gmail.com"),
            sends((0.9, "Valid", "", 250, 50), provider="yahoo.com"),
        ]
    )
    report = fit(both, "l", False, 200, {"yahoo.com": "yahoo.com"})
    cell = next(lv for lv in report.calibration.levels if lv.provider == "yahoo.com")
    assert cell.observed == pytest.approx(0.8) and cell.fitted > 0.85
    assert report.findings == ()
