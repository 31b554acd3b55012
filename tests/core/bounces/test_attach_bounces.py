"""The ledger's flags reach the rows the same way for a small batch and a big list."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.bounces.step import attach_bounces
from pipeline.core.config import BouncesConfig
from tests.conftest import REPO


def frame(keys: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"KEY": keys, "DOMAIN": [k.split("@")[-1] for k in keys]})


def test_small_batches_and_big_lists_get_the_same_flags(tmp_path: Path) -> None:
    with BounceLedger(
        tmp_path / "b.sqlite", BouncesConfig(), clock=lambda: 1_795_000_000.0
    ) as ledger:
        ledger.import_file(REPO / "sample_data" / "bounces.csv")
        probes = ["dlopez@gmail.com", "newcomer@oldtown-isp.net", "nobody@gmail.com", ""]
        small = attach_bounces(ledger, frame(probes))
        filler = [f"person{i}@gmail.com" for i in range(20_000)]  # past the scope threshold
        big = attach_bounces(ledger, frame(probes + filler)).head(len(probes))
    columns = ["KEY", "LEDGER_KNOWN", "LEDGER_SUSPECTED"]
    assert small.select(columns).equals(big.select(columns))
    assert small["LEDGER_KNOWN"].to_list() == [True, False, None, None]
    assert small["LEDGER_SUSPECTED"].to_list() == [False, True, None, None]  # the dead domain
