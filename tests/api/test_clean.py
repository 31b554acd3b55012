"""The Python API, `from pipeline import clean, verify`, against the sample world's DNS server on
127.0.0.1: frames and files in, enriched frames, rejects and a typed summary out; the spec's
fields for one address; both from plain code and from code that runs an event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import polars as pl
import pytest

from pipeline import CleanResult, clean, verify
from pipeline.core.config import Config
from pipeline.core.errors import InputError
from pipeline.core.schema import OUTPUT_COLUMNS, SPEC_COLUMNS
from pipeline.stages.summary import RunSummary

FRAME = pl.DataFrame(
    {
        "id": [1, 2, 3],
        "email": ["John.Doe@gmial.com", " ann@gmail.com ", "not an address"],
    }
)


def test_clean_a_frame(config: Config) -> None:
    result = clean(FRAME, config=config)
    assert isinstance(result, CleanResult) and isinstance(result.summary, RunSummary)
    # The input's email column is kept (as input_email: it is our EMAIL, ignoring case).
    assert result.frame.columns == ["id", "input_email", *OUTPUT_COLUMNS]
    assert result.frame.get_column("id").to_list() == [1, 2, 3]  # types and order kept
    rows = result.frame.select("EMAIL", "VERDICT", "SUGGESTION").rows()
    assert rows[0] == ("John.Doe@gmial.com", "Risky", "John.Doe@gmail.com")
    assert rows[1][0] == "ann@gmail.com" and rows[2][1] == "Invalid"
    assert result.rejects.schema == {"line": pl.Int64, "reason": pl.String, "raw": pl.String}
    assert result.summary.rows_in == 3 and result.summary.email is not None
    assert result.summary.email.name == "email" and result.summary.dns_queries > 0


def test_clean_a_file_gives_its_rejects(config: Config, tmp_path: Path) -> None:
    path = tmp_path / "report.csv"
    path.write_text('"Name","Contact"\n"Ann","ann@gmail.com"\n"Grand Totals (1 records)"\n')
    result = clean(path, config=config)
    assert result.frame.height == 1
    assert result.rejects.rows() == [(3, "footer", '"Grand Totals (1 records)"')]
    assert result.summary.email is not None and result.summary.email.rule == "content"
    summary = result.summary.as_dict()
    assert summary["rows_in"] == summary["rows_out"] + summary["rows_rejected"] == 2


def test_clean_remembers_a_named_list(config: Config) -> None:
    """A DataFrame is recorded under the name it is given, and its next run says what changed."""
    assert clean(FRAME, config=config).summary.list_name == ""  # a frame without a name
    first = clean(FRAME, config=config, list_name="signups").summary
    assert first.list_name == "signups" and first.since_last_run is None
    more = pl.concat([FRAME, pl.DataFrame({"id": [4], "email": ["bob@gmail.com"]})])
    since = clean(more, config=config, list_name="signups").summary.since_last_run
    assert since is not None and (since["new"], since["unchanged"]) == (1, 3)


def test_clean_refuses_what_the_command_line_refuses(config: Config) -> None:
    with pytest.raises(InputError, match="no column named 'mail'"):
        clean(FRAME, email_column="mail", config=config)


def test_verify_gives_the_spec_fields(config: Config) -> None:
    answer = verify("John.Doe@gmial.com", config=config)
    assert list(answer) == [*SPEC_COLUMNS, "REASON", "DETAIL"]
    assert answer["SUGGESTION"] == "John.Doe@gmail.com" and answer["VERDICT"] == "Risky"
    domain = verify("gmail.com", domain=True, config=config)
    assert domain["EMAIL"] == "" and domain["DOMAIN"] == "gmail.com"


def test_both_work_inside_a_running_event_loop(config: Config) -> None:
    """As from an async task or a notebook cell: the loop is busy, the call still answers."""

    async def task() -> tuple[CleanResult, str]:
        cleaned = clean(FRAME, config=config)
        answer = verify("ann@gmail.com", config=config)
        return cleaned, answer["VERDICT"]

    cleaned, verdict = asyncio.run(task())
    assert cleaned.frame.height == 3 and verdict == "Valid"


def test_settings_come_from_a_file_and_the_environment(
    config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tmp_path / "settings.toml"
    settings.write_text(f'[dns]\nnameservers = ["{config.dns.nameservers[0]}"]\n')
    monkeypatch.setenv("LISTCLEAN_CACHE_DIR", str(tmp_path / "env-cache"))
    monkeypatch.setenv("LISTCLEAN_DNS_TIMEOUT", "0.3")
    assert verify("ann@gmail.com", config=settings)["VERDICT"] == "Valid"
    assert (tmp_path / "env-cache" / "domains.sqlite").exists()
