"""The HTML report of real runs, opened in a real browser: headless Chromium from the system
packages, driven over the DevTools protocol (see :mod:`tests.integration.cdp` for how and why).

Two different runs: the sample list in the sandbox world, and a list built here from part of it
plus messy rows (display names, ``mailto:``, two addresses in a cell, rows with too many fields,
an unclosed quote, markup in the cells and in the file's name), cleaned ``--offline``. For each,
the page must render (headline cards and charts laid out with a size), log no console error,
ask for nothing but itself, and show exactly the figures, bars, table cells and facts of its
``summary.json``. A screenshot of each page is saved under ``build/report/`` and its path
printed (the picture in README.md and docs/lists.md comes from there).
"""

from __future__ import annotations

import asyncio
import csv
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.report import render_report
from pipeline.report.svg import TRACK
from tests.conftest import REPO, SAMPLE_CSV
from tests.integration.cdp import CHROMIUM, Visit, chromium, visit
from tests.report import expected
from tests.report.expected import numeric, shown

pytestmark = pytest.mark.integration

SHOTS = REPO / "build" / "report"
MESSY_NAME = 'messy <b>"list" & co.csv'
READ = """(() => {
  const all = (selector) => [...document.querySelectorAll(selector)];
  const size = (e) => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
  return {
    title: document.title,
    cards: all("section.cards > div").map(size),
    charts: all("svg.chart").map((e) => [e.dataset.chart, ...size(e)]),
    figures: all("[data-figure]").map((e) => [e.dataset.figure, e.dataset.value, e.textContent]),
    bars: all("svg [data-series]").map((e) => [e.dataset.chart, e.dataset.label,
      e.dataset.series, e.dataset.value, e.tagName === "rect" ? e.getBBox().width : null]),
    cells: all("table [data-series]").map((e) => [e.dataset.chart, e.dataset.label,
      e.dataset.series, e.dataset.value, e.textContent]),
    facts: all("[data-fact]").map((e) => [e.dataset.fact, e.dataset.value]),
    foreign: all("script, img, iframe, object, embed, link:not([rel=icon])").length,
  };
})()"""
MESSY_ROWS = [
    ["9001", "David", "Sánchez", "David Sánchez <david.sanchez@gmail.com>", "", "2024-01-02"],
    ["9002", "Mary", "Wilson", "mailto:mwilson@hotmail.com", "", "2024-01-02"],
    ["9003", "Ann", "Bell", "a@gmail.com; b@yahoo.com", "", "2024-01-02"],
    ["9004", "Lea", "Dubois", "lea.dubois @ gmail.com", "", "2024-01-02"],
    ["9005", "Rob", "Jackson", "rjackson@gmail,com", "", "2024-01-02"],
    ["9006", "Zoe", "Ward", "\u200bzoe.ward@gmail.com", "", "2024-01-02"],
    ["9007", "<script>alert(1)</script>", "X", "<img src=x onerror=alert(1)>@x.com", "", ""],
    ["9008", "Too", "Many", "too.many@gmail.com", "", "2024-01-02", "extra", "fields"],
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install chromium`.")
    with chromium(tmp_path_factory.mktemp("chromium") / "profile") as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sample")
    clean(folder, str(SAMPLE_CSV), "-o", "list.clean.parquet", "--sandbox")
    return folder / "list.clean.summary.json"


@pytest.fixture(scope="module")
def messy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("messy")
    write_messy_list(folder / MESSY_NAME)
    clean(folder, MESSY_NAME, "--offline")
    return folder / f"{Path(MESSY_NAME).stem}.clean.summary.json"


def clean(folder: Path, *args: str) -> None:
    command = [sys.executable, "-m", "pipeline", "clean", *args, "--quiet", "--cache-dir", "cache"]
    subprocess.run(command, cwd=folder, check=True, capture_output=True, timeout=300)


def write_messy_list(path: Path) -> None:
    """Sixty rows of the sample, a few of them again in capitals, the messy rows, and a record
    whose quote is never closed."""
    with SAMPLE_CSV.open(newline="", encoding="utf-8") as sample:
        header, *rows = list(csv.reader(sample))
    again = [[r[0], r[1], r[2], r[3].upper(), *r[4:]] for r in rows[:5]]
    with path.open("w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows([header, *rows[:60], *again, *MESSY_ROWS])
        out.write('9009,Una,Closed,"una.closed@gmail.com,,2024-01-02\n')


def report_of(summary_path: Path) -> tuple[dict[str, Any], Path]:
    """The summary and its report: the one the run wrote, or else one written from it here."""
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    page = summary_path.with_name(summary_path.name.replace(".summary.json", ".report.html"))
    if not page.exists():
        page.write_text(render_report(summary), encoding="utf-8")
    assert page.read_text(encoding="utf-8") == render_report(summary)
    return summary, page


def open_in_browser(
    browser: str, page: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> Visit:
    seen = asyncio.run(visit(browser, page.as_uri(), READ))
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / f"{name}.png").write_bytes(seen.screenshot)
    (SHOTS / f"{name}.html").write_bytes(page.read_bytes())
    with capsys.disabled():
        print(f"\nscreenshot of the {name} report: {SHOTS / f'{name}.png'}")
    return seen


def check(seen: Visit, summary: dict[str, Any], page: Path) -> None:
    """The page rendered, quietly, by itself, and shows the summary's numbers and facts."""
    reading = seen.reading
    assert seen.errors == []
    assert seen.requests == [page.as_uri()]
    assert reading["foreign"] == 0
    assert summary["input"] in reading["title"]
    assert len(reading["cards"]) >= 4 and all(w > 100 and h > 40 for w, h in reading["cards"])
    assert reading["charts"] and all(w > 300 and h > 20 for _, w, h in reading["charts"])
    figures = {key: (value, text) for key, value, text in reading["figures"]}
    assert numeric(figures) == expected.figures(summary)
    for key, (value, text) in figures.items():
        scale = 100 if key.endswith("_share") else 1
        assert shown(text) == pytest.approx(float(value) * scale, abs=0.05), key
    bars = {(c, label, s): value for c, label, s, value, _ in reading["bars"]}
    assert numeric(bars) == expected.bars(summary)
    cells = {(c, label, s): (value, text) for c, label, s, value, text in reading["cells"]}
    assert numeric(cells) == expected.cells(summary)
    assert all(shown(text) == pytest.approx(float(v), abs=5e-4) for v, text in cells.values())
    assert dict(reading["facts"]) == expected.facts(summary)
    check_bar_lengths(reading["bars"])


def check_bar_lengths(bars: list[list[Any]]) -> None:
    """Each bar is drawn as long as its value says: one scale per chart, the longest full."""
    lengths: dict[str, dict[str, float]] = {}
    for chart, label, _, value, width in bars:
        if width is not None:
            per_bar = lengths.setdefault(chart, {})
            per_bar[label] = per_bar.get(label, 0.0) + width
            if float(value) > 0:
                assert width > 0, (chart, label, value)
    totals = {(c, label): float(v) for c, label, s, v, w in bars if s == "total"}
    for chart, per_bar in lengths.items():
        longest = max(totals[(chart, label)] for label in per_bar)
        for label, length in per_bar.items():
            want = TRACK * totals[(chart, label)] / longest if longest else 0
            assert length == pytest.approx(want, abs=0.05), (chart, label)


def test_the_sample_runs_report_shows_its_summary(
    browser: str, sample_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, page = report_of(sample_run)
    check(open_in_browser(browser, page, "sample", capsys), summary, page)
    assert summary["verdicts"].keys() == {"Valid", "Risky", "Invalid"}


def test_a_messy_lists_report_shows_its_summary(
    browser: str, messy_run: Path, sample_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, page = report_of(messy_run)
    assert summary["rows_rejected"] == 2 and summary["input"] == MESSY_NAME
    assert summary["rows_in"] != json.loads(sample_run.read_text())["rows_in"]
    check(open_in_browser(browser, page, "messy", capsys), summary, page)


def test_every_section_of_the_report_renders(
    browser: str, sample_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sample run's summary with every key the page can show, the newer ones included."""
    summary = {**json.loads(sample_run.read_text()), **EXTENSION}
    page = tmp_path / "every.report.html"
    page.write_text(render_report(summary), encoding="utf-8")
    check(open_in_browser(browser, page, "every-section", capsys), summary, page)


def test_the_browser_check_sees_errors_and_requests(browser: str, tmp_path: Path) -> None:
    """The checks above can fail: a page that logs an error, throws, and loads from elsewhere."""
    page = tmp_path / "broken.html"
    page.write_text(
        '<!doctype html><img src="http://127.0.0.1:9/x.png">'
        '<script>console.error("bad figure"); null.x;</script>',
        encoding="utf-8",
    )
    seen = asyncio.run(visit(browser, page.as_uri(), "document.title"))
    assert any("bad figure" in e for e in seen.errors)
    assert any("TypeError" in e for e in seen.errors)
    assert "http://127.0.0.1:9/x.png" in seen.requests


EXTENSION: dict[str, Any] = {
    "safe_to_send": 240,
    "safe_to_send_share": 0.8791208791208791,
    "verdicts_unique": {"Valid": 240, "Risky": 12, "Invalid": 21},
    "top_domains": [
        {"domain": "gmail.com", "rows": 120, "Valid": 110, "Risky": 6, "Invalid": 4},
        {"domain": "yahoo.com", "rows": 40, "Valid": 38, "Risky": 0, "Invalid": 2},
        {"domain": "<b>x</b>.example", "rows": 9, "Valid": 0, "Risky": 9, "Invalid": 0},
    ],
    "typo_fixes": [{"domain": "gmial.com", "suggestion": "gmail.com", "rows": 3}],
    "repairs": {"display_name": 4, "mailto": 2, "comma_for_dot": 1},
    "rejects_by_reason": {"row has 8 fields but the header has 6": 2},
    "email_column": "Email Address",
    "email_column_why": "found by name",
    "encoding": "utf-8",
    "delimiter": ",",
    "files": {"output": "list.clean.parquet", "summary": "list.clean.summary.json"},
    "run": {
        "started_at": "2025-06-01T02:00:00+00:00",
        "finished_at": "2025-06-01T02:00:04+00:00",
        "version": "0.4.0",
        "input_sha256": "9f" * 32,
    },
}
