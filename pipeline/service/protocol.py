"""Serving the app: requests aiohttp cannot parse get our problem shape, and ``serve`` runs it.

aiohttp answers a request it cannot parse (an over-long line, a bad header byte, a bad chunk)
itself, before any middleware runs, with a ``text/plain`` body that quotes the request and a
log record that prints it, API keys included. :class:`ServiceRunner` serves the app through a
protocol whose ``handle_error`` answers in the API's one problem shape instead: 400
``invalid_parameter`` with a detail that names the kind of fault and never quotes the request,
the rate-limit headers of the client address's anonymous ``/api/email`` policy (peeked, never
counted: an unreadable request has no key we could read), and one log line naming the fault.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import BadHttpMethod, InvalidURLError, LineTooLong
from aiohttp.web_protocol import RequestHandler

from pipeline.core.text import failure_line
from pipeline.service.errors import InternalError, InvalidParameter, Problem
from pipeline.service.keys import CONNECTIONS, SERVICES
from pipeline.service.logs import UNREADABLE, RedactingAccessLogger
from pipeline.service.quotas import Identity

log = logging.getLogger("listclean.service")

# The parser's limits (aiohttp's defaults, kept): documented in the README's request limits.
MAX_LINE_BYTES = 8190
MAX_HEADERS = 128


def unreadable_problem(status: int, exc: BaseException | None) -> Problem:
    """What to say about a request aiohttp refused, without repeating any of it."""
    if status >= 500:
        return InternalError("The service failed to answer this request.")
    if isinstance(exc, LineTooLong):
        detail = f"A request line or header is longer than {MAX_LINE_BYTES} bytes."
    elif isinstance(exc, BadHttpMethod):
        detail = "The request method is not an HTTP token."
    elif isinstance(exc, InvalidURLError):
        detail = "The request target holds characters a URL cannot; percent-encode them."
    else:
        detail = (
            "The request cannot be read as HTTP/1.1: a bad header name or value, too many "
            f"headers (the limit is {MAX_HEADERS}), or a malformed body framing."
        )
    problem = InvalidParameter(detail)
    problem.status = status
    return problem


class _ProblemProtocol(RequestHandler):
    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if request.writer.output_size > 0:  # part of an answer went out: nothing can follow
            raise ConnectionError("an answer was already being sent")
        fault = type(exc).__name__ if exc is not None else "no exception"
        log.warning("unreadable request from %s answered %d: %s", request.remote, status, fault)
        response = unreadable_problem(status, exc).response()
        response.force_close()
        response[UNREADABLE] = True
        app = getattr(self._manager, "app", None)
        if app is not None:
            response.headers.update(_anonymous_headers(app, request.remote or ""))
        return response


def _anonymous_headers(app: web.Application, client_ip: str) -> dict[str, str]:
    services = app.get(SERVICES)
    if services is None:  # not started, or stopping
        return {}
    try:
        return services.quotas.peek_blocking(Identity(client_ip), "email").headers()
    except Exception as exc:  # the answer must still go out
        log.error("cannot compute rate-limit headers: %s", failure_line(exc))
        return {}


class _ProblemServer(web.Server):
    app: web.Application | None = None

    def __call__(self) -> RequestHandler:
        return _ProblemProtocol(self, loop=self._loop, **self._kwargs)

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        super().connection_made(handler, transport)
        self._count(+1)

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        super().connection_lost(handler, exc)
        self._count(-1)

    def _count(self, step: int) -> None:
        # The engine's batches leave early once every open connection is waiting on them.
        if self.app is not None and CONNECTIONS in self.app:
            self.app[CONNECTIONS].open += step


class ServiceRunner(web.AppRunner):
    """An :class:`~aiohttp.web.AppRunner` whose connections answer unreadable requests in the
    API's problem shape (see the module docstring)."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # aiohttp builds the server (routing, middlewares, its settings); only the protocol it
        # makes for each connection changes.
        server.__class__ = _ProblemServer
        assert isinstance(server, _ProblemServer)
        server.app = self.app
        return server


async def serve(
    app: web.Application,
    host: str,
    port: int,
    *,
    shutdown_timeout: float,
    access_log_class: type[AbstractAccessLogger] = RedactingAccessLogger,
    started: Callable[[str], None] | None = None,
) -> None:
    """Serve *app* until SIGINT or SIGTERM, then stop gracefully: no new connections,
    in-flight requests get *shutdown_timeout* seconds, then the app's resources close."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner = ServiceRunner(
        app, access_log_class=access_log_class, shutdown_timeout=shutdown_timeout
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        if started is not None:  # the bound port: with --port 0 the system chose it
            bound = runner.addresses[0][1] if runner.addresses else port
            started(f"Serving on http://{host}:{bound} (SIGINT or SIGTERM stops)")
        await stop.wait()
    finally:
        await runner.cleanup()
