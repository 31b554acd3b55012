"""A job's process: its reports on its channel, one JSON object a line, and the stage each
engine meter belongs to. (The process runs whole jobs in tests/service/jobs/http/.)"""

from __future__ import annotations

import io
import json

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
