"""The run's report: one self-contained HTML page drawn from its summary.

figures.py   what the page shows, read from ``summary.json`` (every key optional)
format.py    escaping; numbers for people and for machines
svg.py       bar charts as inline SVG
style.py     the inline style sheet
html.py      the page: headline, charts with their tables, run facts, counters
write.py     written beside the summary, atomically
"""

from __future__ import annotations

from pipeline.report.html import render_report
from pipeline.report.write import report_path, write_report

__all__ = ["render_report", "report_path", "write_report"]
