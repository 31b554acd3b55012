"""Serving the app: requests aiohttp cannot parse get our problem shape, and ``serve`` runs it.

aiohttp answers a request it cannot parse (an over-long line, a bad header byte, a bad chunk)
itself, before any middleware runs, with a ``text/plain`` body that quotes the request and a
log record that prints it, API keys included. :class:`ServiceRunner` serves the app through a
protocol whose ``handle_error`` answers in the API's one problem shape instead: 400
``invalid_parameter`` with a detail that names the kind of fault and never quotes the request,
the rate-limit headers of the client address's anonymous ``/api/email`` policy (peeked, never
counted: an unreadable request has no key we could read), and one log line naming the fault.

The same protocol keeps slow clients from holding connections (``admission.py``): a
connection over a cap is answered 503 as soon as it is accepted, a request whose headers or
body are late 408; both are written on the socket as they are, since no request was read.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import math
import signal
import time
from collections.abc import Callable
from http import HTTPStatus

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import BadHttpMethod, InvalidURLError, LineTooLong
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler

from pipeline.core.text import failure_line
from pipeline.service.accounts.quotas import Identity
from pipeline.service.connections.admission import (
    ACCEPT_BACKLOG,
    Admission,
    BodyTimeout,
    Cutoff,
    Ticket,
)
from pipeline.service.connections.logs import UNREADABLE, RedactingAccessLogger
from pipeline.service.errors import (
    PROBLEM_JSON,
    InternalError,
    InvalidParameter,
    Problem,
    RequestTimeout,
    TooManyConnections,
)
from pipeline.service.keys import ADMISSION, CONNECTIONS, SERVICES
from pipeline.service.requests.guard import client_bucket

log = logging.getLogger("listclean.service")

# The parser's limits (aiohttp's defaults, kept): documented in docs/service.md#request-limits.
MAX_LINE_BYTES = 8190
MAX_HEADERS = 128
# Seconds a refused or cut-off connection is kept half-closed, its input read and dropped, so
# that the client reads our answer before the socket closes (closing on unread input resets
# the connection, and the answer with it).
LINGER = 2.0


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
    _admission: Admission | None = None
    _ticket: Ticket | None = None
    _timer: asyncio.TimerHandle | None = None
    _body: StreamReader | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        app = getattr(self._manager, "app", None)
        self._admission = app.get(ADMISSION) if app is not None else None
        if self._admission is None:
            return
        peer = transport.get_extra_info("peername")
        self._ticket = ticket = self._admission.connected(peer[0] if peer else "")
        if ticket.refused is not None:
            self._answer_and_close(self._busy(ticket))
        else:
            self._expect(Cutoff.HEADERS, self._admission.limits.header_timeout)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._cancel_timer()
        if self._admission is not None and self._ticket is not None:
            self._admission.closed(self._ticket)
            self._ticket = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        ticket, admission = self._ticket, self._admission
        if ticket is None or admission is None or self._force_close or self._close:
            super().data_received(data)
            return
        if data and not ticket.unfinished:  # the first bytes of the next request
            admission.started(ticket)
            self._expect(Cutoff.HEADERS, admission.limits.header_timeout)
        parsed = self._request_count
        super().data_received(data)
        if self._request_count != parsed and ticket.unfinished and self._body is None:
            self._headers_in(admission, ticket)

    def _headers_in(self, admission: Admission, ticket: Ticket) -> None:
        self._cancel_timer()
        message, payload = self._messages[-1] if self._messages else (None, None)
        path = getattr(message, "path", None)
        if not isinstance(payload, StreamReader) or payload.is_eof() or path is None:
            admission.finished(ticket)
            return
        self._body = payload
        payload.on_eof(self._body_in)
        seconds = admission.body_timeout(path)
        if seconds is not None:
            self._expect(Cutoff.BODY, seconds)

    def _body_in(self) -> None:
        self._cancel_timer()
        self._body = None
        if self._admission is not None and self._ticket is not None:
            self._admission.finished(self._ticket)

    def _expect(self, part: Cutoff, seconds: float) -> None:
        self._cancel_timer()
        self._timer = self._loop.call_later(seconds, self._late, part, seconds)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _late(self, part: Cutoff, seconds: float) -> None:
        self._timer = None
        ticket, admission, body = self._ticket, self._admission, self._body
        if ticket is None or admission is None or not ticket.unfinished or self.transport is None:
            return
        admission.cut_off(ticket, part)
        admission.finished(ticket)
        detail = f"The request's {part} did not arrive within {seconds:g} seconds."
        if body is not None:
            # The handler reading the body answers 408 (``params.py``); a body nobody reads
            # ends aiohttp's lingering read. Either way the connection closes after.
            self._body = None
            body.set_exception(BodyTimeout(detail))
            self.close()
        elif self._request_in_progress or self._messages:
            self.close()  # the next request is late behind an answer still being made
        else:
            self._answer_and_close(self._with_rate_headers(RequestTimeout(detail), ticket))

    def _busy(self, ticket: Ticket) -> Problem:
        assert self._admission is not None
        wait = max(1, math.ceil(self._admission.limits.header_timeout))
        problem = TooManyConnections(
            f"Too many connections that have not finished sending a request ({ticket.refused}); "
            f"retry in {wait} seconds (Retry-After), and send each request whole.",
            wait,
        )
        return self._with_rate_headers(problem, ticket)

    def _with_rate_headers(self, problem: Problem, ticket: Ticket) -> Problem:
        server = self._manager
        if isinstance(server, _ProblemServer):
            problem.headers.update(server.rate_headers(ticket.peer))
        return problem

    def _answer_and_close(self, problem: Problem) -> None:
        """Write *problem* as the answer, half-close, and close after :data:`LINGER` (or at
        once, when open files run short); what the client still sends is dropped."""
        transport, admission = self.transport, self._admission
        if transport is None or admission is None:
            return
        at_once = not admission.may_linger()
        self._force_close = True  # data_received drops input from now on
        if self._keepalive_handle is not None:
            self._keepalive_handle.cancel()
            self._keepalive_handle = None
        transport.write(raw_answer(problem))
        if at_once or not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        self._loop.call_later(LINGER, transport.close)

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


def raw_answer(problem: Problem) -> bytes:
    """*problem* as the bytes of an HTTP/1.1 answer that closes its connection."""
    body = json.dumps(problem.body()).encode()
    headers = {
        "Content-Type": PROBLEM_JSON,
        "Content-Length": str(len(body)),
        "Connection": "close",
        **problem.headers,
    }
    head = f"HTTP/1.1 {problem.status} {HTTPStatus(problem.status).phrase}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (head + "\r\n").encode("latin-1") + body


class _ProblemServer(web.Server):
    app: web.Application | None = None
    # A flood of refused connections reads a client's rate-limit headers once a second, not
    # once per connection: client address -> (when read, headers).
    _rate_headers: dict[str, tuple[float, dict[str, str]]]

    def rate_headers(self, client_ip: str) -> dict[str, str]:
        if not hasattr(self, "_rate_headers"):
            self._rate_headers = {}
        bucket, now = client_bucket(client_ip), time.monotonic()
        cached = self._rate_headers.get(bucket)
        if cached is not None and now - cached[0] < 1.0:
            return cached[1]
        if self.app is None:
            return {}
        headers = _anonymous_headers(self.app, client_ip)
        if len(self._rate_headers) >= 10_000:
            self._rate_headers.clear()
        self._rate_headers[bucket] = (now, headers)
        return headers

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


def _counting_accept_failures(
    admission: Admission,
) -> Callable[[asyncio.AbstractEventLoop, dict[str, object]], None]:
    """asyncio logs a traceback for each ``accept()`` that fails for want of open files; the
    service counts those in its flood line instead (the caps keep them rare)."""

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        if str(context.get("message", "")).startswith("socket.accept() out of system resource"):
            admission.accept_failed()
        else:
            loop.default_exception_handler(context)

    return handle


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
    admission = app.get(ADMISSION)
    if admission is not None:
        loop.set_exception_handler(_counting_accept_failures(admission))
    try:
        await web.TCPSite(runner, host, port, backlog=ACCEPT_BACKLOG).start()
        # What start-up built (the engine, its lists, the stores, the libraries' own objects:
        # some 90,000) lives as long as the service. Frozen, the cycle collector no longer
        # walks it; reference counting still frees it. Each full collection walked it all
        # with the event loop stopped: 30-50 ms, the slowest answers (docs/service.md).
        gc.freeze()
        if started is not None:  # the bound port: with --port 0 the system chose it
            bound = runner.addresses[0][1] if runner.addresses else port
            started(f"Serving on http://{host}:{bound} (SIGINT or SIGTERM stops)")
        await stop.wait()
    finally:
        gc.unfreeze()  # a process that goes on after serving (a test) is as it was
        await runner.cleanup()
