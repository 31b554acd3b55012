"""An Airflow DAG that cleans a list every night with listclean's image.

The task runs the image (Containerfile at the repository's top) with the Docker provider; its
cache volume carries what one night learned to the next. The run's summary lands beside the
output (``*.summary.json``); the task fails when listclean exits non-zero (2: bad input,
3: no usable resolver, 4: a ``--fail-on-*`` share crossed).

Inside Python instead (listclean installed in Airflow's environment), see docs/python-api.md.
"""

from __future__ import annotations

import pendulum
from airflow import DAG
from airflow.providers.docker.operators.docker import DockerOperator
from docker.types import Mount

with DAG(
    dag_id="listclean_nightly",
    schedule="0 2 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # the runs share one cache volume
) as dag:
    DockerOperator(
        task_id="clean_signups",
        image="listclean:latest",
        command=[
            "clean",
            "/data/signups.csv",
            "-o",
            "/data/signups.clean.parquet",
            "--log-format",
            "json",
            "--fail-on-invalid",
            "0.5",
        ],
        mounts=[
            Mount(source="/srv/lists", target="/data", type="bind"),
            Mount(source="listclean-cache", target="/cache", type="volume"),
        ],
        auto_remove="success",
        mount_tmp_dir=False,
    )
