"""Identity rules: countries as addresses write them, numbers read in their own country."""

from __future__ import annotations

import pytest

from pipeline.core.contacts.identity import (
    country_region,
    fold,
    national_number,
    normalize_phone,
    phone_readings,
    reads_as,
)


@pytest.mark.parametrize(
    ("country", "region"),
    [
        ("USA", "US"),
        ("United States", "US"),
        ("Mexico", "MX"),
        ("México", "MX"),
        ("United Kingdom", "GB"),
        ("UK", "GB"),
        ("Deutschland", "DE"),
        ("Allemagne", "DE"),
        ("de", "DE"),
        ("India", "IN"),
        ("España", "ES"),
        ("", ""),
        ("Narnia", ""),
    ],
)
def test_country_region(country: str, region: str) -> None:
    assert country_region(country) == region


# Cause: national numbers were read as US numbers. A Mexico City number written nationally
# has ten digits that also make a possible New Jersey number.
MEXICO_CITY = "55 5550 0123"


def test_a_national_number_is_read_in_its_own_country() -> None:
    assert normalize_phone(MEXICO_CITY, "MX") == "+525555500123"
    assert normalize_phone(MEXICO_CITY, "US") == "+15555500123"  # what the old import stored
    assert normalize_phone("0161 496 0123", "GB") == "+441614960123"
    assert normalize_phone("0161 496 0123", "US") == ""


def test_a_term_written_nationally_may_be_any_countrys_number() -> None:
    readings = phone_readings(MEXICO_CITY)
    assert {"+525555500123", "+15555500123"} <= set(readings)
    assert phone_readings("+52 55 5550 0123") == ["+525555500123"]
    assert "+441614960123" in phone_readings("0161 496 0123")  # the trunk 0 dropped
    # Which of the readings the term really is, in the number's own country:
    assert reads_as(MEXICO_CITY, "+525555500123")
    assert reads_as(MEXICO_CITY, "+15555500123")
    assert reads_as("0161 496 0123", "+441614960123")
    assert not reads_as("0161 496 0123", "+11614960123")  # no US number starts with 0
    # +44 is shared by GB, GG, IM and JE, and the drama range is valid in none of them.
    assert reads_as("07700 900123", "+447700900123")
    assert reads_as("+44 7700 900123", "+447700900123")


def test_national_number() -> None:
    assert national_number("+525555500123") == national_number("+15555500123") == "5555500123"


def test_fold() -> None:
    assert fold("Zoë Åberlund") == "zoe aberlund"
    assert fold("Søren Kjærgaard Łukasz Weiß") == "soren kjaergaard lukasz weiss"
