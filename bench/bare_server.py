"""The baseline of the service benchmark: a bare aiohttp handler answering a fixed JSON object.

    python bench/bare_server.py PORT BODY.json

``GET /api/email`` answers the object in BODY.json (the benchmark passes a real answer of the
service, so both bodies are about the same size) through ``web.json_response``: the baseline
the service's target was set against, kept as it was;
``GET /healthz`` answers ``{"status": "ok"}``. No middleware, no parameters read, no quota, no
engine. Access logging is the same as ``listclean serve``'s: ``RedactingAccessLogger`` at INFO
to standard error, so the two are measured on equal terms. Stops on SIGINT or SIGTERM.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from aiohttp import web

from pipeline.service.connections.logs import RedactingAccessLogger


def make_app(body: dict[str, object]) -> web.Application:
    async def email(request: web.Request) -> web.Response:
        return web.json_response(body)

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_get("/api/email", email)
    app.router.add_get("/healthz", healthz)
    return app


def main() -> None:
    port, body = int(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    # The same logging set-up as `listclean serve` (pipeline/cli/service.py, _serve).
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    web.run_app(
        make_app(body),
        host="127.0.0.1",
        port=port,
        access_log_class=RedactingAccessLogger,
        print=lambda message: logging.getLogger("bare").info("%s", message),
    )


if __name__ == "__main__":
    main()
