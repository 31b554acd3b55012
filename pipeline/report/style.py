"""The report's style sheet, inlined into the page (no web fonts: the system's own UI font)."""

from __future__ import annotations

from typing import Final

CSS: Final = """
:root {
  --ink: #1b1f24; --muted: #57606a; --line: #d0d7de; --panel: #f6f8fa; --accent: #1f5fa8;
  --valid: #2e7d32; --risky: #b26a00; --invalid: #c62828;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif;
  color: var(--ink); background: #fff; line-height: 1.45;
}
body { margin: 0 auto; max-width: 1180px; padding: 24px 28px 48px; }
header h1 { font-size: 1.6rem; margin: 0 0 4px; }
header .input { margin: 0; color: var(--muted); overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 0 0 4px; }
section { margin-top: 28px; }
.note { margin: 0 0 10px; color: var(--muted); font-size: .92rem; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 12px;
  margin-top: 20px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px;
  background: var(--panel); }
.card .title { display: block; color: var(--muted); font-size: .88rem; }
.card .value { display: block; font-size: 1.75rem; font-weight: 650;
  font-variant-numeric: tabular-nums; }
.card .share { display: block; color: var(--muted); font-size: .88rem; }
.card.safe { border-color: var(--valid); background: #eef7ee; }
.card.safe .value { color: var(--valid); }
.pair { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 20px;
  align-items: start; }
@media (max-width: 820px) { .pair { grid-template-columns: 1fr; } }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart text { font-size: 13px; fill: var(--ink); dominant-baseline: middle; }
svg.chart text.label { text-anchor: end; }
svg.chart text.total { fill: var(--muted); font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
caption { text-align: left; color: var(--muted); font-size: .85rem; padding-bottom: 4px; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tbody th { font-weight: normal; overflow-wrap: anywhere; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
dl.facts .why { color: var(--muted); }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: .88em; }
.warnings li { color: var(--risky); }
.sandbox { border: 2px dashed var(--risky); padding: 8px 12px; font-weight: 600; }
"""
