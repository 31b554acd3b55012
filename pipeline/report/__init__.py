"""The run's report: one self-contained HTML page drawn from its summary.

figures.py   what the page shows, read from ``summary.json`` (every key optional)
format.py    escaping; numbers for people and for machines
svg.py       bar charts as inline SVG
style.py     the inline style sheet
html.py      the page: headline, charts with their tables, run facts, counters

Writing it is the write stage's (staged beside the summary, published with the run's other
files: :mod:`pipeline.stages.write.publish`).
"""

from __future__ import annotations

from pipeline.report.html import render_report

__all__ = ["render_report"]
