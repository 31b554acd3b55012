"""The upload page, in a real browser, by keyboard alone: headless Chromium from the system
packages, driven over the DevTools protocol (see :mod:`tests.integration.cdp`), against
``listclean serve --sandbox`` in a process of its own.

On a 375 x 667 window (a phone) the page is reached, the key typed, the file chosen (the one
step a file dialog takes), and everything else done with Tab and Enter: the preview read, the
job started, its progress watched until done, every file downloaded by the browser and its rows
checked against the job's summary. On the way: never a horizontal scroll, no console error,
no request that leaves the service or carries the key, the list's cells shown as text (a cell
of markup stays text), the key kept in the tab's sessionStorage only. Pictures of each step go
to ``build/jobs/``; ``page.png``, the finished page on a laptop's window, is docs/jobs.md's.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import polars as pl
import pytest

from tests.conftest import REPO, SAMPLE_CSV
from tests.integration.cdp import CHROMIUM, Cdp, chromium, errors, evaluate, requests

pytestmark = pytest.mark.integration

SHOTS = REPO / "build" / "jobs"
WIDTH, HEIGHT = 375, 667
MARKUP = "<img src=x onerror=alert(1)>@x.com"
_SERVING = re.compile(r"Serving on (http://127\.0\.0\.1:\d+)")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install chromium`.")
    with chromium(tmp_path_factory.mktemp("chromium") / "profile") as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``listclean serve --sandbox`` on a free port: its URL and a key on plan starter."""
    root = tmp_path_factory.mktemp("service")
    listclean = [sys.executable, "-m", "pipeline"]
    db = ["--db", str(root / "service.sqlite")]
    made = subprocess.run(
        [*listclean, "keys", "create", "--plan", "starter", *db],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    secret = made.stdout.strip().splitlines()[-1]
    env = {**os.environ, "LISTCLEAN_JOBS_STORAGE": str(root / "jobs"), "LISTCLEAN_JOBS_POLL": "0.2"}
    log = root / "serve.log"
    command = [
        *listclean,
        "serve",
        "--sandbox",
        "--port",
        "0",
        "--cache-dir",
        str(root / "cache"),
        *db,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=out, env=env, cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while not (found := _SERVING.search(log.read_text(errors="replace"))):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve did not start: {log.read_text(errors='replace')}")
            time.sleep(0.1)
        yield found.group(1), secret
    finally:
        process.terminate()
        process.wait(timeout=30)


def the_list(folder: Path) -> Path:
    """The sample list with a row of markup among its first rows (the preview shows them)."""
    header, *rows = SAMPLE_CSV.read_text(encoding="utf-8").splitlines(keepends=True)
    marked = f'9007,"<script>alert(1)</script>",X,"{MARKUP}",,2024-01-02\n'
    path = folder / "my list.csv"
    path.write_text(header + rows[0] + marked + "".join(rows[1:]), encoding="utf-8")
    return path


class Tab:
    """One page of the browser, its session's calls and what it did."""

    def __init__(self, cdp: Cdp, session: str, target: str) -> None:
        self.cdp = cdp
        self.session = session
        self.target = target

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.cdp.call(method, params, self.session)

    async def js(self, script: str) -> Any:
        return await evaluate(self.cdp, self.session, script)

    async def until(self, script: str, timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        while not (value := await self.js(script)):
            if time.monotonic() > deadline:
                shown = await self.js(
                    "[...document.querySelectorAll('[data-key=state], [data-key=error]')]"
                    ".map(e => e.dataset.key + ': ' + e.textContent)"
                )
                events = [e for e in self.cdp.events if e.get("sessionId") == self.session]
                raise TimeoutError(
                    f"{script} stayed false for {timeout} s; the page: {shown}; errors: "
                    f"{errors(events)}; requests: {requests(events)}"
                )
            await asyncio.sleep(0.1)
        return value

    async def press(self, key: str) -> str:
        """Press *key* (Tab, Enter, Space); the data-key (or tag) of what has focus after."""
        codes = {"Tab": 9, "Enter": 13, "Space": 32}
        down: dict[str, Any] = {
            "type": "keyDown",
            "key": key,
            "code": key,
            "windowsVirtualKeyCode": codes[key],
        }
        if key == "Enter":
            down["text"] = "\r"
        if key == "Space":
            down.update(key=" ", text=" ")
        await self.call("Input.dispatchKeyEvent", down)
        await self.call("Input.dispatchKeyEvent", {**down, "type": "keyUp", "text": ""})
        return str(
            await self.js("(e => e.dataset.key || e.id || e.tagName)(document.activeElement)")
        )

    async def focused(self) -> str:
        return str(
            await self.js("(e => e.dataset.key || e.id || e.tagName)(document.activeElement)")
        )

    async def tab_to(self, wanted: str, most: int = 40) -> None:
        for _ in range(most):
            if await self.press("Tab") == wanted:
                return
        raise AssertionError(f"Tab never reached {wanted}")

    async def fits(self) -> bool:
        """Whether the page reads without horizontal scrolling."""
        return bool(await self.js("document.documentElement.scrollWidth <= window.innerWidth"))

    async def shot(self, name: str, width: int = WIDTH) -> None:
        """A picture of the whole page (not only the window) in ``build/jobs/NAME.png``."""
        size = (await self.call("Page.getLayoutMetrics"))["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": width, "height": size["height"], "scale": 1}
        params = {"format": "png", "captureBeyondViewport": True, "clip": clip}
        shot = await self.call("Page.captureScreenshot", params)
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / f"{name}.png").write_bytes(base64.b64decode(shot["data"]))


async def open_tab(cdp: Cdp, url: str, downloads: Path) -> Tab:
    target = (await cdp.call("Target.createTarget", {"url": "about:blank"}))["targetId"]
    session = (await cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True}))[
        "sessionId"
    ]
    tab = Tab(cdp, session, target)
    for domain in ("Page", "Runtime", "Log", "Network"):
        await tab.call(f"{domain}.enable")
    metrics = {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 2, "mobile": True}
    await tab.call("Emulation.setDeviceMetricsOverride", metrics)
    await cdp.call(
        "Browser.setDownloadBehavior",
        {"behavior": "allow", "downloadPath": str(downloads), "eventsEnabled": True},
    )
    await cdp.call("Target.setDiscoverTargets", {"discover": True})
    await tab.call("Page.navigate", {"url": url})
    await tab.until("document.readyState === 'complete' && !!document.querySelector('main')")
    return tab


async def flow(endpoint: str, url: str, secret: str, folder: Path) -> dict[str, Any]:
    downloads = folder / "downloads"
    downloads.mkdir()
    seen: dict[str, Any] = {"fits": {}}
    async with Cdp.connect(endpoint) as cdp:
        tab = await open_tab(cdp, f"{url}/", downloads)
        seen["fits"]["start"] = await tab.fits()
        seen["first_focus"] = await tab.press("Tab")
        await tab.call("Input.insertText", {"text": secret})
        seen["storage"] = await tab.js(
            "[sessionStorage.getItem('listclean.key'), localStorage.length]"
        )
        await tab.tab_to("file-input")
        handle = await tab.call(
            "Runtime.evaluate", {"expression": "document.querySelector('[data-key=file-input]')"}
        )
        await tab.call(
            "DOM.setFileInputFiles",
            {"files": [str(the_list(folder))], "objectId": handle["result"]["objectId"]},
        )
        await tab.until("!document.querySelector('[data-key=preview-step]').hidden")
        seen["preview_focus"] = await tab.focused()
        seen["fits"]["preview"] = await tab.fits()
        seen["preview"] = await tab.js(
            """({
              column: document.querySelector('[data-key=email-column]').value,
              cells: [...document.querySelectorAll('[data-key=preview-cell]')]
                .map(c => [c.dataset.column, c.textContent]),
              images: document.querySelectorAll('main img').length,
              units: document.querySelector('[data-key=units]').textContent,
            })"""
        )
        await tab.shot("preview")
        await tab.tab_to("start")
        seen["start_focus"] = await tab.focused()
        await tab.press("Enter")
        await tab.until(
            "document.querySelector('[data-key=state]').textContent === 'Running…'"
            " || !document.querySelector('[data-key=results-step]').hidden"
        )
        seen["fits"]["progress"] = await tab.fits()
        await tab.shot("progress")
        await tab.until("!document.querySelector('[data-key=results-step]').hidden", 120)
        seen["results_focus"] = await tab.focused()
        seen["fits"]["results"] = await tab.fits()
        await tab.shot("results")
        seen["stages"] = await tab.js(
            "[...document.querySelectorAll('[data-key=stage]')]"
            ".map(s => [s.dataset.stage, s.dataset.done, s.dataset.total])"
        )
        links = await tab.js(
            "[...document.querySelectorAll('[data-key=download], [data-key=rejects]')]"
            ".map(a => [a.dataset.format || 'rejects', a.dataset.verdict || 'all', a.download])"
        )
        seen["links"] = links
        seen["downloaded"] = await _download_each(tab, cdp, links, downloads)
        await tab.tab_to("report")
        await tab.press("Enter")
        seen["report_tab"] = await _new_tab_url(cdp, tab.target)
        # The picture in docs/jobs.md: the same page, done, on a laptop's window.
        laptop = {"width": 1000, "height": 800, "deviceScaleFactor": 1, "mobile": False}
        await tab.call("Emulation.setDeviceMetricsOverride", laptop)
        await tab.shot("page", 1000)
        events = [e for e in cdp.events if e.get("sessionId") == tab.session]
        seen["errors"] = errors(events)
        seen["requests"] = requests(events)
        seen["job"] = await tab.js("document.querySelector('[data-key=report]').href")
    return seen


async def _download_each(tab: Tab, cdp: Cdp, links: list[list[str]], into: Path) -> list[str]:
    """Every download link, reached by Tab and followed by Enter; the files the browser wrote."""
    names = [name for _, _, name in links]
    for name in names:
        await _tab_to_link(tab, name)
        await tab.press("Enter")
        deadline = time.monotonic() + 60
        while not (into / name).exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} was not downloaded")
            await asyncio.sleep(0.1)
    return sorted(p.name for p in into.iterdir())


async def _tab_to_link(tab: Tab, name: str) -> None:
    for _ in range(60):
        await tab.press("Tab")
        if await tab.js("document.activeElement.download") == name:
            return
    raise AssertionError(f"Tab never reached the link to {name}")


async def _new_tab_url(cdp: Cdp, opener: str) -> str:
    """The address the tab *opener* opened shows, once it shows one."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        opened = {
            e["params"]["targetInfo"]["targetId"]
            for e in cdp.events
            if e["method"] == "Target.targetCreated"
            and e["params"]["targetInfo"].get("openerId") == opener
        }
        for event in reversed(cdp.events):
            info = event.get("params", {}).get("targetInfo", {})
            if info.get("targetId") in opened and info.get("url", "").startswith("http"):
                return str(info["url"])
        await asyncio.sleep(0.1)
    raise TimeoutError("the report did not open in a new tab")


def rows_of(path: Path) -> int:
    if path.suffix == ".csv":
        return len(list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))))
    if path.suffix == ".xlsx":
        return len(xlsx_rows(path)) - 1
    return pl.read_parquet(path).height


def xlsx_rows(path: Path) -> list[tuple[Any, ...]]:
    """A workbook's rows (its first sheet's), the workbook closed after."""
    book = openpyxl.load_workbook(path, read_only=True)
    try:
        sheet = book.active
        assert sheet is not None
        return list(sheet.iter_rows(values_only=True))
    finally:
        book.close()


def verdicts_of(path: Path) -> set[str]:
    if path.suffix == ".csv":
        return {r["VERDICT"] for r in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))}
    if path.suffix == ".parquet":
        return set(pl.read_parquet(path).get_column("VERDICT").to_list())
    rows = xlsx_rows(path)
    at = list(rows[0]).index("VERDICT")
    return {str(r[at]) for r in rows[1:]}


def job_summary(url: str, secret: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}/api/jobs?limit=1", headers={"Authorization": f"Bearer {secret}"}
    )
    with urllib.request.urlopen(request) as reply:
        job = json.loads(reply.read())["jobs"][0]
    request = urllib.request.Request(
        f"{url}/api/jobs/{job['id']}", headers={"Authorization": f"Bearer {secret}"}
    )
    with urllib.request.urlopen(request) as reply:
        found: dict[str, Any] = json.loads(reply.read())
        return found


def test_the_page_does_it_all_by_keyboard_on_a_phone(
    browser: str, service: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, secret = service
    seen = asyncio.run(flow(browser, url, secret, tmp_path))
    with capsys.disabled():
        print(f"\nscreenshots of the upload page: {SHOTS}")

    assert seen["first_focus"] == "key-input"
    assert seen["storage"] == [secret, 0]  # the tab's sessionStorage, nothing kept beyond it
    assert seen["preview_focus"] == "preview-title"
    preview = seen["preview"]
    assert preview["column"] == "Email Address"
    assert ["Email Address", MARKUP] in preview["cells"]  # markup shown as text
    assert ["first_name", "<script>alert(1)</script>"] in preview["cells"]
    assert preview["images"] == 0
    assert "units" in preview["units"]
    assert seen["results_focus"] == "results-title"
    assert all(seen["fits"].values()), seen["fits"]
    assert [s[0] for s in seen["stages"]] == ["read", "domains", "write"]
    assert all(done == total for _, done, total in seen["stages"])

    status = job_summary(url, secret)
    summary = status["summary"]
    assert status["state"] == "done" and summary["rows_in"] == 298
    downloads = tmp_path / "downloads"
    names = seen["downloaded"]
    assert len(names) == 3 * 5 + 1  # three formats of every row and of each verdict, rejects
    for fmt in ("csv", "xlsx", "parquet"):
        assert rows_of(downloads / f"my_list.clean.{fmt}") == summary["rows_out"]
        split = 0
        for role, verdict in (("valid", "Valid"), ("risky", "Risky"), ("invalid", "Invalid")):
            path = downloads / f"my_list.clean.{role}.{fmt}"
            split += rows_of(path)
            assert verdicts_of(path) <= {verdict}, path
        split += rows_of(downloads / f"my_list.clean.suppressed.{fmt}")
        # One row per distinct address (its first), as clean --split: not the duplicates.
        assert split == summary["rows_out"] - summary["duplicates"] < summary["rows_out"]
    assert rows_of(downloads / "my_list.clean.rejects.csv") == summary["rows_rejected"]
    assert "/report?token=" in seen["report_tab"]

    assert seen["errors"] == []
    assert all(r.startswith(url) or r.startswith("data:") for r in seen["requests"])
    assert not any(secret in r for r in seen["requests"])  # the key is never in a URL
