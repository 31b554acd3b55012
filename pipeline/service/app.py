"""The HTTP service: ``create_app()`` builds the aiohttp application.

Resources (the service database, the domain cache, the resolver, the engine, the contact
store's worker thread) are opened in ``cleanup_ctx`` and closed there on shutdown, after
in-flight requests have finished; while serving, a task watches the resolver's health. Handlers
are thin (see ``routes.py``); errors become problem details in :func:`problem_middleware`,
which also gives back the quota unit of a request that failed on our side (a 5xx is never
charged) and puts the rate-limit headers on every response of the quota-counted endpoints.
Serve it with :class:`~pipeline.service.connections.protocol.ServiceRunner` (or
``protocol.serve``), so that requests aiohttp cannot parse are answered in the same problem shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from aiohttp import web
from aiohttp.typedefs import Handler

from pipeline.core.assembly.build import EngineOptions, open_engine
from pipeline.core.contacts.store import ContactStore
from pipeline.core.db.database import Where, store_where
from pipeline.core.domains.shapes import AnswerShapes
from pipeline.core.engine import Engine, verify_many_json
from pipeline.core.mailboxes.vendors.checker import unpaid
from pipeline.core.text import failure_line, for_log
from pipeline.service.accounts.quotas import Decision, Quotas
from pipeline.service.accounts.state import LiveState, open_live
from pipeline.service.batcher import MicroBatcher
from pipeline.service.connections.admission import Admission, ConnectionLimits
from pipeline.service.connections.logs import log_failure
from pipeline.service.errors import (
    InternalError,
    InvalidParameter,
    MethodNotAllowed,
    NotFound,
    Problem,
)
from pipeline.service.jobs.http.access import JOBS, JobServices
from pipeline.service.jobs.http.links import Links
from pipeline.service.jobs.http.routes import add_job_routes
from pipeline.service.jobs.runner import Engine as JobEngine
from pipeline.service.jobs.runner import JobRunner
from pipeline.service.jobs.storage import Storage, default_root
from pipeline.service.jobs.store import Jobs, JobStore
from pipeline.service.keys import (
    ADMISSION,
    CONNECTIONS,
    DECISION,
    IDENTITY,
    SERVICES,
    Connections,
    Services,
)
from pipeline.service.requests.guard import AuthThrottle
from pipeline.service.requests.params import Limits
from pipeline.service.routes import add_routes, standing
from pipeline.service.settings import ServiceConfig, with_shared_state

log = logging.getLogger("listclean.service")

# Paths whose requests are counted, and the endpoint name their counters and policies use.
COUNTED = {"/api/email": "email", "/api/find": "find"}
# The bulk jobs' paths: their answers report the /api/email counter the jobs charge, and their
# uploads are bounded by a transfer rate and a size, not by the body timeout.
JOBS_PATH = "/api/jobs"
# The status the access log shows for a request whose client left before its answer.
CLIENT_CLOSED_REQUEST = 499


@dataclass(frozen=True)
class Paths:
    db: Where  # keys and quota counters: a SQLite file or a postgresql:// URL
    cache: Path  # the domain cache shared with the batch pipeline (per instance)
    data: Path | None = None  # where the jobs' files go when [jobs] storage names no place


def _jobs(
    config: ServiceConfig,
    paths: Paths,
    offline: bool,
    clock: Callable[[], float],
    loopback_only: bool,
    api_keys: Mapping[str, str],
) -> Callable[[web.Application], AsyncIterator[None]]:
    """The bulk jobs' resources: their store (beside the keys and counters), their storage,
    this instance's runner; stopped before the service's own resources close."""

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        data = paths.data or Path(platformdirs.user_data_dir("listclean"))
        root = config.jobs.storage or str(default_root(paths.db, data))
        storage = Storage(root, config.engine.storage)
        store = await asyncio.to_thread(JobStore, paths.db, clock)
        jobs = Jobs(store)
        try:
            secret = await jobs.call(store.secret)
            engine = JobEngine(config.engine, paths.cache, offline, loopback_only, api_keys)
            quotas = app[SERVICES].quotas
            runner = JobRunner(config.jobs, jobs, storage, quotas, engine, clock)
            mode = config.engine.verify.mode
            modes = ("none",) if mode == "none" else ("none", mode)
            links = Links(secret, config.jobs.link_ttl)
            app[JOBS] = JobServices(runner, jobs, storage, links, modes, clock)
            await runner.start()
            try:
                yield
            finally:
                await runner.stop()
        finally:
            await asyncio.to_thread(jobs.close)

    return ctx


def create_app(
    config: ServiceConfig,
    paths: Paths,
    *,
    offline: bool = False,
    clock: Callable[[], float] = time.time,
    loopback_only: bool = False,
    body_timeouts: Mapping[str, float | None] | None = None,
    api_keys: Mapping[str, str] | None = None,
) -> web.Application:
    """The application; *offline* answers without DNS (every checked domain Risky).

    *body_timeouts* maps a path prefix to the seconds a request body sent there may take
    (None: the route bounds it itself, as an upload route does by transfer rate); other
    paths get ``[service] body_timeout``.

    With ``[verify] mode = "smtp"`` addresses are also probed by SMTP (slow: seconds per new
    address); *loopback_only* keeps those probes on 127.0.0.0/8 (the sandbox). With a paid
    verifier as the mode (its key in *api_keys*, method -> key), it is asked only for keyed
    callers whose plan says ``vendor = true``.
    """
    config = with_shared_state(config, paths.db)
    app = web.Application(middlewares=[problem_middleware])
    app[CONNECTIONS] = Connections()
    timeouts = {JOBS_PATH: None, **(body_timeouts or {})}
    app[ADMISSION] = admission = Admission(
        ConnectionLimits.from_settings(config.service), _trusted(config), timeouts
    )
    app.on_cleanup.append(lambda _: _async(admission.flood.close))
    keys = dict(api_keys or {})
    app.cleanup_ctx.append(_resources(config, paths, offline, clock, loopback_only, keys))
    app.cleanup_ctx.append(_jobs(config, paths, offline, clock, loopback_only, keys))
    add_routes(app)
    add_job_routes(app)
    return app


def _trusted(config: ServiceConfig) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(p, strict=False) for p in config.service.trusted_proxies]


async def _async(work: Callable[[], None]) -> None:
    work()


def _resources(
    config: ServiceConfig,
    paths: Paths,
    offline: bool,
    clock: Callable[[], float],
    loopback_only: bool,
    api_keys: Mapping[str, str],
) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        with contextlib.ExitStack() as stack:
            options = EngineOptions(
                offline=offline,
                loopback_only=loopback_only,
                clock=clock,
                api_key=api_keys.get(config.engine.verify.mode),
                api_keys=api_keys,
            )
            engine = open_engine(stack, config.engine, paths.cache, options)
            watcher: asyncio.Task[None] | None = None
            try:
                if not offline:
                    # Refuse to start on a resolver that would make every domain look missing,
                    # and keep watching it while serving.
                    await engine.dns.get()
                    interval = config.service.resolver_check_interval
                    watcher = asyncio.create_task(engine.dns.watch(interval))
                state = await open_live(paths.db, clock)
                try:
                    app[SERVICES] = _services(stack, config, state, paths, engine, clock, app)
                    app[ADMISSION].measure(config.service)  # with the service's files open
                    yield
                    await app[SERVICES].answers.drain()
                finally:
                    await state.close()
            finally:
                if watcher is not None:
                    watcher.cancel()
                    await asyncio.gather(watcher, return_exceptions=True)
                await engine.dns.close()

    return ctx


def _services(
    stack: contextlib.ExitStack,
    config: ServiceConfig,
    state: LiveState,
    paths: Paths,
    engine: Engine,
    clock: Callable[[], float],
    app: web.Application,
) -> Services:
    connections = app[CONNECTIONS]
    people = config.engine.contacts
    contacts_at = store_where(paths.cache, "contacts", people.db)
    contacts = stack.enter_context(ContactStore(contacts_at, people, clock))
    contacts.purge_audit()  # retention: old audit records go at every start
    size, wait = config.service.batch_size, config.service.batch_wait
    # Callers whose plan does not pay for a vendor (anonymous ones included) get the engine
    # without it: the same answers, the vendor's part left at the domain level.
    engines = {True: engine, False: dataclasses.replace(engine, checker=unpaid(engine.checker))}
    # What each engine has decided per domain: a plain address's answer without a pass.
    shapes = {paid: AnswerShapes() for paid in engines}

    async def answers(items: Sequence[tuple[str, bool, bool]]) -> list[str]:
        # One engine pass per kind present: addresses and bare domains (domain mode), for
        # callers who may have a vendor asked and for the others.
        answered = [""] * len(items)
        for paid, mode in itertools.product((False, True), (False, True)):
            rows = [i for i, (_, dm, p) in enumerate(items) if dm is mode and p is paid]
            if rows:
                values = [items[i][0] for i in rows]
                texts = await verify_many_json(
                    engines[paid], values, domain_mode=mode, shapes=shapes[paid]
                )
                for i, text in zip(rows, texts, strict=True):
                    answered[i] = text
        return answered

    def nothing_more_can_come(waiting: int) -> bool:
        # Every open connection has a request waiting for the engine (HTTP/1.1: one request
        # at a time per connection): until a pass answers some, no other request can arrive.
        return 0 < connections.open <= waiting

    http = config.service
    # The contact store's reads can take milliseconds (a misspelt name) and block on a lock:
    # they run on one thread of their own, which also keeps the store's use serial.
    thread = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="contacts"))
    return Services(
        config=config,
        state=state,
        quotas=Quotas(config, state, clock, sandbox=engine.routing.sandbox),
        answers=MicroBatcher(
            answers, size, wait, ready=nothing_more_can_come, quiet=http.batch_quiet
        ),
        trusted=_trusted(config),
        contacts=contacts,
        contacts_thread=thread,
        limits=Limits(http.max_value_length, http.max_parameters),
        throttle=AuthThrottle(http.auth_failures, http.auth_window, clock),
    )


@web.middleware
async def problem_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except Problem as problem:
        response = problem.response()
    except web.HTTPException as exc:
        response = _from_aiohttp(request, exc).response()
    except Exception as exc:
        if isinstance(exc, ConnectionError) and _client_gone(request):
            # The client closed its connection before it was answered (mid-body, say): no
            # failure of ours, and nobody to answer. The access log shows 499, as nginx does.
            response = web.Response(status=CLIENT_CLOSED_REQUEST)
        else:
            log_failure(log, request, exc)
            response = InternalError(
                "The service failed to answer this request. Try again; if it persists, report it."
            ).response()
    endpoint = counted(request.path)
    if endpoint is not None and not response.prepared:  # a streamed answer set its own
        try:
            settled = await _settle(request, endpoint, response.status)
            response.headers.update(settled.headers())
        except Exception as exc:  # the answer itself must still go out, and as a problem document
            log.error("cannot settle the quota of %s: %s", for_log(request.path), failure_line(exc))
    return response


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def _settle(request: web.Request, endpoint: str, status: int) -> Decision:
    """Where the caller stands after this request: a unit taken for a request that then failed
    on our side (5xx) is given back, since a caller is never charged for our failure."""
    if DECISION not in request:
        return await standing(request, endpoint)
    decision = request[DECISION]
    if decision.allowed and status >= 500:
        return await request.app[SERVICES].quotas.refund(request[IDENTITY], decision)
    return decision


def counted(path: str) -> str | None:
    """The endpoint whose counter a path's answers report: its own, or for the bulk jobs
    the /api/email counter they charge."""
    if path == JOBS_PATH or path.startswith(JOBS_PATH + "/"):
        return "email"
    return COUNTED.get(path)


def _from_aiohttp(request: web.Request, exc: web.HTTPException) -> Problem:
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = sorted(exc.allowed_methods)
        # The details name neither the method nor the path sent (the log does).
        return MethodNotAllowed(
            f"This method is not allowed here; use {', '.join(allowed)}.", allowed
        )
    if isinstance(exc, web.HTTPNotFound):
        return NotFound("There is nothing at this path. The API is under /api/.")
    # Anything else aiohttp refuses on its own (a body over its size limit, say) is a client
    # error about the request as sent; keep aiohttp's status, use the stable code.
    problem: Problem = (
        InvalidParameter(f"{exc.reason}.")
        if exc.status < 500
        else InternalError("The service failed to answer this request.")
    )
    problem.status = exc.status
    return problem
