"""What a report must show for a summary, worked out here from ``summary.json`` alone (not with
the report's own code), and the markers a page carries, read back with the standard library's
HTML parser. The browser test reads the same markers from the rendered page.

A marker key is ``(chart, label, series)`` for a bar or table cell, the summary key for a figure
(``rows_in``) and the dotted path for a fact (``run.version``).
"""

from __future__ import annotations

from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any

VERDICTS = ("Valid", "Risky", "Invalid")
STACKED = ("verdicts", "top_domains", "member_rows")  # charts whose tables have a total column
FIGURES = (
    "rows_in",
    "distinct_addresses",
    "safe_to_send",
    "safe_to_send_share",
    "held_back",
    "duplicates",
    "rows_rejected",
    "rows_out",
    "distinct_domains",
    "dns_queries",
    "cache_hits",
    "smtp_sessions",
    "rcpts_sent",
    "api_requests",
    "answers_due",
    "answers_refreshed",
    "runs_to_refresh_all",
)
SIMPLE = ("reasons", "repairs", "rejects_by_reason")
SINCE = ("new", "gone", "unchanged")  # since_last_run's counts, shown as figures
BarKey = tuple[str, str, str]


def figures(summary: Mapping[str, Any]) -> dict[str, float]:
    found = {k: summary[k] for k in FIGURES if k in summary}
    since = summary.get("since_last_run") or {}
    found.update({f"since_last_run.{k}": since[k] for k in SINCE if k in since})
    if "safe_to_send" not in found:
        found.pop("safe_to_send_share", None)  # the share is shown beside the count
    return found


def bars(summary: Mapping[str, Any]) -> dict[BarKey, float]:
    """Every bar part of every chart, and each bar's total (``series="total"``)."""
    found: dict[BarKey, float] = {}
    for bar, name in (("rows", "verdicts"), ("unique", "verdicts_unique")):
        if summary.get(name):
            _stack(found, "verdicts", bar, summary[name], sum(summary[name].values()))
    for chart in SIMPLE:
        for label, rows in summary.get(chart, {}).items():
            _single(found, chart, label, "rows", rows)
    for member, item in summary.get("member_rows", {}).items():
        parts = {"not held back": item["rows"] - item["held_back"], "held back": item["held_back"]}
        _stack(found, "member_rows", member, parts, item["rows"], tuple(parts))
    for item in summary.get("top_domains", []):
        _stack(found, "top_domains", item["domain"], item, item["rows"])
    for item in summary.get("typo_fixes", []):
        label = f"{item['domain']} → {item['suggestion']}"
        _single(found, "typo_fixes", label, "rows", item["rows"])
    for stage in summary.get("stages", []):
        _single(found, "stages", stage["name"], "seconds", stage["seconds"])
    for pair, n in (summary.get("since_last_run") or {}).get("transitions", {}).items():
        _single(found, "transitions", pair, "addresses", n)
    return found


def cells(summary: Mapping[str, Any]) -> dict[BarKey, float]:
    """The tables' cells: the bars, with a total column only for stacked charts."""
    return {k: v for k, v in bars(summary).items() if k[2] != "total" or k[0] in STACKED}


def facts(summary: Mapping[str, Any]) -> dict[str, str]:
    found = {k: summary[k] for k in ("input", "encoding") if k in summary}
    if summary.get("list_name"):
        found["list_name"] = summary["list_name"]
    if (summary.get("since_last_run") or {}).get("previous_run_at"):
        found["since_last_run.previous_run_at"] = summary["since_last_run"]["previous_run_at"]
    if not summary.get("files"):  # the files written are listed instead, when the summary has them
        found.update({k: summary[k] for k in ("output", "rejects_file") if k in summary})
    if "delimiter" in summary:
        found["delimiter"] = summary["delimiter"]
    if "email_column" in summary:
        found["email_column"] = summary["email_column"]
    for kind, path in summary.get("files", {}).items():
        found[f"files.{kind}"] = path
    for key, value in summary.get("run", {}).items():
        if key in ("version", "started_at", "finished_at", "input_sha256"):
            found[f"run.{key}"] = value
    return found


def _stack(
    found: dict[BarKey, float],
    chart: str,
    bar: str,
    parts: Any,
    total: float,
    series: tuple[str, ...] = VERDICTS,
) -> None:
    for verdict in series:
        found[(chart, bar, verdict)] = parts.get(verdict, 0)
    found[(chart, bar, "total")] = total


def _single(found: dict[BarKey, float], chart: str, label: str, series: str, value: float) -> None:
    found[(chart, label, series)] = value
    found[(chart, label, "total")] = value


class Markers(HTMLParser):
    """The markers of a page: figures, bars (in SVG), table cells and facts, with their text."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.figures: dict[str, tuple[str, str]] = {}
        self.bars: dict[BarKey, str] = {}
        self.cells: dict[BarKey, tuple[str, str]] = {}
        self.facts: dict[str, tuple[str, str]] = {}
        self.tags: list[str] = []
        self._open: list[tuple[str, dict[str, str], list[str]]] = []  # marked, not yet closed
        self._svg = 0
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = {k: v or "" for k, v in attrs}
        self._svg += tag == "svg"
        if tag in ("rect", "text") and self._svg and "data-series" in values:
            key = (values["data-chart"], values["data-label"], values["data-series"])
            assert key not in self.bars, f"two bars for {key}"
            self.bars[key] = values["data-value"]
        if {"data-figure", "data-fact"} & values.keys() or (
            tag == "td" and "data-series" in values
        ):
            self._open.append((tag, values, []))

    def handle_endtag(self, tag: str) -> None:
        self._svg -= tag == "svg"
        if self._open and self._open[-1][0] == tag:
            _, values, text = self._open.pop()
            self._record(values, "".join(text))

    def handle_data(self, data: str) -> None:
        for _, _, text in self._open:
            text.append(data)

    def _record(self, values: dict[str, str], text: str) -> None:
        value = values["data-value"]
        if "data-figure" in values:
            assert values["data-figure"] not in self.figures, values
            self.figures[values["data-figure"]] = (value, text)
        elif "data-fact" in values:
            self.facts[values["data-fact"]] = (value, text)
        else:
            key = (values["data-chart"], values["data-label"], values["data-series"])
            assert key not in self.cells, f"two cells for {key}"
            self.cells[key] = (value, text)


def numeric(values: Mapping[Any, Any]) -> dict[Any, float]:
    """Marker values as numbers (a marker is text; the summary's are ints and floats)."""
    return {k: float(v[0] if isinstance(v, tuple) else v) for k, v in values.items()}


def shown(text: str) -> float:
    """A number as the page writes it: ``23,744``, ``87.9%``, ``0.618 s``."""
    return float(text.replace(",", "").removesuffix(" s").removesuffix("%"))
