"""The runner's own rules: which cores jobs get. (Jobs run end to end in tests/service/jobs/http/,
and across instances in test_instances.py.)"""

from __future__ import annotations

import pytest

from pipeline.service.jobs.runner import job_cpus


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
