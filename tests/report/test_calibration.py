"""The report's calibration section: drawn from the calibration the run used, every value on it
equal to the summary's, and left out of a run without one."""

from __future__ import annotations

import re
from typing import Any

from pipeline.report import render_report
from pipeline.report.calibration import section

LEVELS = [
    {"score": 0.6, "sends": 500, "observed": 0.9, "calibrated": 0.69, "status": "above_band"},
    {"score": 0.81, "sends": 12, "observed": 0.5, "calibrated": 0.81, "status": "few_sends"},
    {"score": 0.9, "sends": 4000, "observed": 0.95, "calibrated": 0.95, "status": "applied"},
]


def summary(calibration: dict[str, Any] | None) -> dict[str, Any]:
    return {"input": "list.csv", "rows_in": 3, "run": {"calibration": calibration}}


def test_the_section_draws_each_level_and_tables_its_values() -> None:
    used = {"id": "abc", "list_name": "crm", "levels_applied": 2, "levels": LEVELS}
    page = render_report(summary(used))
    assert "Predicted against observed" in page
    dots = re.findall(
        r'<circle data-chart="calibration" data-label="([\d.]+)" data-value="([\d.]+)"', page
    )
    assert dots == [("0.60", "0.9"), ("0.81", "0.5"), ("0.90", "0.95")]
    cells = re.findall(
        r'<td class="n" data-chart="calibration" data-label="([\d.]+)" '
        r'data-series="(\w+)" data-value="([\d.]+)"',
        page,
    )
    by = {(label, series): float(value) for label, series, value in cells}
    for lv in LEVELS:
        label = f"{lv['score']:.2f}"
        assert by[(label, "sends")] == lv["sends"]
        assert by[(label, "predicted")] == lv["score"]
        assert by[(label, "observed")] == lv["observed"]
        assert by[(label, "calibrated")] == lv["calibrated"]
    assert 'fill="none"' in page  # the level with too few sends: a hollow dot


def test_no_calibration_no_section() -> None:
    assert section(summary(None)) == ""
    assert section({"run": "odd"}) == ""
    assert "Predicted against observed" not in render_report(summary(None))
