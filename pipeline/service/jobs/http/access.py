"""Who asks, and for which job: the jobs' handlers' shared ground.

Every ``/api/jobs`` request needs a key in the ``Authorization`` header (401 otherwise; a key
does not belong in a URL, so ``apikey=`` is not read here), but a download may carry a link's
token instead (:mod:`.links`, :mod:`.downloads`). A caller sees only its own jobs: another key's
job is not found (404), whether it exists or not.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web

from pipeline.service.accounts.quotas import Identity
from pipeline.service.errors import InvalidApiKey, NotFound, Problem
from pipeline.service.jobs.http.links import Links
from pipeline.service.jobs.runner import JobRunner
from pipeline.service.jobs.storage import Storage
from pipeline.service.jobs.store import Jobs
from pipeline.service.jobs.types import Job
from pipeline.service.keys import IDENTITY, SERVICES
from pipeline.service.routes import authenticate

JOB_ID: Final = re.compile(r"j_[A-Za-z0-9_-]{22}")


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


async def own(request: web.Request, identity: Identity) -> Job:
    """The job of the request's path, if it is *identity*'s; else the 404."""
    job_id = request.match_info["id"]
    job = None
    if JOB_ID.fullmatch(job_id):
        js = request.app[JOBS]
        job = await js.jobs.call(js.jobs.store.get, job_id, key_id(identity))
    if job is None:
        raise NotFound("There is no job with this id for this key.")
    return job


def raise_problem(found: dict[str, Any]) -> None:
    """The problem a job's task answered, if it answered one, raised as the answer."""
    if "problem" in found:
        body = found["problem"]
        problem = Problem(body["detail"])
        problem.status, problem.code, problem.title = body["status"], body["code"], body["title"]
        raise problem
