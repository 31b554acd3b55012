"""The value types of bulk jobs: a job's state, what it was asked, where it stands.

A job goes ``queued`` -> ``running`` -> ``done`` | ``failed`` | ``cancelled``; a running job
whose instance stopped (a restart, a crash) goes back to ``queued`` and runs again on the
units it reserved. Its record (:class:`Job`) lives in the service's store; its files in the
jobs' storage (:mod:`.storage`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Final


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


# The stages a job reports, in their order, and the meters of the engine that feed each
# (pipeline.core.progress labels: the read and write passes, DNS, an address checker's).
STAGES: Final = ("read", "domains", "verify", "write")
STAGE_OF_METER: Final = {"read": "read", "DNS": "domains", "write": "write"}
# The outputs a job can be downloaded as; the one it is written in is Parquet, the others are
# made from it on the first download, by the same sinks `clean` writes them with.
FORMATS: Final = ("csv", "xlsx", "parquet")
# --split's roles: ?verdict= on a download.
VERDICTS: Final = ("valid", "risky", "invalid", "suppressed")


# The options a job takes, as form fields or JSON members (clean's flags, and a callback).
OPTION_NAMES: Final = (
    "email_column", "encoding", "header_row", "sheet", "member", "verify", "split", "callback_url",
)  # fmt: skip


@dataclass(frozen=True)
class JobOptions:
    """What a job was asked, as ``clean``'s options: all optional."""

    email_columns: tuple[str, ...] = ()
    encoding: str | None = None
    header_row: int | None = None
    sheet: str | None = None
    member: str | None = None
    verify: str | None = None  # None: the service's [verify] mode (as the plan allows it)
    split: bool = False
    callback_url: str | None = None

    def as_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> JobOptions:
        data = json.loads(text)
        data["email_columns"] = tuple(data.get("email_columns", ()))
        return cls(**data)

    def shown(self) -> dict[str, Any]:
        """The options as the API shows them back (the names it takes)."""
        shown = {k: v for k, v in asdict(self).items() if k != "email_columns"}
        shown["email_column"] = list(self.email_columns)
        return shown


@dataclass(frozen=True)
class Units:
    """A job's account of the ``/api/email`` quota: what it needs (known once the list is
    read), what it reserved and in which window, and what it gave back."""

    needed: int | None = None
    reserved: int = 0
    policy: str | None = None  # e.g. "email-month"
    window: int | None = None  # the window's start, Unix seconds
    returned: int = 0

    @property
    def charged(self) -> int:
        return self.reserved - self.returned


@dataclass(frozen=True)
class Job:
    """One job as its store holds it."""

    id: str
    key_id: str
    plan: str
    state: JobState
    created_at: float
    name: str  # the list's name as uploaded
    stem: str  # the name its files are written under (safe on any storage)
    input_bytes: int
    options: JobOptions
    inspected: dict[str, Any] = field(default_factory=dict)  # the list as first read
    progress: dict[str, Any] = field(default_factory=dict)
    units: Units = field(default_factory=Units)
    started_at: float | None = None
    finished_at: float | None = None
    summary: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # a problem document
    owner: str | None = None  # the instance running it
    heartbeat_at: float | None = None
    cancel_requested: bool = False
    attempts: int = 0
    input_name: str = ""  # the uploaded file, inside the job's input folder

    @property
    def output_name(self) -> str:
        """The enriched list as the job writes it (its companions beside it)."""
        return f"{self.stem}.clean.parquet"


@dataclass(frozen=True)
class Page:
    """One page of a caller's jobs, newest first, and the cursor to the next, if any."""

    jobs: list[Job]
    next_cursor: str | None
