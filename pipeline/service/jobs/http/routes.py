"""The jobs API (``/api/jobs``) and the upload page (``/``): thin handlers over the runner, the
store and the storage.

Every ``/api/jobs`` request needs a key in the ``Authorization`` header (401 otherwise), but a
download may carry a link's token instead (:mod:`.links`). A caller sees only its own jobs:
another key's job is not found (404), whether it exists or not. Nothing here spends quota: a
job's units are reserved by its runner once its list is read (:mod:`..runner`).
"""

from __future__ import annotations

import asyncio
import re
import secrets
import shutil
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from aiohttp import web

from pipeline.service.accounts.quotas import Identity
from pipeline.service.accounts.store import ApiKey
from pipeline.service.errors import (
    InvalidApiKey,
    InvalidParameter,
    InvalidToken,
    JobNotDone,
    NotFound,
    Problem,
    QuotaExceeded,
    TooLarge,
)
from pipeline.service.jobs.http.links import Links
from pipeline.service.jobs.http.status import iso, status_of
from pipeline.service.jobs.http.uploads import (
    JSON_NAME,
    Received,
    options_of,
    receive,
    stem_of,
)
from pipeline.service.jobs.runner import JobRunner
from pipeline.service.jobs.storage import INPUT, OUTPUT, Storage
from pipeline.service.jobs.store import Jobs, parse_cursor
from pipeline.service.jobs.tasks import InspectTask, addresses, settings_of
from pipeline.service.jobs.types import FORMATS, VERDICTS, Job, JobOptions, JobState
from pipeline.service.keys import IDENTITY, SERVICES
from pipeline.service.routes import authenticate, standing
from pipeline.stages.write.outputs import companions

_ID: Final = re.compile(r"j_[A-Za-z0-9_-]{22}")
PREVIEW_ROWS: Final = 6
_TYPES: Final = {
    "csv": "text/csv; charset=utf-8",
    "rejects": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "parquet": "application/vnd.apache.parquet",
}
# The page: nothing but itself may load or run (no inline script or style, no frames, no
# forms sent elsewhere); its requests go to this service only.
PAGE_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
# The report: one self-contained page, its style inline, no script at all.
REPORT_POLICY: Final = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'"
)
_PAGE_FILES: Final = {
    "/": ("index.html", "text/html"),
    "/page.js": ("page.js", "text/javascript"),
    "/page.css": ("page.css", "text/css"),
}


@dataclass
class JobServices:
    """What the jobs' handlers use; built on start-up with the service's."""

    runner: JobRunner
    jobs: Jobs
    storage: Storage
    links: Links
    modes: tuple[str, ...]  # the verify values a job may ask for
    clock: Callable[[], float] = time.time


JOBS = web.AppKey("jobs", JobServices)


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


async def caller(request: web.Request) -> Identity:
    """The key in the Authorization header; bulk jobs take no anonymous caller."""
    identity = await authenticate(request, {}, request.app[SERVICES])
    request[IDENTITY] = identity
    if identity.key is None:
        raise InvalidApiKey("Bulk jobs need an API key: send it as Authorization: Bearer <key>.")
    return identity


def key_id(identity: Identity) -> str:
    assert identity.key is not None
    return identity.key.key_id


async def _own(request: web.Request, identity: Identity) -> Job:
    job_id = request.match_info["id"]
    job = None
    if _ID.fullmatch(job_id):
        js = request.app[JOBS]
        job = await js.jobs.call(js.jobs.store.get, job_id, key_id(identity))
    if job is None:
        raise NotFound("There is no job with this id for this key.")
    return job


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
        _raise_problem(parsed)
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
    _raise_problem(found)
    counted = found.get("rows")
    if counted is not None and counted > settings.max_rows:
        raise TooLarge(
            f"The list holds {counted:,} rows; a job may hold {settings.max_rows:,} "
            "([jobs] max_rows)."
        )
    return received, options, found


def _raise_problem(found: dict[str, Any]) -> None:
    if "problem" in found:
        body = found["problem"]
        problem = Problem(body["detail"])
        problem.status, problem.code, problem.title = body["status"], body["code"], body["title"]
        raise problem


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
    job = await _own(request, await caller(request))
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
    job = await _own(request, identity)
    js = request.app[JOBS]
    if not job.state.finished:
        cancelled = await js.jobs.call(js.jobs.store.cancel, job.id, key_id(identity))
        if cancelled is not None:
            js.runner.wake()
            now = js.clock()
            return web.json_response(
                status_of(cancelled, now, _verifies(request, cancelled)), status=202
            )
        job = await _own(request, identity)  # it finished meanwhile
    await asyncio.to_thread(js.storage.remove, job.id)
    await js.jobs.call(js.jobs.store.delete, job.id)
    return web.Response(status=204)


# --- downloads -------------------------------------------------------------------------------


def _wanted(request: web.Request) -> tuple[str, str | None]:
    fmt = request.query.get("format", "csv")
    verdict = request.query.get("verdict") or None
    if fmt not in (*FORMATS, "rejects"):
        raise InvalidParameter(f"format must be one of {', '.join(FORMATS)} or rejects.")
    if verdict is not None and verdict not in VERDICTS:
        raise InvalidParameter(f"verdict must be one of {', '.join(VERDICTS)}.")
    # The rejects are rows that could not be read: they have no verdict to choose by.
    return fmt, None if fmt == "rejects" else verdict


def file_id(fmt: str, verdict: str | None) -> str:
    return f"result:{fmt}:{verdict or 'all'}"


async def _reachable(request: web.Request, file: str) -> Job:
    """The job a download asks for, by the caller's key or by a link's token for *file*."""
    token = request.query.get("token")
    if token is None or "Authorization" in request.headers:
        return await _own(request, await caller(request))
    js = request.app[JOBS]
    job_id = request.match_info["id"]
    job = await js.jobs.call(js.jobs.store.get, job_id, None) if _ID.fullmatch(job_id) else None
    if job is None:
        raise NotFound("There is no job with this id for this key.")
    services = request.app[SERVICES]
    request[IDENTITY] = Identity(services.client_ip(request), _holder(job))
    if not js.links.opens(token, job.id, job.key_id, file, js.clock()):
        raise InvalidToken(
            "This download link has expired or was made for another file; ask for new links "
            "(GET /api/jobs/{id}/files)."
        )
    return job


def _holder(job: Job) -> ApiKey:
    """The key a link stands for (its id and plan, as the job recorded them)."""
    return ApiKey(job.key_id, job.plan, "", 0.0, None)


def _finished(job: Job) -> None:
    if job.state is not JobState.DONE:
        raise JobNotDone(
            f"The job is {job.state.value}; its files are there once it is done."
            if not job.state.finished
            else f"The job is {job.state.value}: it has no result."
        )


async def result(request: web.Request) -> web.StreamResponse:
    """``GET /api/jobs/{id}/result?format=&verdict=``: the enriched list as ``clean`` wrote it
    (CSV and xlsx made from it on their first download), or its rejects."""
    fmt, verdict = _wanted(request)
    job = await _reachable(request, file_id(fmt, verdict))
    _finished(job)
    if verdict is not None and not job.options.split:
        raise NotFound("This job was not split by verdict: create it with split=true.")
    js = request.app[JOBS]
    parquet = companions(job.output_name)
    if fmt == "rejects":
        name = parquet["rejects"]
    else:
        source = parquet[verdict or "output"]
        name = companions(f"{job.stem}.clean.{fmt}")[verdict or "output"]
        if fmt != "parquet" and not await asyncio.to_thread(
            js.storage.exists, job.id, OUTPUT, name
        ):
            made = await js.runner.converted(job, source, name, fmt)
            _raise_problem(made)
    return await _send(request, job, name, _TYPES[fmt], attachment=True)


async def report(request: web.Request) -> web.StreamResponse:
    """``GET /api/jobs/{id}/report``: the job's report page, as ``clean`` wrote it."""
    job = await _reachable(request, "report")
    _finished(job)
    name = companions(job.output_name)["report"]
    return await _send(request, job, name, "text/html; charset=utf-8", attachment=False)


async def _send(
    request: web.Request, job: Job, name: str, kind: str, attachment: bool
) -> web.StreamResponse:
    js = request.app[JOBS]
    headers = {
        "Content-Type": kind,
        "Cache-Control": "private, no-store",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        **(await standing(request, "email")).headers(),
    }
    if attachment:
        quoted = urllib.parse.quote(name)
        headers["Content-Disposition"] = (
            f"attachment; filename=\"{name}\"; filename*=UTF-8''{quoted}"
        )
    else:
        headers["Content-Security-Policy"] = REPORT_POLICY
    folder = js.storage.local_folder(job.id)
    if folder is not None:
        path = folder / OUTPUT / name
        if not path.is_file():
            raise NotFound("This file of the job is gone (removed, or past its retention).")
        return web.FileResponse(path, headers=headers)
    return await _stream(request, js.storage, job.id, name, headers)


async def _stream(
    request: web.Request, storage: Storage, job_id: str, name: str, headers: dict[str, str]
) -> web.StreamResponse:
    """An object's bytes, read in a thread a chunk at a time and sent as they come."""
    try:
        size = await asyncio.to_thread(storage.size, job_id, OUTPUT, name)
    except FileNotFoundError as exc:
        raise NotFound("This file of the job is gone (removed, or past its retention).") from exc
    response = web.StreamResponse(headers=headers)
    response.content_length = size
    await response.prepare(request)
    with storage.open(job_id, OUTPUT, name) as handle:
        while chunk := await asyncio.to_thread(handle.read, 1 << 20):
            await response.write(chunk)
    await response.write_eof()
    return response


async def files(request: web.Request) -> web.Response:
    """``GET /api/jobs/{id}/files``: a link to each file of a finished job, each with a token
    made for it that expires after ``[jobs] link_ttl`` seconds (a browser downloads by
    following a link, which can carry no key)."""
    job = await _own(request, await caller(request))
    _finished(job)
    js = request.app[JOBS]
    now = js.clock()
    verdicts: list[str | None] = [None, *(VERDICTS if job.options.split else ())]
    found = []
    for fmt in FORMATS:
        for verdict in verdicts:
            name = companions(f"{job.stem}.clean.{fmt}")[verdict or "output"]
            found.append(
                _link(
                    js.links,
                    job,
                    "result",
                    file_id(fmt, verdict),
                    name,
                    now,
                    {"format": fmt, **({"verdict": verdict} if verdict else {})},
                )
            )
    rejects = companions(job.output_name)["rejects"]
    found.append(
        _link(
            js.links, job, "result", file_id("rejects", None), rejects, now, {"format": "rejects"}
        )
    )
    report_name = companions(job.output_name)["report"]
    found.append(_link(js.links, job, "report", "report", report_name, now, {}))
    expires = js.links.expires(js.links.token(job.id, job.key_id, "report", now))
    return web.json_response({"files": found, "expires_at": iso(expires)})


def _link(
    links: Links, job: Job, what: str, file: str, name: str, now: float, query: dict[str, str]
) -> dict[str, Any]:
    token = links.token(job.id, job.key_id, file, now)
    params = urllib.parse.urlencode({**query, "token": token})
    return {
        "file": file,
        "name": name,
        **query,
        "url": f"/api/jobs/{job.id}/{what}?{params}",
    }


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
