"""The jobs API's handlers that make, show, list and end jobs, and the upload page (``/``):
thin handlers over the runner, the store and the storage; the downloads are
:mod:`.downloads`'s. Nothing here spends quota: a job's units are reserved by its runner once
its list is read (:mod:`pipeline.service.jobs.runner`).
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import time
from importlib import resources
from pathlib import Path
from typing import Any, Final

from aiohttp import web

from pipeline.service.accounts.quotas import Identity
from pipeline.service.errors import InvalidParameter, QuotaExceeded, TooLarge
from pipeline.service.jobs.http.access import JOBS, caller, key_id, own, raise_problem
from pipeline.service.jobs.http.downloads import files, report, result
from pipeline.service.jobs.http.status import status_of
from pipeline.service.jobs.http.uploads import (
    JSON_NAME,
    Received,
    options_of,
    receive,
    stem_of,
)
from pipeline.service.jobs.storage import INPUT, Storage
from pipeline.service.jobs.store import parse_cursor
from pipeline.service.jobs.tasks import InspectTask, addresses, settings_of
from pipeline.service.jobs.types import Job, JobOptions, JobState
from pipeline.service.keys import SERVICES

PREVIEW_ROWS: Final = 6
# The page: nothing but itself may load or run (no inline script or style, no frames, no
# forms sent elsewhere); its requests go to this service only.
PAGE_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
_PAGE_FILES: Final = {
    "/": ("index.html", "text/html"),
    "/page.js": ("page.js", "text/javascript"),
    "/page.css": ("page.css", "text/css"),
}


def add_job_routes(app: web.Application) -> None:
    app.router.add_post("/api/jobs", create)
    app.router.add_get("/api/jobs", listing, allow_head=False)
    app.router.add_post("/api/jobs/preview", preview)
    app.router.add_get("/api/jobs/{id}", show, allow_head=False)
    app.router.add_delete("/api/jobs/{id}", delete)
    app.router.add_get("/api/jobs/{id}/files", files, allow_head=False)
    app.router.add_get("/api/jobs/{id}/result", result, allow_head=False)
    app.router.add_get("/api/jobs/{id}/report", report, allow_head=False)
    for path in _PAGE_FILES:
        app.router.add_get(path, page)


# --- creating a job ------------------------------------------------------------------------


async def create(request: web.Request) -> web.Response:
    """``POST /api/jobs``: the list uploaded and read as ``clean`` would, then queued."""
    identity = await caller(request)
    await _some_left(request, identity)
    js = request.app[JOBS]
    js.runner.warm()
    job_id = "j_" + secrets.token_urlsafe(16)
    folder = js.storage.local_folder(job_id)
    landing = (folder or js.runner.spool / job_id) / INPUT
    try:
        received, options, found = await _upload(request, landing, 0)
        name = received.name or "addresses (JSON)"
        stem = "addresses" if received.json else stem_of(received.name)
        job = Job(
            id=job_id,
            key_id=key_id(identity),
            plan=identity.key.plan if identity.key else "",
            state=JobState.QUEUED,
            created_at=js.clock(),
            name=name,
            stem=stem,
            input_bytes=received.size,
            options=options,
            inspected=found,
            input_name=received.path.name,
        )
        if folder is None:  # an object store: the list goes there, once checked
            await asyncio.to_thread(js.storage.put, received.path, job_id, INPUT, job.input_name)
        await js.jobs.call(js.jobs.store.create, job)
    except BaseException:
        await asyncio.to_thread(_remove, js.storage, job_id, landing.parent)
        raise
    js.runner.wake()
    url = f"/api/jobs/{job_id}"
    body = {"id": job_id, "url": url, "state": JobState.QUEUED.value}
    return web.json_response(body, status=202, headers={"Location": url})


async def preview(request: web.Request) -> web.Response:
    """``POST /api/jobs/preview``: a list (or its first part) read as a job would read it: its
    kind, columns, email column and first rows. Nothing is kept, nothing is charged."""
    identity = await caller(request)
    js = request.app[JOBS]
    js.runner.warm()
    landing = js.runner.spool / ("p_" + secrets.token_hex(8))
    try:
        received, options, found = await _upload(request, landing, PREVIEW_ROWS)
    finally:
        await asyncio.to_thread(shutil.rmtree, landing, True)
    left = (await request.app[SERVICES].quotas.peek(identity, "email")).quota.remaining
    known = found.get("rows")
    body = {
        **found,
        "name": received.name,
        "bytes": received.size,
        "options": options.shown(),
        "units_at_most": known,
        "units_left": left,
    }
    return web.json_response(body)


async def _upload(
    request: web.Request, landing: Path, rows: int
) -> tuple[Received, JobOptions, dict[str, Any]]:
    """The upload received into *landing*, its options checked, its list read as ``clean``
    would (with its first *rows*); a refusal is raised as its problem."""
    js = request.app[JOBS]
    settings = js.runner.settings
    received = await receive(request, settings, landing)
    path = received.path
    if received.json:
        parsed = await js.runner.task(addresses, str(path))
        raise_problem(parsed)
        path, received.fields = Path(parsed["path"]), parsed["fields"]
        path.with_name(JSON_NAME).unlink(missing_ok=True)
        received.path = path
    longest = request.app[SERVICES].config.service.max_value_length
    options = options_of(received.fields, js.modes, settings.callbacks, longest)
    if received.json and (options.email_columns or options.sheet or options.member):
        raise InvalidParameter(
            "A JSON body's list has one column: email_column, sheet and "
            "member are for uploaded files."
        )
    config = request.app[SERVICES].config.engine
    task = InspectTask(str(path), received.name or "addresses", options, settings_of(config), rows)
    found = await js.runner.inspect(task)
    raise_problem(found)
    counted = found.get("rows")
    if counted is not None and counted > settings.max_rows:
        raise TooLarge(
            f"The list holds {counted:,} rows; a job may hold {settings.max_rows:,} "
            "([jobs] max_rows)."
        )
    return received, options, found


async def _some_left(request: web.Request, identity: Identity) -> None:
    """A key with no unit left is refused before its upload is read."""
    decision = await request.app[SERVICES].quotas.peek(identity, "email")
    quota = decision.quota
    if quota.remaining == 0:
        renews = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(quota.end))
        raise QuotaExceeded(
            f"The {quota.policy.name} quota of {quota.policy.limit} units is used up for this "
            f"key; it renews at {renews}. A job needs a unit per distinct address it checks.",
            {"Retry-After": str(max(1, quota.seconds_to_reset))},
        )


def _remove(storage: Storage, job_id: str, landing: Path) -> None:
    shutil.rmtree(landing, ignore_errors=True)
    if storage.remote:
        storage.remove(job_id)


# --- reading, listing, cancelling ----------------------------------------------------------


def _verifies(request: web.Request, job: Job) -> bool:
    mode = job.options.verify or request.app[SERVICES].config.engine.verify.mode
    return mode != "none"


async def show(request: web.Request) -> web.Response:
    """``GET /api/jobs/{id}``: the job's state, progress, time left, and summary when done."""
    job = await own(request, await caller(request))
    now = request.app[JOBS].clock()
    return web.json_response(status_of(job, now, _verifies(request, job)))


async def listing(request: web.Request) -> web.Response:
    """``GET /api/jobs?limit=&cursor=``: the caller's jobs, newest first."""
    identity = await caller(request)
    js = request.app[JOBS]
    limit_text = request.query.get("limit", "20")
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= 100:
        raise InvalidParameter("limit must be a whole number from 1 to 100.")
    cursor_text = request.query.get("cursor")
    cursor = parse_cursor(cursor_text) if cursor_text else None
    if cursor_text and cursor is None:
        raise InvalidParameter("cursor must be the next_cursor of an earlier page.")
    page = await js.jobs.call(js.jobs.store.page, key_id(identity), int(limit_text), cursor)
    now = js.clock()
    jobs = [status_of(job, now, _verifies(request, job)) for job in page.jobs]
    for job in jobs:
        job.pop("summary", None)  # the list stays light: GET the job for its summary
    return web.json_response({"jobs": jobs, "next_cursor": page.next_cursor})


async def delete(request: web.Request) -> web.Response:
    """``DELETE /api/jobs/{id}``: a queued or running job is cancelled (202, its units given
    back); a finished one's files and record are removed (204)."""
    identity = await caller(request)
    job = await own(request, identity)
    js = request.app[JOBS]
    if not job.state.finished:
        cancelled = await js.jobs.call(js.jobs.store.cancel, job.id, key_id(identity))
        if cancelled is not None:
            js.runner.wake()
            now = js.clock()
            return web.json_response(
                status_of(cancelled, now, _verifies(request, cancelled)), status=202
            )
        job = await own(request, identity)  # it finished meanwhile
    await asyncio.to_thread(js.storage.remove, job.id)
    await js.jobs.call(js.jobs.store.delete, job.id)
    return web.Response(status=204)


# --- the page --------------------------------------------------------------------------------


async def page(request: web.Request) -> web.Response:
    """The upload page: three files shipped with the package, served as they are."""
    request.app[JOBS].runner.warm()
    name, kind = _PAGE_FILES[request.path]
    body = resources.files("pipeline.service.jobs.http").joinpath("page", name).read_bytes()
    headers = {
        "Content-Security-Policy": PAGE_POLICY,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "Cache-Control": "no-cache",
    }
    return web.Response(body=body, content_type=kind, charset="utf-8", headers=headers)
