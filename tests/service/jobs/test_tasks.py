"""The jobs' short tasks: a list read as clean reads it, refusals as problems, JSON bodies as
lists, and download formats written by clean's own sinks."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest

from pipeline.core.config import Config, StorageConfig
from pipeline.core.errors import (
    InputError,
    OutputError,
    ResolverUnhealthyError,
    UsageError,
)
from pipeline.service.jobs.storage import Storage
from pipeline.service.jobs.tasks import (
    ConvertTask,
    InspectTask,
    addresses,
    convert,
    inspect,
    problem_of,
    settings_of,
)
from pipeline.service.jobs.types import JobOptions
from tests.conftest import SAMPLE_CSV
from tests.service.conftest import Env
from tests.service.jobs.conftest import clean_directly


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (InputError("No email column in list.csv."), 422, "unreadable_list"),
        (UsageError("--encoding 'x' is not an encoding."), 400, "invalid_parameter"),
        (ResolverUnhealthyError("The resolver fails."), 503, "checks_unavailable"),
        (OutputError("Cannot write /srv/x."), 500, "internal_error"),
        (KeyError("x"), 500, "internal_error"),
    ],
)
def test_a_failure_is_a_problem_that_says_what_it_may(
    error: Exception, status: int, code: str
) -> None:
    problem = problem_of(error)
    assert (problem["status"], problem["code"]) == (status, code)
    if status < 500 or code == "checks_unavailable":
        assert problem["detail"] == str(error)  # clean's own sentence
    else:
        assert "/srv" not in problem["detail"]  # never where the service keeps its files


def test_a_list_is_read_as_clean_reads_it(tmp_path: Path) -> None:
    task = InspectTask(str(SAMPLE_CSV), "list.csv", JobOptions(), settings_of(Config()), 3)
    found = inspect(task)
    assert found["format"] == "csv" and found["rows"] == 297
    assert found["email_column"] == "Email Address" and found["email_column_rule"] == "name"
    assert len(found["preview"]) == 3 and found["preview"][0][0] == "1"


def test_a_json_body_becomes_a_list_of_one_column(tmp_path: Path) -> None:
    body = tmp_path / "addresses.json"
    body.write_text(
        json.dumps(
            {"addresses": ["a@b.org", " B@B.org"], "split": True, "other": {"nested": [1, None]}}
        )
    )
    made = addresses(str(body))
    assert made["fields"] == {"split": ["true"]}
    found = inspect(InspectTask(made["path"], "addresses", JobOptions(), settings_of(Config()), 5))
    assert found["email_column"] == "Email Address"
    assert found["preview"] == [["a@b.org"], [" B@B.org"]]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"split": true}', "missing_parameter"),
        ('{"addresses": "a@b.org"}', "invalid_parameter"),
        ('{"addresses": [1]}', "invalid_parameter"),
        ('{"addresses": [], "addresses": []}', "conflicting_parameters"),
        ('{"addresses": ["\\ud800"]}', "invalid_parameter"),
        ('["a@b.org"]', "invalid_parameter"),
        ('{"addresses": [], "verify": 3}', "invalid_parameter"),
    ],
)
def test_a_json_body_that_is_no_list_is_refused(tmp_path: Path, text: str, code: str) -> None:
    body = tmp_path / "addresses.json"
    body.write_text(text)
    assert addresses(str(body))["problem"]["code"] == code


def test_a_format_made_from_the_parquet_is_what_clean_writes(env: Env, tmp_path: Path) -> None:
    config = env.config()
    out = tmp_path / "j_1" / "out"
    clean_directly(env, config, SAMPLE_CSV, out / "list.clean.parquet")
    clean_directly(env, config, SAMPLE_CSV, tmp_path / "direct" / "list.clean.csv")
    storage = Storage(str(tmp_path), StorageConfig())
    for target, fmt in (("list.clean.csv", "csv"), ("list.clean.xlsx", "xlsx")):
        task = ConvertTask(str(tmp_path), {}, "j_1", "list.clean.parquet", target, fmt)
        assert convert(task) == {}
    assert (out / "list.clean.csv").read_bytes() == (
        tmp_path / "direct" / "list.clean.csv"
    ).read_bytes()
    sheet = openpyxl.load_workbook(out / "list.clean.xlsx", read_only=True).active
    assert sheet is not None and sheet.max_row == 298
    assert storage.exists("j_1", "out", "list.clean.xlsx")
