"""The service applies the calibration of the list ``[history] list_name`` names, from the run
history beside its cache, with the same rule as the batch: /api/email's SCORE is the
calibrated one, inside its VERDICT's band; without the list's calibration, the rules'."""

from __future__ import annotations

from dataclasses import replace

import aiohttp
import polars as pl
import pytest

from pipeline.core.calibration.apply import calibrated
from pipeline.core.calibration.fit import SENDS, fit
from pipeline.core.calibration.store import CalibrationStore
from pipeline.core.config import HistoryConfig
from pipeline.service.settings import ServiceConfig
from tests.service.conftest import Env, create_key, fetch, run


def calibrate(env: Env, observed: float) -> None:
    """The list crm's calibration beside the service's cache: SCORE 0.90 observed *observed*."""
    hard = round(400 * (1 - observed))
    frame = pl.DataFrame(
        [(0.9, "Valid", "", "gmail.com", i < hard) for i in range(400)],
        schema=dict(SENDS),
        orient="row",
    )
    with CalibrationStore(env.tmp / "history.sqlite") as store:
        store.put(fit(frame, "crm", False, 200).calibration)


def config_for(env: Env, list_name: str) -> ServiceConfig:
    config = env.config()
    return replace(
        config, engine=replace(config.engine, history=HistoryConfig(list_name=list_name))
    )


def score(env: Env, config: ServiceConfig, query: str = "email=john.doe@gmail.com") -> float:
    async def scenario() -> float:
        _key, secret = create_key(env.db)
        headers = {"Authorization": f"Bearer {secret}"}
        async with env.serving(config) as url, aiohttp.ClientSession(headers=headers) as session:
            reply = await fetch(session, "GET", f"{url}/api/email?{query}")
            assert reply.status == 200, reply.text
            assert reply.json["VERDICT"] == "Valid"
            return float(reply.json["SCORE"])

    return run(scenario())


@pytest.mark.parametrize(("observed", "expected"), [(0.8, 0.8), (0.5, 0.7)])
def test_the_service_gives_the_lists_calibrated_score(
    env: Env, observed: float, expected: float
) -> None:
    calibrate(env, observed)
    # 0.5 lies below Valid's band: the band's edge.
    assert score(env, config_for(env, "crm")) == pytest.approx(expected)


def test_another_list_or_none_keeps_the_rules_score(env: Env) -> None:
    calibrate(env, 0.8)
    assert score(env, config_for(env, "other")) == 0.9
    assert score(env, env.config()) == 0.9


def test_a_domains_answer_keeps_the_rules_score(env: Env) -> None:
    """The calibration is of the list's addresses: domain mode is not calibrated."""
    calibrate(env, 0.8)
    assert score(env, config_for(env, "crm"), "domain=gmail.com") == 0.9


def test_the_service_takes_a_providers_cell_as_the_batch_does(env: Env) -> None:
    """Sends at gmail.com deliver 0.95, elsewhere 0.75: the calibration keeps a cell for each
    provider, and a gmail.com address gets gmail.com's, as a run's row would."""
    rows = [(0.9, "Valid", "", "gmail.com", i < 50) for i in range(1000)]
    rows += [(0.9, "Valid", "", "other", i < 250) for i in range(1000)]
    made = fit(
        pl.DataFrame(rows, schema=dict(SENDS), orient="row"),
        "crm",
        False,
        200,
        {"gmail.com": "gmail.com", "googlemail.com": "gmail.com"},
    ).calibration
    with CalibrationStore(env.tmp / "history.sqlite") as store:
        store.put(made)
    batch = calibrated(
        pl.DataFrame(
            {
                "SCORE": [0.9] * 2,
                "VERDICT": ["Valid"] * 2,
                "REASON": [""] * 2,
                "DOMAIN": ["gmail.com", "corp.example"],
            }
        ),
        made,
    )["SCORE"].to_list()
    # Each provider's rate pulled a sixth toward the level's 0.85 (any other domain: "other").
    assert batch == [0.93, 0.77]
    assert score(env, config_for(env, "crm")) == batch[0]
