"""A list's default name (its file name without dates and times) and the settings' digest."""

from __future__ import annotations

import dataclasses

import pytest

from pipeline.core.config import Config
from pipeline.core.history.names import list_name_of, settings_digest
from pipeline.stages.provenance import recorded_settings


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("hubspot-crm-exports-all-contacts-2025-11-26.csv", "hubspot-crm-exports-all-contacts"),
        (
            "/exports/hubspot-crm-exports-all-contacts-2025-11-27.csv",
            "hubspot-crm-exports-all-contacts",
        ),
        ("s3://bucket/exports/members_20251126_093000.csv.gz", "members"),
        ("Mailchimp export 26.11.2025.zip", "mailchimp export"),
        ("customers-11-26-2025.csv", "customers"),
        ("contacts_2025-11.xlsx", "contacts"),
        ("crm 2025-11-26T09:30:00Z.csv", "crm"),
        ("export_2025-11-26_09-30-00.parquet", "export"),
        ("contacts-1732612345.parquet", "contacts"),
        ("list.csv", "list"),
        ("list_v2.csv", "list_v2"),
        ("orders123456.csv", "orders123456"),  # digits inside a word are no date
        ("2025-11-26.csv", "2025-11-26"),  # nothing but a date: the stem is kept
        ("exports/part-*.parquet", "exports"),
        ("exports/", "exports"),
        ("-", "stdin"),
    ],
)
def test_the_default_list_name(given: str, name: str) -> None:
    assert list_name_of(given) == name


def test_tonights_export_is_last_nights_list() -> None:
    assert list_name_of("crm-2025-11-26.csv") == list_name_of("crm-2025-11-27.csv")


def test_the_digest_leaves_out_where_things_are() -> None:
    config = Config()
    moved = dataclasses.replace(
        config,
        dns=dataclasses.replace(config.dns, nameservers=("127.0.0.1:5353",)),
        verify=dataclasses.replace(config.verify, port=2525),
        run=dataclasses.replace(config.run, memory=64),
    )
    assert settings_digest(recorded_settings(moved)) == settings_digest(recorded_settings(config))
    stricter = dataclasses.replace(config, verify=dataclasses.replace(config.verify, timeout=5.0))
    assert settings_digest(recorded_settings(stricter)) != settings_digest(
        recorded_settings(config)
    )
