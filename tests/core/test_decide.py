"""decide: the expressions it leaves out, or reads as literals, for the address-level columns
no row has an answer in (a service batch, usually) change no answer."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.core import decide as decide_module
from pipeline.core.decide import decide, reason_bits
from pipeline.core.schema import ADDRESS_COLUMNS, SPEC_COLUMNS

# What the steps before decide give a row: a valid address on a domain with a working MX.
ROW = {
    "EMAIL": "jane@example.net",
    "LOCAL": "jane",
    "DOMAIN": "example.net",
    "KEY": "jane@example.net",
    "SYNTAX": "ok",
    "SYNTAX_DETAIL": "",
    "ROLE": False,
    "DUPLICATE": False,
    "REPAIR": "",
    "REPAIRED": "",
    "_CHECK": "example.net",
    "DNS_STATUS": "mx",
    "MX": "mx.example.net",
    "DISPOSABLE": False,
    "FREE_PROVIDER": False,
    "SUGGESTED_DOMAIN": "",
    "SUGGESTED_WHY": "",
}
# An answer in each address-level column, each one that moves something.
ANSWERS = {
    "MAILBOX": "disabled",
    "MAILBOX_REPLY": "550 5.2.1 disabled",
    "MAILBOX_AT": 2.0,
    "VENDOR_REASON": "spamtrap",
    "API_VERDICT": "Risky",
    "API_SCORE": 0.5,
    "API_KNOWN_BOUNCES": True,
    "API_SUSPECTED_BOUNCES": True,
    "LEDGER_KNOWN": True,
    "LEDGER_SUSPECTED": True,
    "LEDGER_LAST_HARD_AT": 1.0,
    "LEDGER_DELIVERED": True,
    "CONSENT": "unsubscribed",
}
SHOWN = [*SPEC_COLUMNS, "REASON"]


def rows(*answered: str) -> pl.DataFrame:
    """Two rows: the first with an answer in each *answered* column, the second with none."""
    return pl.DataFrame(
        {
            **{c: [v, v] for c, v in ROW.items()},
            **{c: [ANSWERS[c] if c in answered else None, None] for c in ADDRESS_COLUMNS},
        },
        schema_overrides=ADDRESS_COLUMNS,
    )


@pytest.mark.parametrize("answered", [(), *((c,) for c in ANSWERS), tuple(ANSWERS)])
def test_columns_without_answers_change_no_answer(
    answered: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    # One after the other in one process: what was settled for one set of empty columns is
    # kept for that set only.
    left_out = decide(rows(*answered)).select(SHOWN)
    monkeypatch.setattr(decide_module, "_bits_without", lambda absent: reason_bits())
    monkeypatch.setattr(
        decide_module, "_fields_without", lambda mode, absent: decide_module._spec_fields(mode)
    )
    assert left_out.equals(decide(rows(*answered)).select(SHOWN))


def test_an_answer_in_a_column_is_read() -> None:
    """The literal a field becomes for an empty column is not kept for a batch with answers."""
    assert decide(rows()).get_column("HAS_SUSPECTED_BOUNCES").to_list() == [False, False]
    flagged = decide(rows("LEDGER_SUSPECTED"))
    assert flagged.get_column("HAS_SUSPECTED_BOUNCES").to_list() == [True, False]
    assert flagged.get_column("REASON").to_list() == ["suspected_bounces", ""]
