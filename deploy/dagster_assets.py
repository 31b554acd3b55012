"""A Dagster asset that cleans a list with listclean's image, and a schedule for it.

The asset runs the image (Containerfile at the repository's top) through dagster-docker's
``execute_docker_container``, and reads the run's summary back as metadata. With listclean
installed in the code location's environment, ``pipeline.clean`` does the same in-process
(docs/python-api.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
from dagster_docker import execute_docker_container

LISTS = Path("/srv/lists")


@dg.asset
def clean_signups(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    execute_docker_container(
        context,
        image="listclean:latest",
        command=["clean", "/data/signups.csv", "-o", "/data/signups.clean.parquet"],
        container_kwargs={
            "volumes": {
                str(LISTS): {"bind": "/data", "mode": "rw"},
                "listclean-cache": {"bind": "/cache", "mode": "rw"},
            }
        },
    )
    summary = json.loads((LISTS / "signups.clean.summary.json").read_text())
    return dg.MaterializeResult(
        metadata={
            "rows_in": summary["rows_in"],
            "safe_to_send": summary["safe_to_send"],
            "verdicts": dg.MetadataValue.json(summary["verdicts"]),
        }
    )


nightly = dg.ScheduleDefinition(
    name="clean_signups_nightly",
    target=dg.AssetSelection.assets(clean_signups),
    cron_schedule="0 2 * * *",
)

defs = dg.Definitions(assets=[clean_signups], schedules=[nightly])
