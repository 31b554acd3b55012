"""`listclean calibrate` end to end, in the sandbox world: two runs of a list, the sending
service's deliveries and hard bounces imported, the calibration printed and stored; the list's
next run gives the calibrated SCORE inside each VERDICT's band and names the calibration in its
summary; `show`, the JSON format and `remove`."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.core.calibration.apply import calibrated as apply_rule
from pipeline.core.calibration.types import Calibration
from pipeline.core.history.store import RunHistory
from pipeline.core.verdict import BANDS, Verdict
from pipeline.sandbox.files import SANDBOX_SETTINGS
from tests.conftest import SAMPLE_CSV

FAST = str(SANDBOX_SETTINGS)
LIST = "crm"


def where(tmp: Path) -> list[str]:
    return ["--sandbox", "--cache-dir", str(tmp / "cache")]


def clean(tmp: Path, name: str, config: str = FAST) -> dict[str, Any]:
    output = tmp / f"{name}.parquet"
    args = ["clean", str(SAMPLE_CSV), "-o", str(output), "--config", config, "--quiet"]
    assert main([*args, "--list-name", LIST, *where(tmp)]) == 0
    loaded: dict[str, Any] = json.loads((tmp / f"{name}.summary.json").read_text())
    return loaded


def decided(tmp: Path, name: str) -> pl.DataFrame:
    rows = pl.read_parquet(tmp / f"{name}.parquet")
    return rows.filter(~pl.col("DUPLICATE") & (pl.col("EMAIL") != "")).select(
        "EMAIL", "VERDICT", "SCORE", "REASON"
    )


def iso(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sends_file(tmp: Path, rows: pl.DataFrame, at: float) -> Path:
    """Each Valid address: a hard bounce, then four deliveries (observed 0.8, and the last
    word a delivery: no known bounce in the next run); each Risky one: three deliveries
    (observed 1.0, above Risky's band); each Invalid one: two hard bounces."""
    lines = ["recipient,bounce_type,smtp_status,bounced_at,diagnostic"]
    plan = {
        "Valid": ["hard", *["delivered"] * 4],
        "Risky": ["delivered"] * 3,
        "Invalid": ["hard"] * 2,
    }
    for email, verdict in rows.select("EMAIL", "VERDICT").rows():
        for i, kind in enumerate(plan[verdict]):
            status = "5.1.1" if kind == "hard" else "2.0.0"
            lines.append(f"{email},{kind},{status},{iso(at + 2 + i)},")
    path = tmp / "sends.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def calibrated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    """Two runs, their sends imported, `calibrate` as text: what it stored (as JSON)."""
    monkeypatch.setenv("LISTCLEAN_CALIBRATION_MIN_SENDS", "5")
    first = clean(tmp_path, "night1")
    assert first["run"]["calibration"] is None
    clean(tmp_path, "night2")
    sent = sends_file(tmp_path, decided(tmp_path, "night2"), time.time())
    assert main(["bounces", "import", str(sent), *where(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["calibrate", "--list-name", LIST, *where(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "Expected calibration error over 10 SCORE bins" in text
    assert "By REASON:" in text and "By provider:" in text and "Findings:" in text
    assert "sandbox-history.sqlite" in text
    assert (
        main(["calibrate", "show", "--format", "json", "--list-name", LIST, *where(tmp_path)]) == 0
    )
    shown: dict[str, Any] = json.loads(capsys.readouterr().out)
    return shown


def test_the_next_run_gives_the_calibrated_score_inside_each_band(
    tmp_path: Path, calibrated: dict[str, Any]
) -> None:
    levels = {lv["score"]: lv for lv in calibrated["levels"]}
    assert levels[0.9]["calibrated"] == pytest.approx(0.8) and levels[0.9]["status"] == "applied"
    risky = [lv for lv in calibrated["levels"] if lv["verdict"] == "Risky"]
    assert risky and all(lv["calibrated"] == 0.69 for lv in risky if lv["sends"] >= 5)
    before = decided(tmp_path, "night2")
    third = clean(tmp_path, "night3")
    after = decided(tmp_path, "night3")
    both = before.join(after, on="EMAIL", suffix="_AFTER")
    assert both.height == before.height
    assert (both["VERDICT"] == both["VERDICT_AFTER"]).all()  # VERDICT rules do not change
    for verdict, score in both.select("VERDICT_AFTER", "SCORE_AFTER").rows():
        low, high = BANDS[Verdict(verdict)]
        assert low <= score <= high
    valid = both.filter(pl.col("VERDICT") == "Valid")
    assert valid.height and set(valid["SCORE_AFTER"]) == {0.8}
    # Each row takes its finest cell's SCORE, by the one rule both fronts apply; a level with
    # too few sends keeps the rules' SCORE where the order allows (here Risky's lower levels
    # are at the band's top, so every Risky level is).
    rule = Calibration.from_dict(calibrated)
    rows = both.select(
        "SCORE", "VERDICT", "REASON", pl.col("EMAIL").str.split("@").list.last().alias("DOMAIN")
    )
    assert both["SCORE_AFTER"].to_list() == apply_rule(rows, rule)["SCORE"].to_list()
    assert any(lv["status"] == "few_sends" for lv in calibrated["levels"])
    assert set(both.filter(pl.col("VERDICT") == "Risky")["SCORE_AFTER"]) == {0.69}
    used = third["run"]["calibration"]
    assert used["id"] == calibrated["calibration_id"] and used["list_name"] == LIST
    assert used["levels_applied"] == sum(lv["status"] != "few_sends" for lv in calibrated["levels"])
    assert "Predicted against observed" in (tmp_path / "night3.report.html").read_text()
    # The history keeps the rules' SCORE: the next calibration is fitted on the same scale.
    with RunHistory(tmp_path / "cache" / "sandbox-history.sqlite") as history:
        last = history.last(LIST, sandbox=True)
        assert last is not None
        assert 0.8 not in set(history.kept(last.run_id)["SCORE"])


def test_json_names_groups_and_errors(
    tmp_path: Path, calibrated: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", "--format", "json", "--list-name", LIST, *where(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"calibration", "groups", "ece_before", "ece_after", "findings", "store"}
    kinds = {g["kind"] for g in report["groups"]}
    assert kinds == {"bin", "reason", "provider"}
    valid = next(g for g in report["groups"] if g["kind"] == "reason" and g["name"] == "none")
    assert valid["observed"] == pytest.approx(0.8) and valid["predicted"] == pytest.approx(0.9)
    assert report["ece_after"] < report["ece_before"]
    assert report["findings"] and "outside the band" in report["findings"][0]


def test_remove_gives_the_rules_score_back(
    tmp_path: Path, calibrated: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", "remove", "--list-name", LIST, *where(tmp_path)]) == 0
    assert "Removed the calibration" in capsys.readouterr().out
    assert main(["calibrate", "show", "--list-name", LIST, *where(tmp_path)]) == 0
    assert "has no calibration" in capsys.readouterr().out
    fourth = clean(tmp_path, "night4")
    assert fourth["run"]["calibration"] is None
    assert (
        decided(tmp_path, "night4")["SCORE"].to_list()
        == decided(tmp_path, "night2")["SCORE"].to_list()
    )


def test_a_list_without_sends_is_told_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean(tmp_path, "night1")
    assert main(["calibrate", *where(tmp_path)]) == 2  # the history's only list
    assert "No send of the list 'crm' is known" in capsys.readouterr().err


def test_the_history_in_postgresql_keeps_the_calibration(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """[history] db a postgresql:// URL: the calibration is kept there, beside the runs."""
    monkeypatch.setenv("LISTCLEAN_CALIBRATION_MIN_SENDS", "5")
    config = tmp_path / "settings.toml"
    config.write_text(SANDBOX_SETTINGS.read_text() + f'\n[history]\ndb = "{pg_url}"\n')
    clean(tmp_path, "night1", str(config))
    clean(tmp_path, "night2", str(config))
    sent = sends_file(tmp_path, decided(tmp_path, "night2"), time.time())
    assert main(["bounces", "import", str(sent), *where(tmp_path)]) == 0
    capsys.readouterr()
    args = ["--list-name", LIST, "--config", str(config), *where(tmp_path)]
    assert main(["calibrate", "--format", "json", *args]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["store"].startswith("postgresql://")
    assert not (tmp_path / "cache" / "sandbox-history.sqlite").exists()
    third = clean(tmp_path, "night3", str(config))
    assert third["run"]["calibration"]["id"] == report["calibration"]["calibration_id"]
    valid = decided(tmp_path, "night3").filter(pl.col("VERDICT") == "Valid")
    assert set(valid["SCORE"]) == {0.8}
    assert main(["calibrate", "remove", *args]) == 0
    assert clean(tmp_path, "night4", str(config))["run"]["calibration"] is None
