"""The HTTP service: ``create_app()`` builds the aiohttp application.

Resources (the service database, the domain cache, the resolver, the engine) are opened in
``cleanup_ctx`` and closed there on shutdown, after in-flight requests have finished. Handlers
are thin (see ``routes.py``); errors become problem details in :func:`problem_middleware`,
which also puts the rate-limit headers on every response of the quota-counted endpoints.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.typedefs import Handler

from pipeline.core.assembly import EngineOptions, open_engine
from pipeline.core.contacts.store import ContactStore
from pipeline.core.engine import Engine, verify_many
from pipeline.core.sqlite import beside_domain_cache
from pipeline.service.batcher import MicroBatcher
from pipeline.service.errors import (
    InternalError,
    InvalidApiKey,
    InvalidParameter,
    MethodNotAllowed,
    NotFound,
    Problem,
)
from pipeline.service.keys import DECISION, IDENTITY, SERVICES, Services
from pipeline.service.params import identify
from pipeline.service.quotas import Decision, Identity, Quotas
from pipeline.service.routes import add_routes
from pipeline.service.settings import ServiceConfig
from pipeline.service.store import ServiceStore

log = logging.getLogger("listclean.service")

# Paths whose requests are counted, and the endpoint name their counters and policies use.
COUNTED = {"/api/email": "email", "/api/find": "find"}


@dataclass(frozen=True)
class Paths:
    db: Path  # keys and quota counters
    cache: Path  # the domain cache shared with the batch pipeline


def create_app(
    config: ServiceConfig,
    paths: Paths,
    *,
    offline: bool = False,
    clock: Callable[[], float] = time.time,
    loopback_only: bool = False,
) -> web.Application:
    """The application; *offline* answers without DNS (every checked domain Risky).

    With ``[verify] mode = "smtp"`` addresses are also probed by SMTP (slow: seconds per new
    address); *loopback_only* keeps those probes on 127.0.0.0/8 (the sandbox).
    """
    app = web.Application(middlewares=[problem_middleware])
    app.cleanup_ctx.append(_resources(config, paths, offline, clock, loopback_only))
    add_routes(app)
    return app


def _resources(
    config: ServiceConfig,
    paths: Paths,
    offline: bool,
    clock: Callable[[], float],
    loopback_only: bool,
) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        with contextlib.ExitStack() as stack:
            options = EngineOptions(offline=offline, loopback_only=loopback_only, clock=clock)
            engine = open_engine(stack, config.engine, paths.cache, options)
            try:
                if not offline:
                    # Refuse to start on a resolver that would make every domain look missing.
                    await engine.dns.get()
                app[SERVICES] = _services(stack, config, paths, engine, clock)
                yield
                await app[SERVICES].addresses.drain()
                await app[SERVICES].domains.drain()
            finally:
                await engine.dns.close()

    return ctx


def _services(
    stack: contextlib.ExitStack,
    config: ServiceConfig,
    paths: Paths,
    engine: Engine,
    clock: Callable[[], float],
) -> Services:
    store = stack.enter_context(ServiceStore(paths.db, clock))
    people = config.engine.contacts
    contacts_path = beside_domain_cache(paths.cache, "contacts", people.db)
    contacts = stack.enter_context(ContactStore(contacts_path, people, clock))
    contacts.purge_audit()  # retention: old audit records go at every start
    size, wait = config.service.batch_size, config.service.batch_wait

    async def addresses(values: Sequence[str]) -> list[dict[str, object]]:
        return await verify_many(engine, values)

    async def domains(values: Sequence[str]) -> list[dict[str, object]]:
        return await verify_many(engine, values, domain_mode=True)

    return Services(
        config,
        store,
        Quotas(config, store, clock),
        MicroBatcher(addresses, size, wait),
        MicroBatcher(domains, size, wait),
        [ipaddress.ip_network(p, strict=False) for p in config.service.trusted_proxies],
        contacts,
    )


@web.middleware
async def problem_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except Problem as problem:
        response = problem.response()
    except web.HTTPException as exc:
        response = _from_aiohttp(request, exc).response()
    except Exception:
        log.exception("unexpected error on %s %s", request.method, request.path)
        response = InternalError(
            "The service failed to answer this request. Try again; if it persists, report it."
        ).response()
    endpoint = COUNTED.get(request.path)
    if endpoint is not None:
        try:
            response.headers.update(_rate_limit_state(request, endpoint).headers())
        except Exception:  # the answer itself must still go out, and as a problem document
            log.exception("cannot compute rate-limit headers for %s", request.path)
    return response


def _from_aiohttp(request: web.Request, exc: web.HTTPException) -> Problem:
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = sorted(exc.allowed_methods)
        return MethodNotAllowed(
            f"{request.method} is not allowed here; use {', '.join(allowed)}.", allowed
        )
    if isinstance(exc, web.HTTPNotFound):
        return NotFound(f"There is nothing at {request.path}. The API is under /api/.")
    # Anything else aiohttp refuses on its own (a body over its size limit, say) is a client
    # error about the request as sent; keep aiohttp's status, use the stable code.
    problem: Problem = (
        InvalidParameter(f"{exc.reason}.")
        if exc.status < 500
        else InternalError("The service failed to answer this request.")
    )
    problem.status = exc.status
    return problem


def _rate_limit_state(request: web.Request, endpoint: str) -> Decision:
    if DECISION in request:
        return request[DECISION]
    services = request.app[SERVICES]
    if IDENTITY in request:
        identity = request[IDENTITY]
    else:
        try:
            identity = identify(request, request.query, services.store, services.client_ip(request))
        except InvalidApiKey:
            identity = Identity(services.client_ip(request))
    return services.quotas.peek(identity, endpoint)


# Query values the access log never shows: a secret, and the subject of a people search (the
# audit log keeps only a keyed hash of it; a plain log line must not undo that).
REDACTED = frozenset({"apikey", "search_term"})


class RedactingAccessLogger(AbstractAccessLogger):
    """An access log line per request that never contains an API key or a search term."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        query = "&".join(
            f"{name}={'***' if name in REDACTED else value}"
            for name, value in request.query.items()
        )
        target = request.path + (f"?{query}" if query else "")
        self.logger.info(
            '%s "%s %s" %s %.1fms',
            request.remote,
            request.method,
            target,
            response.status,
            time * 1000,
        )

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)
