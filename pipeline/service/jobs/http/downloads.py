"""The jobs' downloads: the enriched list in a format (made from the Parquet a job wrote on
its first download), its rejects, its report, and the links that open each without the key.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from typing import Any, Final

from aiohttp import web

from pipeline.service.accounts.quotas import Identity
from pipeline.service.accounts.store import ApiKey
from pipeline.service.errors import InvalidParameter, InvalidToken, JobNotDone, NotFound
from pipeline.service.jobs.http.access import JOB_ID, JOBS, caller, own, raise_problem
from pipeline.service.jobs.http.links import Links
from pipeline.service.jobs.http.status import iso
from pipeline.service.jobs.storage import OUTPUT, Storage
from pipeline.service.jobs.types import FORMATS, VERDICTS, Job, JobState
from pipeline.service.keys import IDENTITY, SERVICES
from pipeline.service.routes import standing
from pipeline.stages.write.outputs import companions

_TYPES: Final = {
    "csv": "text/csv; charset=utf-8",
    "rejects": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "parquet": "application/vnd.apache.parquet",
}
# The report: one self-contained page, its style inline, no script at all.
REPORT_POLICY: Final = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'"
)


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
        return await own(request, await caller(request))
    js = request.app[JOBS]
    job_id = request.match_info["id"]
    job = await js.jobs.call(js.jobs.store.get, job_id, None) if JOB_ID.fullmatch(job_id) else None
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
            raise_problem(made)
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
    job = await own(request, await caller(request))
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
