"""How values are written into the page: escaped, and numbers in a human and a machine form.

Everything a summary holds may be user data (a file name, a domain, a column name), so every
value passes through :func:`esc` or :func:`attrs` on its way into the page; HTML escaping of
``& < > " '`` is also correct for SVG inlined in HTML (HTML Living Standard, 13.1.2.6 and 13.2).
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from pipeline.report.figures import Unit


def esc(value: object) -> str:
    """*value* as text that cannot open a tag, an entity or leave a quoted attribute."""
    return html.escape(str(value), quote=True)


def attrs(values: Mapping[str, object]) -> str:
    """``name="value"`` pairs, every value escaped (names are ours, never user data)."""
    return " ".join(f'{name}="{esc(machine(value))}"' for name, value in values.items())


def machine(value: object) -> str:
    """The form a test reads back: ints as digits, floats in their shortest round-trip form
    (``repr``, as ``json`` writes them), so ``float(data-value)`` equals the summary's value."""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def number(value: int | float, unit: Unit) -> str:
    """How a person reads it: thousands separated, shares as percentages, seconds with unit."""
    if unit is Unit.SHARE:
        return f"{value:.1%}"
    if unit is Unit.SECONDS:
        return f"{value:,.3f} s"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return f"{value:,}"
