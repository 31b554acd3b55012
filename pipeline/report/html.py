"""The report page: one self-contained HTML file drawn from a run's summary.

The page needs nothing but itself: the style sheet is inline, the charts are SVG drawn here
(:mod:`pipeline.report.svg`), there is no script and no web font. Its Content-Security-Policy
(``default-src 'none'``) makes that a rule the browser enforces: anything the page tried to
fetch would be refused, and reported on the console, where the browser test looks for it.

Every number on the page carries its name and exact value for a machine to read: a headline or
counter as ``data-figure`` and ``data-value``, a chart bar (and each cell of the table beside
it) as ``data-chart``, ``data-label``, ``data-series`` and ``data-value``; a run fact as
``data-fact`` and ``data-value``. A section whose keys the summary lacks is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pipeline.report.calibration import section as calibration_section
from pipeline.report.figures import (
    Chart,
    Fact,
    Figure,
    Headline,
    Report,
    Since,
    read_summary,
)
from pipeline.report.format import attrs, esc, number
from pipeline.report.style import CSS
from pipeline.report.svg import bar_chart

# Nothing may be fetched: styles are inline; the only image is the empty data: favicon (which
# stops the browser asking for /favicon.ico).
POLICY: Final = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
HEADING: Final = "List cleaning report"
SANDBOX_BANNER: Final = (
    "Sandbox run: every answer came from the sandbox's made-up world on this machine "
    "(--sandbox), not from real DNS or mail servers. These verdicts say nothing about the "
    "real addresses."
)


def render_report(summary: Mapping[str, Any]) -> str:
    """The report of *summary* (``summary.json`` as a mapping), as one HTML page."""
    report = read_summary(summary)
    parts = [
        _header(report),
        _sandbox(report.sandbox),
        _headline(report.headline),
        _since(report.since),
        *(_chart(chart) for chart in report.charts),
        calibration_section(summary),
        _facts(report.facts),
        _counters(report.counters),
        _warnings(report.warnings),
    ]
    return _page(report.title, "".join(parts))


def _page(title: str, body: str) -> str:
    name = f"{HEADING}: {title}" if title else HEADING
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(POLICY)}">'
        '<link rel="icon" href="data:,">'
        f"<title>{esc(name)}</title><style>{CSS}</style></head>\n"
        f"<body>{body}</body></html>\n"
    )


def _header(report: Report) -> str:
    title = f'<p class="input">{esc(report.title)}</p>' if report.title else ""
    return f"<header><h1>{HEADING}</h1>{title}</header>"


def _sandbox(sandbox: bool) -> str:
    if not sandbox:
        return ""
    return f'<p class="sandbox" role="note">{esc(SANDBOX_BANNER)}</p>'


def _headline(cards: tuple[Headline, ...]) -> str:
    if not cards:
        return ""
    items = "".join(map(_card, cards))
    return f'<section class="cards" aria-label="Headline figures">{items}</section>'


def _card(card: Headline) -> str:
    main = card.figure
    share = ""
    if card.share is not None:
        share = f'<span class="share">{_figure(card.share)} {esc(card.share.title)}</span>'
    kind = "card safe" if main.key == "safe_to_send" else "card"
    return (
        f'<div class="{kind}"><span class="title">{esc(main.title)}</span>'
        f'<span class="value">{_figure(main)}</span>{share}</div>'
    )


def _since(since: Since | None) -> str:
    """What changed since the list's last run: the counts as cards, the VERDICT changes as
    a chart (when there are any)."""
    if since is None:
        return ""
    heading = "title-since"
    if since.previous_run_at is None:
        note = "The list's first run in the history: nothing to compare with yet."
    else:
        note = f"Since the last run of the list, at {since.previous_run_at}."
    cards = "".join(_card(Headline(f)) for f in since.figures)
    named = f" of {since.list_name}" if since.list_name else ""
    chart = _chart(since.transitions) if since.transitions.bars else ""
    return (
        f'<section id="since" aria-labelledby="{heading}">'
        f'<h2 id="{heading}">Since the last run{esc(named)}</h2>'
        f'<p class="note">{esc(note)}</p>'
        f'<div class="cards">{cards}</div>{chart}</section>'
    )


def _figure(figure: Figure) -> str:
    marks = attrs({"data-figure": figure.key, "data-value": figure.value})
    return f"<span {marks}>{esc(number(figure.value, figure.unit))}</span>"


def _chart(chart: Chart) -> str:
    heading = f"title-{chart.key}"
    note = f'<p class="note">{esc(chart.note)}</p>' if chart.note else ""
    return (
        f'<section id="chart-{esc(chart.key)}" aria-labelledby="{esc(heading)}">'
        f'<h2 id="{esc(heading)}">{esc(chart.title)}</h2>{note}'
        f'<div class="pair"><div class="plot">{bar_chart(chart)}</div>{_table(chart)}</div>'
        "</section>"
    )


def _table(chart: Chart) -> str:
    columns = [*chart.series, "total"] if chart.stacked else list(chart.series)
    head = "".join(f'<th scope="col" class="n">{esc(c.capitalize())}</th>' for c in columns)
    rows = []
    for bar in chart.bars:
        values = [*bar.values, bar.sum] if chart.stacked else list(bar.values)
        cells = "".join(_cell(chart, bar.label, c, v) for c, v in zip(columns, values, strict=True))
        rows.append(f'<tr><th scope="row">{esc(bar.shown)}</th>{cells}</tr>')
    return (
        f"<table {attrs({'class': 'values', 'data-chart': chart.key})}>"
        f"<caption>{esc(chart.title)}, in numbers</caption>"
        f'<thead><tr><th scope="col">{esc(chart.category)}</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _cell(chart: Chart, label: str, series: str, value: int | float) -> str:
    marks = {"data-chart": chart.key, "data-label": label, "data-series": series}
    shown = esc(number(value, chart.unit))
    return f'<td class="n" {attrs({**marks, "data-value": value})}>{shown}</td>'


def _facts(facts: tuple[Fact, ...]) -> str:
    if not facts:
        return ""
    items = "".join(map(_fact, facts))
    return (
        '<section aria-labelledby="title-run"><h2 id="title-run">The run</h2>'
        f'<dl class="facts">{items}</dl></section>'
    )


def _fact(fact: Fact) -> str:
    marks = attrs({"data-fact": fact.key, "data-value": fact.value})
    why = f' <span class="why">({esc(fact.note)})</span>' if fact.note else ""
    shown = esc(fact.shown or fact.value)
    return f"<dt>{esc(fact.title)}</dt><dd><code {marks}>{shown}</code>{why}</dd>"


def _counters(counters: tuple[Figure, ...]) -> str:
    if not counters:
        return ""
    rows = "".join(
        f'<tr><th scope="row">{esc(f.title)}</th><td class="n">{_figure(f)}</td></tr>'
        for f in counters
    )
    return (
        '<section aria-labelledby="title-counters"><h2 id="title-counters">Technical counters</h2>'
        f'<table class="counters"><tbody>{rows}</tbody></table></section>'
    )


def _warnings(warnings: tuple[str, ...]) -> str:
    if not warnings:
        return ""
    items = "".join(f"<li>{esc(w)}</li>" for w in warnings)
    return (
        '<section aria-labelledby="title-warnings"><h2 id="title-warnings">Warnings</h2>'
        f'<ul class="warnings">{items}</ul></section>'
    )
