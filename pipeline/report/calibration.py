"""The report's calibration section: SCORE as predicted against the list's observed
deliverability, cell by cell, from the calibration the run used (``summary.json``'s
``run.calibration``, :mod:`pipeline.core.calibration`).

A reliability diagram in inline SVG: x is the rules' SCORE (what was predicted), y the observed
deliverability of the sends of that cell (a level, or a REASON or a provider at it); a point on
the diagonal is calibrated. Each cell with enough sends is a filled dot, the others hollow, and
the SCORE later runs give it is a tick beside it. The table after the diagram holds the same
values for everyone else; every value carries ``data-chart="calibration"``, ``data-label`` (the
cell's name) and ``data-series``.
A run without a calibration has no such section.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pipeline.report.format import attrs, esc

KEY: Final = "calibration"
SIZE: Final = 320  # the plot's side
PAD: Final = 36
_SERIES: Final = ("sends", "predicted", "observed", "calibrated")


def levels_of(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The levels of the calibration the run used ([] without one)."""
    run = summary.get("run")
    used = run.get("calibration") if isinstance(run, Mapping) else None
    levels = used.get("levels") if isinstance(used, Mapping) else None
    return [lv for lv in levels if isinstance(lv, Mapping)] if isinstance(levels, list) else []


def _label(level: Mapping[str, Any]) -> str:
    """A cell's name ("0.50 greylisted at gmail.com"); a level's SCORE for a calibration made
    before cells were named."""
    name = level.get("name")
    return name if isinstance(name, str) and name else f"{float(level['score']):.2f}"


def _xy(x: float, y: float) -> tuple[float, float]:
    return PAD + x * SIZE, PAD + (1 - y) * SIZE


def diagram(levels: list[Mapping[str, Any]]) -> str:
    """The SVG: the diagonal, the axes, one dot per level and a tick at its calibrated SCORE."""
    side = SIZE + 2 * PAD
    (x0, y0), (x1, y1) = _xy(0, 0), _xy(1, 1)
    parts = [
        f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="#9e9e9e" stroke-dasharray="4 3"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#455a64"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#455a64"/>',
        f'<text x="{x1}" y="{y0 + 28}" text-anchor="end">SCORE predicted</text>',
        f'<text x="{x0 - 28}" y="{y1}" transform="rotate(-90 {x0 - 28} {y1})" '
        'text-anchor="end">observed</text>',
    ]
    for lv in levels:
        score, observed = float(lv["score"]), float(lv["observed"])
        cx, cy = _xy(score, observed)
        _tx, ty = _xy(score, float(lv["calibrated"]))
        applied = lv.get("status") != "few_sends"
        fill = "#1f5fa8" if applied else "none"
        marks = attrs({"data-chart": KEY, "data-label": _label(lv), "data-value": observed})
        parts.append(
            f'<circle {marks} cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{fill}" stroke="#1f5fa8">'
            f"<title>SCORE {esc(_label(lv))}: observed {observed:.3f}, "
            f"{int(lv['sends'])} sends</title></circle>"
            f'<line x1="{cx - 6:.1f}" y1="{ty:.1f}" x2="{cx + 6:.1f}" y2="{ty:.1f}" '
            'stroke="#b26a00" stroke-width="2"/>'
        )
    head = attrs(
        {
            "class": "chart",
            "viewBox": f"0 0 {side} {side}",
            "role": "img",
            "aria-label": "SCORE predicted against observed deliverability; the table beside "
            "it lists the same values.",
            "data-chart": KEY,
        }
    )
    return f"<svg {head}>{''.join(parts)}</svg>"


def _cell(label: str, series: str, value: Any) -> str:
    marks = {"class": "n", "data-chart": KEY, "data-label": label, "data-series": series}
    shown = f"{value:,}" if series == "sends" else f"{float(value):.3f}"
    return f"<td {attrs({**marks, 'data-value': value})}>{shown}</td>"


def _table(levels: list[Mapping[str, Any]]) -> str:
    head = "".join(f'<th scope="col" class="n">{esc(c.capitalize())}</th>' for c in _SERIES)
    rows = []
    for lv in levels:
        label = _label(lv)
        values = (int(lv["sends"]), float(lv["score"]), float(lv["observed"]), lv["calibrated"])
        cells = "".join(_cell(label, s, v) for s, v in zip(_SERIES, values, strict=True))
        rows.append(f'<tr><th scope="row">{esc(label)}</th>{cells}</tr>')
    return (
        f"<table {attrs({'class': 'values', 'data-chart': KEY})}>"
        "<caption>Predicted against observed, in numbers</caption>"
        f'<thead><tr><th scope="col">SCORE level</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def section(summary: Mapping[str, Any]) -> str:
    """The report's calibration section ("" when the run used no calibration)."""
    levels = levels_of(summary)
    if not levels:
        return ""
    note = (
        "Each dot is a cell of the list's sends (a SCORE level, or a REASON or a provider at "
        "it): the rules' SCORE across, the observed deliverability up (on the dashed line: "
        "calibrated). The tick is the SCORE this run gave the cell; a hollow dot had too few "
        "sends and kept the rules' SCORE where the order allowed."
    )
    return (
        '<section id="chart-calibration" aria-labelledby="title-calibration">'
        '<h2 id="title-calibration">Predicted against observed</h2>'
        f'<p class="note">{esc(note)}</p>'
        f'<div class="pair"><div class="plot">{diagram(levels)}</div>{_table(levels)}</div>'
        "</section>"
    )
