"""The sends of a list (the ledger's deliveries and hard bounces matched to the list's last run
before each) and the calibrations' store, on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.bounces.types import BounceEvent, BounceKind
from pipeline.core.calibration.fit import SENDS, fit
from pipeline.core.calibration.sends import providers_of, sends_of
from pipeline.core.calibration.store import CalibrationStore
from pipeline.core.config import BouncesConfig
from pipeline.core.history.keys import address_hashes
from pipeline.core.history.store import RunHistory
from pipeline.core.history.types import KEPT, RunStart
from pipeline.core.lists import load_lists
from tests.conftest import StoreAt

DAY = 86400.0
T0 = 1_800_000_000.0


def kept(*rows: tuple[str, str, str, float]) -> pl.DataFrame:
    keys = pl.Series([r[0] for r in rows], dtype=pl.String)
    return pl.DataFrame(
        {
            "HASH": address_hashes(keys),
            "VERDICT": [r[1] for r in rows],
            "REASON": [r[2] for r in rows],
            "SCORE": [r[3] for r in rows],
        }
    ).cast(dict(KEPT))  # type: ignore[arg-type]


def event(key: str, kind: BounceKind, at: float) -> BounceEvent:
    return BounceEvent(key, key, key.split("@")[1], kind, "", at, "", "test")


def record(history: RunHistory, run_id: str, at: float, frame: pl.DataFrame) -> None:
    history.begin(RunStart(run_id, "crm", False, at, "d", "1"))
    history.add_part(run_id, 0, frame)
    history.finish(run_id, frame.height, {})


def test_each_send_is_matched_to_the_last_run_before_it(store_at: StoreAt) -> None:
    with (
        RunHistory(store_at("history.sqlite")) as history,
        BounceLedger(store_at("bounces.sqlite"), BouncesConfig()) as ledger,
    ):
        record(history, "r1", T0, kept(("ann@gmail.com", "Risky", "catch_all", 0.6)))
        record(
            history,
            "r2",
            T0 + 7 * DAY,
            kept(("ann@gmail.com", "Valid", "mailbox_ok", 0.97), ("bob@x.org", "Valid", "", 0.9)),
        )
        ledger.add(
            [
                event("ann@gmail.com", BounceKind.DELIVERED, T0 - DAY),  # before any run
                event("ann@gmail.com", BounceKind.HARD, T0 + DAY),  # run 1
                event("ann@gmail.com", BounceKind.DELIVERED, T0 + 8 * DAY),  # run 2
                event("bob@x.org", BounceKind.SOFT, T0 + 8 * DAY),  # no outcome
                event("bob@x.org", BounceKind.HARD, T0 + 9 * DAY),
                event("carl@x.org", BounceKind.HARD, T0 + 9 * DAY),  # not on the list
            ]
        )
        lists = load_lists()
        found = sends_of(ledger, history, "crm", False, providers_of(lists))
        assert found.select("SCORE", "REASON", "PROVIDER", "HARD").rows() == [
            (0.6, "catch_all", "gmail.com", True),
            (0.97, "mailbox_ok", "gmail.com", False),
            (0.9, "", "other", True),
        ]
        later = sends_of(ledger, history, "crm", False, {}, since=T0 + 8.5 * DAY)
        assert later.height == 1
        assert sends_of(ledger, history, "other", False, {}).is_empty()
        assert sends_of(ledger, history, "crm", True, {}).is_empty()


def test_googlemail_is_gmail() -> None:
    providers = providers_of(load_lists())
    assert providers["googlemail.com"] == providers["gmail.com"] == "gmail.com"


def test_a_calibration_is_kept_replaced_and_removed(store_at: StoreAt) -> None:
    frame = pl.DataFrame(
        [(0.9, "Valid", "", "gmail.com", i < 10) for i in range(300)],
        schema=dict(SENDS),
        orient="row",
    )
    first = fit(frame, "crm", False, 200).calibration
    second = fit(frame, "crm", False, 100).calibration
    where = store_at("history.sqlite")
    with CalibrationStore(where) as store, RunHistory(where):
        assert store.get("crm", False) is None
        store.put(first)
        store.put(second)
        assert store.get("crm", False) == second
        assert store.get("crm", True) is None
        assert store.remove("crm", False) is True
        assert store.remove("crm", False) is False
        assert store.get("crm", False) is None


@pytest.mark.parametrize("sandbox", [False, True])
def test_sandbox_calibrations_are_apart(tmp_path, sandbox: bool) -> None:  # type: ignore[no-untyped-def]
    frame = pl.DataFrame(
        [(0.9, "Valid", "", "gmail.com", False)] * 200, schema=dict(SENDS), orient="row"
    )
    with CalibrationStore(tmp_path / "history.sqlite") as store:
        store.put(fit(frame, "crm", sandbox, 200).calibration)
        assert store.get("crm", not sandbox) is None
        assert store.get("crm", sandbox) is not None
