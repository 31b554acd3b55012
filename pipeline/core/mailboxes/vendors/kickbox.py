"""Kickbox (v2): ``/v2/verify`` per address, ``/v2/verify-batch`` for lists, ``/v2/balance``.

The key travels in ``Authorization: Bearer`` (never in a URL). 403 means either a refused key
or an empty balance, and only the message tells them apart ("Insufficient balance", "Balance
Depleted" against "Invalid API Key"; kickbox-php#3). A batch is a PUT of ``text/csv``, one
address a line; its status is ``starting|processing|completed|failed`` (older docs:
``pending|processing|completed|error``), and its results are a CSV behind a signed
``download_url`` valid for one hour, so the status is asked again right before each download.
Kickbox refunds ``unknown``. Limits: 25 requests in flight per IP, 8,000 a clock minute.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pipeline.core.mailboxes.vendors.http import Reply, VendorHttp, said_in
from pipeline.core.mailboxes.vendors.types import Failure, JobStatus, Limits, VendorAnswer
from pipeline.core.mailboxes.vendors.verdicts import count, part, read_shared

_NO_BALANCE: Final = ("insufficient balance", "balance depleted")
_FAILED: Final = frozenset({"failed", "error"})
_FLAGS: Final = ("accept_all", "disposable", "role", "free")


class Kickbox:
    name: Final = "kickbox"
    limits: Final = Limits(
        concurrency=20, per_minute=7_500, single_max=None, bulk_max=1_000_000, bills_unknown=False
    )
    origins: Final = {"api": "https://api.kickbox.com"}

    def _auth(self, http: VendorHttp) -> dict[str, str]:
        return {"Authorization": f"Bearer {http.key}"}

    async def balance(self, http: VendorHttp) -> int | None:
        reply = await http.call("GET", "api", "/v2/balance", headers=self._auth(http))
        data = self._answer(http, reply)
        return count(data.get("balance"))

    async def check(self, http: VendorHttp, address: str) -> VendorAnswer:
        # timeout: milliseconds Kickbox may spend (default 6000, at most 30000).
        wait = str(min(30_000, max(1_000, int(http.config.timeout * 500))))
        params = {"email": address, "timeout": wait}
        reply = await http.call("GET", "api", "/v2/verify", params=params, headers=self._auth(http))
        return _read(self._answer(http, reply))

    async def submit(self, http: VendorHttp, addresses: Sequence[str]) -> str:
        headers = {**self._auth(http), "Content-Type": "text/csv"}
        headers["X-Kickbox-Filename"] = "listclean.csv"
        body = ("\n".join(addresses) + "\n").encode()
        reply = await http.call("PUT", "api", "/v2/verify-batch", data=body, headers=headers)
        data = self._answer(http, reply)
        if data.get("id") in (None, ""):
            raise http.error(Failure.BAD_ANSWER, "kickbox's verify-batch gave no id")
        return str(data["id"])

    async def status(self, http: VendorHttp, job_id: str) -> JobStatus:
        data = await self._job(http, job_id)
        state = str(data.get("status") or "").lower()
        progress = part(data, "progress")
        total, left = count(progress.get("total")), count(progress.get("unprocessed"))
        share = (total - left) / total if total and left is not None else None
        if state == "completed":
            return JobStatus(True, progress=1.0)
        if state in _FAILED:
            return JobStatus(True, failed=str(data.get("error") or state))
        return JobStatus(False, progress=share)

    async def results(self, http: VendorHttp, job_id: str) -> dict[str, VendorAnswer]:
        link = str((await self._job(http, job_id)).get("download_url") or "")
        if not link:
            raise http.error(Failure.BAD_ANSWER, "kickbox's finished batch has no download_url")
        reply = await http.call("GET", "api", "", url=link)  # signed: no key goes with it
        if reply.status >= 400:
            raise http.error(Failure.UNAVAILABLE, f"kickbox's download answered {reply.status}")
        answers = {}
        for row in csv.DictReader(io.StringIO(reply.text.lstrip("\ufeff"))):
            record = {(k or "").strip().lower(): v for k, v in row.items()}
            address = str(record.get("email") or "").strip().lower()
            if address:
                answers[address] = _read(record)
        return answers

    async def _job(self, http: VendorHttp, job_id: str) -> dict[str, Any]:
        path = f"/v2/verify-batch/{job_id}"
        return self._answer(http, await http.call("GET", "api", path, headers=self._auth(http)))

    def _answer(self, http: VendorHttp, reply: Reply) -> dict[str, Any]:
        if reply.status == 403:
            said = said_in(reply).lower()
            if any(words in said for words in _NO_BALANCE):
                raise http.error(Failure.NO_CREDITS, f"kickbox: out of credits ({said[:100]})")
        http.refusal(reply, no_credits=frozenset())
        data = reply.object(self.name)
        if data.get("success") in (False, "false"):
            said = str(data.get("message") or "no message")[:200]
            raise http.error(Failure.BAD_ANSWER, f"kickbox: {said}")
        return data


def _read(record: Mapping[str, Any]) -> VendorAnswer:
    flags = {name: record.get(name) for name in _FLAGS}
    return read_shared(
        "kickbox", str(record.get("result") or ""), str(record.get("reason") or ""), flags
    )
