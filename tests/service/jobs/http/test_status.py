"""A job as the API shows it: its stages, its time left, its summary's names."""

from __future__ import annotations

from dataclasses import replace

from pipeline.service.jobs.http.status import eta, shown_summary, stages_of, status_of
from pipeline.service.jobs.types import Job, JobOptions, JobState

RUNNING = Job(
    id="j_" + "a" * 22,
    key_id="k_1",
    plan="default",
    state=JobState.RUNNING,
    created_at=1000.0,
    name="list.csv",
    stem="list",
    input_bytes=10,
    options=JobOptions(),
    inspected={"rows": 1000},
    progress={"attempt_started": 1000.0, "stages": {"read": {"done": 500, "total": None}}},
)


def test_the_read_stage_counts_against_the_rows_the_list_was_seen_to_hold() -> None:
    stages = stages_of(RUNNING, verify=False)
    assert stages == [
        {"name": "read", "done": 500, "total": 1000},
        {"name": "domains", "done": 0, "total": None},
        {"name": "write", "done": 0, "total": None},
    ]
    assert [s["name"] for s in stages_of(RUNNING, verify=True)] == [
        "read",
        "domains",
        "verify",
        "write",
    ]


def test_the_time_left_scales_the_time_so_far_by_the_work_left() -> None:
    stages = stages_of(RUNNING, verify=False)
    # Half the read is a fifth of the work (read weighs 0.4 of 0.85): 10 s took a fifth.
    assert eta(RUNNING, stages, 1010.0) == round(10 * (1 - 0.2 / 0.85) / (0.2 / 0.85), 1)
    writing = replace(
        RUNNING,
        progress={
            "attempt_started": 1000.0,
            "stages": {
                "read": {"done": 1000, "total": 1000},
                "domains": {"done": 5, "total": 5},
                "write": {"done": 900, "total": 1000},
            },
        },
    )
    assert eta(writing, stages_of(writing, False), 1010.0) < 1.0
    assert eta(replace(RUNNING, progress={}), stages, 1010.0) is None  # nothing to go on
    assert eta(replace(RUNNING, state=JobState.QUEUED), stages, 1010.0) is None


def test_a_summary_names_files_never_the_servers_paths() -> None:
    summary = {
        "output": "/srv/jobs/j_x/out/list.clean.parquet",
        "rejects_file": "s3://bucket/jobs/j_x/out/list.clean.rejects.csv",
        "files": {"report": "/srv/jobs/j_x/out/list.clean.report.html"},
        "rows_in": 3,
    }
    assert shown_summary(summary) == {
        "output": "list.clean.parquet",
        "rejects_file": "list.clean.rejects.csv",
        "files": {"report": "list.clean.report.html"},
        "rows_in": 3,
    }


def test_a_done_job_shows_its_summary_and_no_time_left() -> None:
    done = replace(RUNNING, state=JobState.DONE, summary={"rows_in": 1000, "output": "a/b.pq"})
    shown = status_of(done, 2000.0, verify=False)
    assert shown["eta_seconds"] == 0 and shown["summary"]["output"] == "b.pq"
    assert shown["rows_read"] == 1000
    assert all(s["done"] == s["total"] for s in shown["stages"] if s["total"] is not None)
