"""A job as the API shows it: its state, progress, time left, units, and once done its summary.

The summary is ``clean``'s ``summary.json`` for the job's list, key for key and number for
number; only its file names are shown as names, never as paths of the service's storage.
The time left (``eta_seconds``) is the time the job ran so far, scaled by the share of its
work still to do: each stage's share of its own total, weighted by what each stage usually
costs (:data:`WEIGHTS`); None until there is enough to go on.
"""

from __future__ import annotations

import datetime as dt
from pathlib import PurePosixPath
from typing import Any, Final

from pipeline.service.jobs.types import STAGES, Job, JobState

# What each stage usually costs of a job's time (a list read and written dominates; DNS for
# new domains and address checks vary most, and the estimate follows them as they go).
WEIGHTS: Final = {"read": 0.4, "domains": 0.15, "verify": 0.2, "write": 0.3}
_SOONEST: Final = 0.02  # share of the work done before a time left is told
_PATHS: Final = ("output", "rejects_file")


def iso(when: float | None) -> str | None:
    if when is None:
        return None
    return dt.datetime.fromtimestamp(when, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_of(job: Job, now: float, verify: bool) -> dict[str, Any]:
    """The job as ``GET /api/jobs/{id}`` answers it; *verify*: whether it checks addresses
    (its stages then include verify)."""
    progress = job.progress
    stages = stages_of(job, verify)
    done = job.state is JobState.DONE
    body: dict[str, Any] = {
        "id": job.id,
        "url": f"/api/jobs/{job.id}",
        "state": job.state.value,
        "name": job.name,
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
        "options": job.options.shown(),
        "input": _input(job),
        "rows_read": (job.summary or {}).get("rows_in", progress.get("rows_read", 0)),
        "distinct_addresses": (job.summary or {}).get(
            "distinct_addresses", progress.get("distinct_addresses")
        ),
        "units": {
            "needed": job.units.needed if job.units.needed is not None else progress.get("units"),
            "reserved": job.units.reserved,
            "charged": job.units.charged if job.state.finished else 0,
            "returned": job.units.returned,
        },
        "stages": stages,
        "eta_seconds": 0 if done else eta(job, stages, now),
        "cancel_requested": job.cancel_requested,
    }
    if done and job.summary is not None:
        body["summary"] = shown_summary(job.summary)
    if job.error is not None:
        body["error"] = job.error
    return body


def _input(job: Job) -> dict[str, Any]:
    found = job.inspected
    keys = ("format", "compression", "encoding", "delimiter", "email_column", "rows")
    return {"bytes": job.input_bytes, **{k: found.get(k) for k in keys}}


def stages_of(job: Job, verify: bool) -> list[dict[str, Any]]:
    """Each stage of the job with its done and total (total None while it is not known)."""
    reported = job.progress.get("stages", {})
    finished = job.state is JobState.DONE
    rows = job.inspected.get("rows") or job.inspected.get("rows_expected")
    shown = []
    for name in STAGES:
        if name == "verify" and not verify:
            continue
        stage = reported.get(name, {})
        done, total = stage.get("done", 0), stage.get("total")
        if name == "read" and total is None:
            total = rows
        if finished and total is not None:
            done = total
        shown.append({"name": name, "done": done, "total": total})
    return shown


def eta(job: Job, stages: list[dict[str, Any]], now: float) -> float | None:
    """Seconds the running *job* still needs, as far as its progress tells (None: not yet)."""
    started = job.progress.get("attempt_started")
    if job.state is not JobState.RUNNING or started is None:
        return None
    weights = {s["name"]: WEIGHTS[s["name"]] for s in stages}
    whole = sum(weights.values())
    share = 0.0
    for index, stage in enumerate(stages):
        later_begun = any(s["done"] for s in stages[index + 1 :])
        total = stage["total"]
        part = 1.0 if later_begun else (min(1.0, stage["done"] / total) if total else 0.0)
        share += weights[stage["name"]] / whole * part
    if share < _SOONEST:
        return None
    return round((now - float(started)) * (1 - share) / share, 1)


def shown_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary.json`` with its file names as names (the job's own, not the storage's paths)."""
    shown = dict(summary)
    for key in _PATHS:
        if isinstance(shown.get(key), str):
            shown[key] = PurePosixPath(shown[key]).name
    files = shown.get("files")
    if isinstance(files, dict):
        shown["files"] = {k: PurePosixPath(str(v)).name for k, v in files.items()}
    return shown
