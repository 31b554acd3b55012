"""Where a job's completion callback may go (a callback heard is tests/service/jobs/http/
test_states.py's)."""

from __future__ import annotations

import asyncio

import pytest

from pipeline.service.jobs.callbacks import reachable


@pytest.mark.parametrize(
    ("url", "reach", "allowed"),
    [
        ("http://127.0.0.1:8000/hook", "any", True),
        ("http://127.0.0.1:8000/hook", "public", False),
        ("http://10.0.0.5/hook", "public", False),
        ("http://[::1]/hook", "public", False),
        ("http://localhost/hook", "public", False),
        ("https://8.8.8.8/hook", "public", True),
        ("https://8.8.8.8/hook", "off", False),
        ("http:///nohost", "any", False),
        ("http://" + "a" * 70 + ".org/", "public", False),
    ],
)
def test_a_callback_goes_only_where_the_setting_lets_it(
    url: str, reach: str, allowed: bool
) -> None:
    assert asyncio.run(reachable(url, reach)) is allowed
