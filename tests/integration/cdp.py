"""Headless Chromium for the browser tests, driven over the Chrome DevTools Protocol (CDP).

Chromium comes from the system's packages (Debian: ``apt-get install chromium``,
``/usr/bin/chromium``); it is started with a fresh profile and ``--remote-debugging-port=0``, so
it picks a free port on 127.0.0.1 and writes it, with the browser's websocket path, to
``DevToolsActivePort`` in the profile. The protocol is JSON over that one websocket, spoken
here with aiohttp's client, which the project already depends on.

Why CDP rather than ``--dump-dom``: a test of a page needs more than the DOM after load. CDP
gives the console (``Runtime.consoleAPICalled``, ``Runtime.exceptionThrown`` and
``Log.entryAdded``, where the browser reports refused loads and policy violations), every
request the page made (``Network.requestWillBeSent``), the laid-out page (a script evaluated in
it can read bounding boxes) and a screenshot (``Page.captureScreenshot``). Playwright or
Selenium would bring a browser download or a driver binary for the same few calls.
Protocol reference: https://chromedevtools.github.io/devtools-protocol/
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",  # the test may run as root in a container, where the sandbox cannot start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
WIDTH = 1200  # the viewport: a laptop's width


@dataclass(frozen=True)
class Visit:
    """What a page did in the browser."""

    reading: Any  # what the test's script returned, evaluated in the loaded page
    errors: list[str]  # console errors, uncaught exceptions, errors the browser logged
    requests: list[str]  # every URL the page asked for, itself included
    screenshot: bytes  # PNG of the whole page


@contextlib.contextmanager
def chromium(profile: Path) -> Iterator[str]:
    """Start headless Chromium with a fresh *profile*; yield its DevTools websocket URL."""
    profile.mkdir(parents=True, exist_ok=True)
    log = profile.parent / f"{profile.name}.log"
    command = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0"]
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [*command, "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,  # its helper processes share its group: stopped together
        )
    try:
        yield _endpoint(profile, process, log)
    finally:
        _stop(process)


def _endpoint(profile: Path, process: subprocess.Popen[bytes], log: Path) -> str:
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"Chromium exited with {process.returncode}: {tail}")
        lines = port_file.read_text().split() if port_file.exists() else []
        if len(lines) == 2:
            return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        time.sleep(0.05)
    raise TimeoutError(f"Chromium wrote no {port_file} within 30 s; see {log}.")


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


class Cdp:
    """One websocket to the browser: calls answered by id, events kept in arrival order."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._arrived = asyncio.Event()
        self.events: list[dict[str, Any]] = []

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, endpoint: str) -> AsyncIterator[Cdp]:
        async with aiohttp.ClientSession() as http, http.ws_connect(endpoint, max_msg_size=0) as ws:
            cdp = cls(ws)
            reader = asyncio.create_task(cdp._read())
            try:
                yield cdp
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader

    async def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        number = next(self._ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session  # a page's session (Target.attachToTarget, flatten)
        reply = self._pending[number] = asyncio.get_running_loop().create_future()
        await self._ws.send_json(message)
        answer = await asyncio.wait_for(reply, 30)
        if "error" in answer:
            raise RuntimeError(f"{method} failed: {answer['error']}")
        result: dict[str, Any] = answer["result"]
        return result

    async def _read(self) -> None:
        async for message in self._ws:
            if message.type is not aiohttp.WSMsgType.TEXT:
                break
            data = message.json()
            if "id" in data:
                self._pending.pop(data["id"]).set_result(data)
            else:
                self.events.append(data)
                self._arrived.set()
        for reply in self._pending.values():
            reply.set_exception(ConnectionError("Chromium closed the DevTools connection."))


async def visit(endpoint: str, url: str, script: str) -> Visit:
    """Load *url* in a new tab, wait until it has loaded, evaluate *script* in it, and take a
    screenshot of the whole page."""
    async with Cdp.connect(endpoint) as cdp:
        target = (await cdp.call("Target.createTarget", {"url": "about:blank"}))["targetId"]
        attach = {"targetId": target, "flatten": True}
        session = (await cdp.call("Target.attachToTarget", attach))["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            await cdp.call(f"{domain}.enable", session=session)
        metrics = {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False}
        await cdp.call("Emulation.setDeviceMetricsOverride", metrics, session)
        await cdp.call("Page.navigate", {"url": url}, session)
        await _loaded(cdp, session, url)
        reading = await evaluate(cdp, session, script)
        screenshot = await _screenshot(cdp, session)
        await cdp.call("Target.closeTarget", {"targetId": target})
    events = [e for e in cdp.events if e.get("sessionId") == session]
    return Visit(reading, errors(events), requests(events), screenshot)


async def evaluate(cdp: Cdp, session: str, script: str) -> Any:
    params = {"expression": script, "returnByValue": True, "awaitPromise": True}
    answer = await cdp.call("Runtime.evaluate", params, session)
    if "exceptionDetails" in answer:
        raise RuntimeError(f"The test's script failed: {answer['exceptionDetails']}")
    return answer["result"].get("value")


async def _loaded(cdp: Cdp, session: str, url: str) -> None:
    """Until the tab shows *url*, completely loaded (the load event and everything before it)."""
    deadline = time.monotonic() + 30
    probe = "[location.href, document.readyState]"
    while await evaluate(cdp, session, probe) != [url, "complete"]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not finish loading within 30 s.")
        await asyncio.sleep(0.05)


async def _screenshot(cdp: Cdp, session: str) -> bytes:
    size = (await cdp.call("Page.getLayoutMetrics", session=session))["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": WIDTH, "height": size["height"], "scale": 1}
    params = {"format": "png", "captureBeyondViewport": True, "clip": clip}
    shot = await cdp.call("Page.captureScreenshot", params, session)
    return base64.b64decode(shot["data"])


def errors(events: list[dict[str, Any]]) -> list[str]:
    """Console errors and assertions, uncaught exceptions, and errors the browser logged
    (refused loads, policy violations, failed requests)."""
    found = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            found.append(
                " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
            )
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            found.append(details.get("exception", {}).get("description", details["text"]))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"{params['entry']['text']} ({params['entry'].get('url', '')})")
    return found


def requests(events: list[dict[str, Any]]) -> list[str]:
    return [
        e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"
    ]
