"""The command's voice: text lines or JSON records, and progress meters for logs."""

from __future__ import annotations

import io
import json
import time

import pytest

from pipeline.cli.log import Log, LogFormat, LogMeter, duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_text_lines_name_their_level() -> None:
    out = io.StringIO()
    log = Log(LogFormat.TEXT, out)
    log.info("x", "pre-flight: 3 addresses")
    log.warning("x", "two columns")
    log.error("x", "no such file")
    assert out.getvalue().splitlines() == [
        "listclean: pre-flight: 3 addresses",
        "listclean: warning: two columns",
        "listclean: error: no such file",
    ]


def test_json_records_escape_what_they_carry() -> None:
    out = io.StringIO()
    Log(LogFormat.JSON, out).warning("rejected", 'a "quoted"\nline', rows=3)
    (line,) = out.getvalue().splitlines()
    record = json.loads(line)
    assert record["message"] == 'a "quoted"\nline' and record["rows"] == 3
    assert record["level"] == "warning" and record["event"] == "rejected"


def test_a_meter_writes_now_and_then_and_a_last_line() -> None:
    out = io.StringIO()
    clock = Clock()
    bar = LogMeter(Log(LogFormat.JSON, out), 0.05, 1000, "SMTP", "address", clock)
    clock.now += 10
    bar.update(250)
    deadline = time.monotonic() + 5
    while not out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    clock.now += 10
    bar.update(750)
    bar.close()
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    first, last = records[0], records[-1]
    assert (first["done"], first["total"], first["per_second"]) == (250, 1000, 25.0)
    assert first["eta_seconds"] == 30
    assert last["done"] == 1000 and "done in 20 s" in last["message"]
    assert "eta_seconds" not in last


def test_a_stage_shorter_than_the_period_writes_nothing() -> None:
    out = io.StringIO()
    bar = LogMeter(Log(LogFormat.TEXT, out), 60.0, None, "read", "row")
    bar.update(5)
    bar.close()
    bar.close()  # twice is harmless
    assert out.getvalue() == ""


def test_meters_are_bars_on_a_terminal_lines_in_a_log_none_when_quiet() -> None:
    assert Log(LogFormat.TEXT, io.StringIO()).meters(30, quiet=True) is None
    assert Log(LogFormat.TEXT, io.StringIO()).meters(0, quiet=False) is None
    assert Log(LogFormat.TEXT, io.StringIO()).meters(30, quiet=False) is not None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.4, "0 s"), (45, "45 s"), (725, "12 min 05 s"), (12_000, "3 h 20 min")],
)
def test_durations_read_as_people_say_them(seconds: float, text: str) -> None:
    assert duration(seconds) == text
