"""A job's process: its reports on its channel, one JSON object a line, and the stage each
engine meter belongs to. (The process runs whole jobs in tests/service/jobs/http/.)"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

from pipeline.core.environment import LIST_ENVIRONMENT
from pipeline.service.jobs.worker import Channel, Refused, meters


def test_meters_report_their_job_stage() -> None:
    out = io.StringIO()
    channel = Channel(out, io.StringIO())
    factory = meters(channel)
    for label in ("read", "DNS", "SMTP", "zerobounce", "write"):
        meter = factory(10, label, "row")
        meter.update(4)
        meter.close()
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {(e["name"], e["done"]) for e in events if e["done"]} == {
        ("read", 4),
        ("domains", 4),
        ("verify", 4),
        ("write", 4),
    }
    assert all(e["event"] == "stage" and e["total"] == 10 for e in events)


def test_an_instance_that_is_gone_refuses_the_job() -> None:
    channel = Channel(io.StringIO(), io.StringIO(""))
    try:
        channel.answer()
    except Refused as refused:
        assert "stopped" in refused.problem["detail"]
    else:
        raise AssertionError("no answer is a refusal")
    assert Channel(io.StringIO(), io.StringIO('{"go": true}\n')).answer() == {"go": True}


def test_a_job_process_tells_polars_what_clean_does() -> None:
    """A bulk job runs the stages as `clean` does, so its process sets the same polars
    environment before polars is imported: polars' own allocator settings come first (it
    puts them before what it finds), ours after them."""
    code = (
        "import json, os, sys\n"
        "from pipeline.service.jobs import worker\n"
        "from pipeline.core.environment import LIST_ENVIRONMENT\n"
        "assert worker.main([]) == 0\n"  # no job comes: it returns once imported
        "print(json.dumps({n: os.environ[n] for n in LIST_ENVIRONMENT}), file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in LIST_ENVIRONMENT}
    done = subprocess.run(
        [sys.executable, "-c", code], input="", capture_output=True, text=True, check=True, env=env
    )
    found = json.loads(done.stderr.strip().splitlines()[-1])
    allocator = found["_RJEM_MALLOC_CONF"]
    assert allocator.endswith("," + LIST_ENVIRONMENT["_RJEM_MALLOC_CONF"])
    assert allocator != LIST_ENVIRONMENT["_RJEM_MALLOC_CONF"]  # polars found ours: set before
    assert found["POLARS_CSV_CHUNK_SIZE"] == LIST_ENVIRONMENT["POLARS_CSV_CHUNK_SIZE"]
