"""The runner's own rules: which cores jobs get, where a callback may go. (Jobs run end to end
in tests/service/jobs/http/, and across instances in test_instances.py.)"""

from __future__ import annotations

import asyncio

import pytest

from pipeline.service.jobs.runner import job_cpus, reachable


@pytest.mark.parametrize(
    ("cores", "available", "pinned"),
    [
        (0, {0, 1}, [1]),
        (0, {0, 1, 2, 3}, [1, 2, 3]),
        (0, {0}, [0]),
        (2, {0, 1, 2, 3}, [2, 3]),
        (9, {0, 1}, [0, 1]),
        (1, {4, 7}, [7]),
    ],
)
def test_jobs_get_all_cores_but_one_unless_told(
    cores: int, available: set[int], pinned: list[int]
) -> None:
    assert job_cpus(cores, available) == pinned


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
