"""Horizontal bar charts as inline SVG, drawn here so the page needs nothing from the network.

One bar per category; a chart with several series stacks them in one bar (rows by verdict).
Every bar part carries the machine-readable markers the page promises (``data-chart``,
``data-label``, ``data-series``, ``data-value``) and a ``<title>`` the browser shows on hover;
the number at the end of a bar is its total (``data-series="total"``). The chart is an image
for sighted readers; the table beside it carries the same values for everyone else.
"""

from __future__ import annotations

from typing import Final

from pipeline.report.figures import VERDICTS, Bar, Chart, Unit
from pipeline.report.format import attrs, esc, number

WIDTH: Final = 640
LABEL_WIDTH: Final = 190  # left of the bars: the category names
TRACK: Final = 380  # the longest bar
ROW: Final = 24
BAR: Final = 16
LEGEND: Final = 24
LABEL_CHARS: Final = 26  # longer names are cut on the chart (the table has them whole)
# Verdict colours, and a palette for other series; each has enough contrast against white
# (WCAG 2.1 non-text contrast, 3:1) to be told apart from the background.
COLOURS: Final = dict(zip(VERDICTS, ("#2e7d32", "#b26a00", "#c62828"), strict=True))
PALETTE: Final = ("#1f5fa8", "#6a1b9a", "#00796b", "#8d4e00", "#455a64")


def bar_chart(chart: Chart) -> str:
    """The SVG of *chart*, scaled so its longest bar fills the track."""
    top = LEGEND if chart.stacked else 0
    height = top + ROW * len(chart.bars) + 4
    scale = TRACK / max((bar.sum for bar in chart.bars), default=0) if _drawn(chart) else 0.0
    rows = "".join(_row(chart, bar, top + i * ROW, scale) for i, bar in enumerate(chart.bars))
    label = f"{chart.title}: bar chart; the table beside it lists the same values."
    head = attrs(
        {
            "class": "chart",
            "viewBox": f"0 0 {WIDTH} {height}",
            "role": "img",
            "aria-label": label,
            "data-chart": chart.key,
        }
    )
    return f"<svg {head}>{_legend(chart)}{rows}</svg>"


def colour(chart: Chart, index: int) -> str:
    name = chart.series[index]
    if name in COLOURS:
        return COLOURS[name]
    return PALETTE[-1] if chart.unit is Unit.SECONDS else PALETTE[index % len(PALETTE)]


def _drawn(chart: Chart) -> bool:
    return any(bar.sum > 0 for bar in chart.bars)


def _row(chart: Chart, bar: Bar, y: int, scale: float) -> str:
    name = bar.shown if len(bar.shown) <= LABEL_CHARS else bar.shown[: LABEL_CHARS - 1] + "…"
    middle = y + ROW // 2
    text = attrs({"x": LABEL_WIDTH - 8, "y": middle, "class": "label"})
    parts, x = [], float(LABEL_WIDTH)
    for index, value in enumerate(bar.values):
        width = value * scale
        parts.append(_part(chart, bar, index, (x, y + (ROW - BAR) / 2, width)))
        x += width
    total = _total(chart, bar, x + 6, middle)
    label = f"<title>{esc(bar.shown)}</title><text {text}>{esc(name)}</text>"
    return f"<g>{label}{''.join(parts)}{total}</g>"


def _part(chart: Chart, bar: Bar, index: int, box: tuple[float, float, float]) -> str:
    x, y, width = box
    series, value = chart.series[index], bar.values[index]
    marks = _marks(chart, bar, series, value)
    shape = attrs(
        {"x": f"{x:.2f}", "y": f"{y:.2f}", "width": f"{width:.2f}", "height": BAR, **marks}
    )
    tip = f"{bar.shown}: {number(value, chart.unit)}"
    if chart.stacked:
        tip = f"{bar.shown}, {series}: {number(value, chart.unit)}"
    return f'<rect {shape} fill="{colour(chart, index)}"><title>{esc(tip)}</title></rect>'


def _total(chart: Chart, bar: Bar, x: float, y: int) -> str:
    marks = _marks(chart, bar, "total", bar.sum)
    text = attrs({"x": f"{x:.2f}", "y": y, "class": "total", **marks})
    return f"<text {text}>{esc(number(bar.sum, chart.unit))}</text>"


def _marks(chart: Chart, bar: Bar, series: str, value: int | float) -> dict[str, object]:
    return {
        "data-chart": chart.key,
        "data-label": bar.label,
        "data-series": series,
        "data-value": value,
    }


def _legend(chart: Chart) -> str:
    if not chart.stacked:
        return ""
    items, x = [], LABEL_WIDTH
    for index, name in enumerate(chart.series):
        box = attrs({"x": x, "y": 6, "width": 12, "height": 12, "fill": colour(chart, index)})
        text = attrs({"x": x + 18, "y": 12, "class": "legend"})
        items.append(f"<rect {box}/><text {text}>{esc(name)}</text>")
        x += 24 + 8 * len(name) + 12
    return f'<g class="legend" aria-hidden="true">{"".join(items)}</g>'
