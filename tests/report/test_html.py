"""The report page: every number it shows equals the summary's, every value is escaped, and a
summary without some keys (older or newer than the page) still gives a page."""

from __future__ import annotations

import copy
import html
from typing import Any

import pytest

from pipeline.report import render_report
from pipeline.report.svg import BAR, TRACK
from tests.report import expected
from tests.report.expected import Markers, numeric, shown

# A sample run's summary (sample_data/list.csv in the sandbox), with every key the page reads.
FULL: dict[str, Any] = {
    "input": "sample_data/list.csv",
    "list_name": "list",
    "since_last_run": {
        "previous_run_at": "2025-05-31T02:00:00Z",
        "new": 310,
        "gone": 122,
        "unchanged": 19_524,
        "transitions": {"Valid->Invalid": 41, "Risky->Valid": 7},
    },
    "output": "build/demo/list.clean.parquet",
    "rejects_file": "build/demo/list.clean.rejects.csv",
    "rows_in": 23_744,
    "rows_out": 23_741,
    "rows_rejected": 3,
    "distinct_addresses": 19_834,
    "duplicates": 3_910,
    "distinct_domains": 1_204,
    "dns_queries": 2_411,
    "cache_hits": 17,
    "rcpts_sent": 0,
    "smtp_sessions": 0,
    "api_requests": 0,
    "answers_due": 1_204,
    "answers_refreshed": 500,
    "runs_to_refresh_all": 3,
    "safe_to_send": 17_020,
    "safe_to_send_share": 0.8581224160532419,
    "verdicts": {"Valid": 20_210, "Invalid": 2_100, "Risky": 1_431},
    "verdicts_unique": {"Valid": 17_020, "Risky": 1_100, "Invalid": 1_714},
    "reasons": {"syntax_invalid": 1_979, "role": 310, "disposable": 88, "typo_suspected": 61},
    "top_domains": [
        {"domain": "gmail.com", "rows": 9_001, "Valid": 8_800, "Risky": 101, "Invalid": 100},
        {"domain": "yahoo.com", "rows": 2_000, "Valid": 1_990, "Risky": 0, "Invalid": 10},
    ],
    "typo_fixes": [{"domain": "gmial.com", "suggestion": "gmail.com", "rows": 41}],
    "repairs": {"display_name": 12, "mailto": 4, "two_addresses": 2},
    "rejects_by_reason": {"row has 7 fields but the header has 6": 2, "unclosed quote": 1},
    "email_column": "Email Address",
    "email_column_why": "found by name",
    "encoding": "utf-8",
    "delimiter": "\t",
    "files": {"output": "build/demo/list.clean.parquet", "report": "build/demo/x.report.html"},
    "run": {
        "started_at": "2025-06-01T02:00:00+00:00",
        "finished_at": "2025-06-01T02:03:07+00:00",
        "version": "0.4.0",
        "input_sha256": "9f" * 32,
    },
    "stages": [
        {"name": "read", "rows_in": 0, "rows_out": 23_744, "seconds": 0.006, "details": {}},
        {"name": "domains", "rows_in": 23_741, "rows_out": 23_741, "seconds": 1.25, "details": {}},
        {"name": "write", "rows_in": 23_741, "rows_out": 23_741, "seconds": 0, "details": {}},
    ],
    "warnings": ["The file is not valid UTF-8 (byte 0xe9 at 1,204): read as cp1252."],
}
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;\'"'


def markers_of(summary: dict[str, Any]) -> Markers:
    return Markers(render_report(summary))


def test_every_number_on_the_page_is_the_summarys() -> None:
    page = markers_of(FULL)
    assert numeric(page.figures) == expected.figures(FULL)
    assert numeric(page.bars) == expected.bars(FULL)
    assert numeric(page.cells) == expected.cells(FULL)
    assert {k: v for k, (v, _) in page.facts.items()} == expected.facts(FULL)


def test_the_numbers_people_read_are_the_machine_readable_ones() -> None:
    page = markers_of(FULL)
    for key, (value, text) in page.figures.items():
        scale = 100 if key.endswith("_share") else 1
        assert shown(text) == pytest.approx(float(value) * scale, abs=0.05), key
    for key, (value, text) in page.cells.items():
        assert shown(text) == pytest.approx(float(value), abs=0.0005), key


def test_figures_are_written_for_people() -> None:
    page = markers_of(FULL)
    assert page.figures["rows_in"] == ("23744", "23,744")
    assert page.figures["safe_to_send_share"] == ("0.8581224160532419", "85.8%")
    assert page.cells[("top_domains", "gmail.com", "total")] == ("9001", "9,001")


def test_stage_seconds_and_the_tab_delimiter_are_written_for_people() -> None:
    page = markers_of(FULL)
    assert page.cells[("stages", "domains", "seconds")] == ("1.25", "1.250 s")
    assert page.facts["delimiter"] == ("\t", "tab")


def test_the_business_figures_lead_and_the_counters_follow() -> None:
    page = render_report(FULL)
    order = ["rows_in", "distinct_addresses", "safe_to_send", "duplicates", "rows_rejected"]
    positions = [page.index(f'data-figure="{key}"') for key in [*order, "dns_queries"]]
    assert positions == sorted(positions)
    assert page.index('data-chart="verdicts"') < page.index('data-chart="reasons"')


def test_verdicts_come_in_their_order_and_reasons_largest_first() -> None:
    page = render_report(FULL)
    verdicts = [page.index(f'data-label="rows" data-series="{v}"') for v in expected.VERDICTS]
    assert verdicts == sorted(verdicts)
    reasons = [page.index(f'data-label="{r}"') for r in FULL["reasons"]]
    assert reasons == sorted(reasons)


@pytest.mark.parametrize("key", list(FULL))
def test_a_missing_key_leaves_its_part_out(key: str) -> None:
    summary = {k: v for k, v in FULL.items() if k != key}
    page = markers_of(summary)
    assert numeric(page.figures) == expected.figures(summary)
    assert numeric(page.bars) == expected.bars(summary)
    assert {k: v for k, (v, _) in page.facts.items()} == expected.facts(summary)


@pytest.mark.parametrize("key", list(FULL))
@pytest.mark.parametrize("wrong", [None, "7", True, -1.5, [1, "x"], {"a": "b"}, [{"x": None}]])
def test_a_key_of_the_wrong_shape_reads_as_missing(key: str, wrong: object) -> None:
    page = markers_of({**FULL, key: wrong})
    missing = {k: v for k, v in FULL.items() if k != key}
    assert numeric(page.bars) == expected.bars(missing)
    assert numeric(page.figures) == expected.figures(missing)


def test_an_empty_summary_gives_a_page_with_nothing_on_it() -> None:
    page = render_report({})
    markers = Markers(page)
    assert page.startswith("<!doctype html>") and "</html>" in page
    assert not (markers.figures or markers.bars or markers.cells or markers.facts)


def test_todays_summary_keys_give_a_page_without_the_newer_parts() -> None:
    today = {k: v for k, v in FULL.items() if k in TODAY}
    page = render_report(today)
    for part in ("safe_to_send", "top_domains", "typo_fixes", "repairs", "rejects_by_reason"):
        assert f'"{part}"' not in page
    assert numeric(Markers(page).bars) == expected.bars(today)


TODAY = (
    *("input", "output", "rejects_file", "rows_in", "rows_out", "rows_rejected"),
    *("distinct_addresses", "duplicates", "distinct_domains", "dns_queries", "cache_hits"),
    *("rcpts_sent", "smtp_sessions", "api_requests", "verdicts", "reasons", "stages", "warnings"),
)


def hostile_summary() -> dict[str, Any]:
    summary = copy.deepcopy(FULL)
    summary["input"] = f"lists/{HOSTILE}.csv"
    summary["reasons"][HOSTILE] = 5
    summary["top_domains"][0]["domain"] = HOSTILE
    summary["typo_fixes"][0]["suggestion"] = HOSTILE
    summary["email_column"] = summary["email_column_why"] = HOSTILE
    summary["files"][HOSTILE] = HOSTILE
    summary["warnings"].append(HOSTILE)
    summary["stages"][0]["name"] = HOSTILE
    summary["verdicts"][HOSTILE] = 1
    return summary


def test_user_data_is_escaped_everywhere() -> None:
    summary = hostile_summary()
    page = render_report(summary)
    markers = Markers(page)
    assert "script" not in markers.tags and "img" not in markers.tags
    assert "<script" not in page and "<img" not in page
    assert numeric(markers.figures) == expected.figures(summary)
    assert {k: v for k, (v, _) in markers.facts.items()} == expected.facts(summary)
    assert ("top_domains", HOSTILE, "Valid") in markers.bars
    assert ("reasons", HOSTILE, "rows") in markers.cells


def test_the_page_needs_nothing_from_the_network() -> None:
    page = render_report(FULL)
    tags = set(Markers(page).tags)
    assert not tags & {"script", "iframe", "object", "embed", "img", "audio", "video"}
    assert "http://" not in page and "https://" not in page
    assert "default-src 'none'" in html.unescape(page)
    assert "url(" not in page and "@import" not in page


def test_the_longest_bar_fills_the_track_and_an_all_zero_chart_draws() -> None:
    page = render_report({**FULL, "repairs": {"mailto": 0, "display_name": 0}})
    longest = f'width="{TRACK:.2f}" height="{BAR}" data-chart="reasons" data-label="syntax_invalid"'
    assert longest in page
    assert 'data-chart="repairs" data-label="mailto"' in page


def test_a_sandbox_run_says_so_first() -> None:
    page = render_report({**FULL, "sandbox": True})
    banner = page.index('class="sandbox"')
    assert "made-up world" in page and banner < page.index("<section")
    for not_sandbox in (FULL, {**FULL, "sandbox": False}, {**FULL, "sandbox": "yes"}):
        assert 'class="sandbox"' not in render_report(not_sandbox)
