"""What a command tells its user on standard error: text lines, or JSON records for log
collectors (``--log-format json``), and progress meters for long stages.

Text lines read ``listclean: warning: ...``; a JSON record is one object a line::

    {"time": "2026-11-25T19:31:11Z", "level": "warning", "event": "rejected",
     "message": "3 rows were rejected ...", "rows": 3}

Progress: on a terminal, a tqdm bar per stage; otherwise (a cron mail, an Airflow log, a
Kubernetes pod's log) one line every ``[run] progress_every`` seconds while a stage runs, with
its count, rate and, when the total is known, the time left. A stage shorter than that period
writes no progress line at all.
"""

from __future__ import annotations

import enum
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from pipeline.core.clock import now
from pipeline.core.progress import Progress, ProgressFactory


class LogFormat(enum.StrEnum):
    TEXT = "text"
    JSON = "json"


class Log:
    """The command's voice on *stream* (standard error)."""

    def __init__(self, fmt: LogFormat = LogFormat.TEXT, stream: TextIO | None = None) -> None:
        self.format = fmt
        self._stream = stream or sys.stderr
        self._lock = threading.Lock()  # progress lines come from a timer thread

    def info(self, event: str, message: str, **fields: Any) -> None:
        self.emit("info", event, message, **fields)

    def warning(self, event: str, message: str, **fields: Any) -> None:
        self.emit("warning", event, message, **fields)

    def error(self, event: str, message: str, **fields: Any) -> None:
        self.emit("error", event, message, **fields)

    def emit(self, level: str, event: str, message: str, **fields: Any) -> None:
        if self.format is LogFormat.JSON:
            record = {"time": now(), "level": level, "event": event, "message": message, **fields}
            line = json.dumps(record, ensure_ascii=False, default=str)
        else:
            line = f"listclean: {'' if level == 'info' else level + ': '}{message}"
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()

    def meters(self, every: float, quiet: bool) -> ProgressFactory | None:
        """How stages show progress: bars on a terminal, periodic lines in a log, or not at
        all (*quiet*, or *every* is 0)."""
        if quiet:
            return None
        if self.format is LogFormat.TEXT and self._stream.isatty():
            return _bar
        if every <= 0:
            return None

        def factory(total: int | None, label: str, unit: str) -> Progress:
            return LogMeter(self, every, total, label, unit)

        return factory


def _bar(total: int | None, label: str, unit: str) -> Progress:
    from tqdm import tqdm  # here: the parser imports this module (--help answers at once)

    bar: Progress = tqdm(
        total=total, desc=label, unit=f" {unit}", leave=False, file=sys.stderr, unit_scale=True
    )
    return bar


class LogMeter:
    """A stage's progress as a log line every *every* seconds, from a timer thread (a stage
    waiting on a slow server still reports), and a last line when it ends, if it wrote any."""

    def __init__(
        self,
        log: Log,
        every: float,
        total: int | None,
        label: str,
        unit: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.done = 0
        self._log = log
        self._total = total
        self._label = label
        self._unit = unit
        self._clock = clock
        self._started = clock()
        self._written = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, args=(every,), daemon=True)
        self._thread.start()

    def update(self, n: float | None = 1) -> bool | None:
        self.done += int(n or 0)
        return None

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        if self._written:
            self._write(final=True)

    def _tick(self, every: float) -> None:
        while not self._stop.wait(every):
            self._write(final=False)

    def _write(self, final: bool) -> None:
        self._written = True
        seconds = max(self._clock() - self._started, 1e-9)
        rate = self.done / seconds
        fields: dict[str, Any] = {
            "stage": self._label,
            "unit": self._unit,
            "done": self.done,
            "total": self._total,
            "per_second": round(rate, 1),
            "seconds": round(seconds, 1),
        }
        units = self._unit + ("es" if self._unit.endswith("s") else "s")  # address, row
        text = f"{self._label}: {self.done:,}"
        if self._total is not None:
            share = self.done / self._total if self._total else 1.0
            text += f" of {self._total:,} {units} ({share:.1%})"
        else:
            text += f" {units}"
        text += f", {rate:,.1f}/s"
        if final:
            text += f", done in {duration(seconds)}"
        elif self._total is not None and rate > 0:
            left = (self._total - self.done) / rate
            fields["eta_seconds"] = round(left)
            text += f", about {duration(left)} left"
        self._log.info("progress", "progress: " + text, **fields)


def duration(seconds: float) -> str:
    """``45 s``, ``12 min 05 s``, ``3 h 20 min``."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
