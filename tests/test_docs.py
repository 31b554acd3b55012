"""The README documents every reason code, every setting and every output column."""

from __future__ import annotations

import tomllib

import pytest

from pipeline.core.config import settings_table
from pipeline.core.schema import OUTPUT_COLUMNS
from pipeline.core.verdict import PENALTIES, RULES, Reason
from pipeline.service.settings import (
    AnonymousConfig,
    HttpConfig,
    PlanConfig,
    ServiceConfig,
    load_service_config,
)
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("reason", list(Reason))
def test_every_reason_code_is_in_the_readme_table(reason: Reason) -> None:
    row = next(line for line in README.splitlines() if line.startswith(f"| `{reason.value}` |"))
    if reason in RULES:
        rule = RULES[reason]
        assert f"| {rule.verdict.value} | ≤ {rule.cap:.2f} |" in row
    elif reason in PENALTIES:
        assert f"\u00d7 {PENALTIES[reason]}" in row


@pytest.mark.parametrize(("name", "default", "help_text"), list(settings_table()))
def test_every_setting_is_documented_with_its_default(
    name: str, default: object, help_text: str
) -> None:
    assert f"| `{name}` |" in README
    section, key = name.split(".")
    shipped = tomllib.loads((REPO / "configs" / "pipeline.toml").read_text())
    value = shipped[section][key]
    assert (tuple(value) if isinstance(value, list) else value) == default


SERVICE_SETTINGS = [
    *settings_table(HttpConfig, "service."),
    *settings_table(AnonymousConfig, "anonymous."),
    *settings_table(PlanConfig, "plans.NAME."),
]


@pytest.mark.parametrize(("name", "default", "help_text"), SERVICE_SETTINGS)
def test_every_service_setting_is_documented(name: str, default: object, help_text: str) -> None:
    assert f"| `{name}` |" in README


def test_shipped_service_config_equals_the_defaults() -> None:
    assert load_service_config(REPO / "configs" / "service.toml") == ServiceConfig()


@pytest.mark.parametrize("column", list(OUTPUT_COLUMNS))
def test_every_output_column_is_documented(column: str) -> None:
    assert f"| `{column}` |" in README
