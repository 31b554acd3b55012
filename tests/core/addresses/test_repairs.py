"""Messy cells that hold an address: repaired as a suggestion, with a reason code per repair."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.core.addresses.repairs import Repair, repair, repair_column
from pipeline.core.config import Config
from pipeline.core.domains.dns import SharedResolver
from pipeline.core.engine import Engine, verify_many
from pipeline.core.lists import load_lists

CASES = [
    ("David Sánchez <david.sanchez@gmail.com>", Repair.DISPLAY_NAME, "david.sanchez@gmail.com"),
    (
        '"Smith, Ann" <Ann.Smith@Acme-Widgets.COM>',
        Repair.DISPLAY_NAME,
        "Ann.Smith@acme-widgets.com",
    ),
    ("mailto:mwilson@hotmail.com", Repair.MAILTO, "mwilson@hotmail.com"),
    ("MAILTO:x@yahoo.com?subject=Hello", Repair.MAILTO, "x@yahoo.com"),
    ("a@gmail.com; b@yahoo.com", Repair.SEVERAL, "a@gmail.com"),
    ("a@gmail.com, b@yahoo.com", Repair.SEVERAL, "a@gmail.com"),
    ("a@gmail.com b@yahoo.com", Repair.SEVERAL, "a@gmail.com"),
    ("lea.dubois @ gmail.com", Repair.SPACES, "lea.dubois@gmail.com"),
    ("lea . dubois@gmail . com", Repair.SPACES, "lea.dubois@gmail.com"),
    ("rjackson@gmail,com", Repair.COMMA, "rjackson@gmail.com"),
    ("\u200bjohn@gmail.com", Repair.INVISIBLE, "john@gmail.com"),
    ("jo\u00adhn@gmail.com", Repair.INVISIBLE, "john@gmail.com"),
    ("\ufeffmailto:z@gmail.com", Repair.MAILTO, "z@gmail.com"),
]
NOT_FIXABLE = ["not an address", "a@@b.com", "@gmail.com", "john@", "", "a b c"]


@pytest.mark.parametrize(("cell", "kind", "address"), CASES)
def test_a_cell_that_holds_an_address(cell: str, kind: Repair, address: str) -> None:
    found = repair(cell)
    assert (found.repair, found.address) == (kind, address)


@pytest.mark.parametrize("cell", NOT_FIXABLE)
def test_a_cell_that_holds_none(cell: str) -> None:
    assert repair(cell).repair is None and repair(cell).address == ""


def test_only_invalid_rows_are_repaired() -> None:
    cells = pl.Series(["ok@gmail.com", "mailto:x@gmail.com", None])
    syntax = pl.Series(["ok", "syntax_invalid", "empty"])
    table = repair_column(cells, syntax)
    assert table.rows() == [("", ""), (Repair.MAILTO.value, "x@gmail.com"), ("", "")]


def test_the_engine_suggests_the_repaired_address_and_explains() -> None:
    import asyncio

    config = Config()
    engine = Engine(config, load_lists(), SharedResolver(config.dns), offline=True)
    cells = [cell for cell, _, _ in CASES]
    answers = asyncio.run(verify_many(engine, cells))
    for (cell, kind, address), answer in zip(CASES, answers, strict=True):
        assert answer["VERDICT"] == "Invalid", cell  # the cell as it stands is no address
        assert answer["SUGGESTION"] == address, cell
        assert kind.value in str(answer["REASON"]).split(";"), cell
