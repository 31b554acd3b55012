"""``serve`` itself: what start-up built is kept out of the collector's way while serving."""

from __future__ import annotations

import asyncio
import gc
import os
import signal

import aiohttp
from aiohttp import web

from pipeline.service.connections.protocol import serve


def test_the_start_up_heap_is_frozen_while_serving_and_given_back_after() -> None:
    seen: dict[str, object] = {}
    before = gc.get_freeze_count()

    async def hello(request: web.Request) -> web.Response:
        return web.json_response({"frozen": gc.get_freeze_count()})

    async def scenario() -> None:
        app = web.Application()
        app.router.add_get("/", hello)
        # Built before serving, as the engine's lists and stores are: frozen with the rest.
        built = [object() for _ in range(1000)]
        loop = asyncio.get_running_loop()

        async def ask(url: str) -> None:
            try:
                async with aiohttp.ClientSession() as session, session.get(url) as reply:
                    seen["answer"] = await reply.json()
                seen["tracked"] = any(o is built for o in gc.get_objects())
            finally:
                os.kill(os.getpid(), signal.SIGTERM)  # serve's own handler stops it

        def started(line: str) -> None:
            url = line.split()[2] + "/"
            seen["task"] = loop.create_task(ask(url))

        await asyncio.wait_for(serve(app, "127.0.0.1", 0, shutdown_timeout=1, started=started), 30)

    asyncio.run(scenario())
    answer = seen["answer"]
    assert isinstance(answer, dict) and answer["frozen"] > before + 1000
    assert seen["tracked"] is False  # gc.get_objects() leaves out the frozen generation
    assert gc.get_freeze_count() == before
