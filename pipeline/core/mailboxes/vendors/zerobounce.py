"""ZeroBounce (v2): ``/v2/validate`` per address, a file job for lists, ``/v2/getcredits``.

The key travels as the ``api_key`` parameter (the only way ZeroBounce takes it). Failures come
inside the body as ``{"error": ...}`` whatever the status, and one message covers a refused key
and an empty balance ("Invalid API key or your account ran out of credits"), so the message is
never read for which: ``getcredits`` answers ``"-1"`` for a bad key (the Python SDK's tests).

Bulk is the file API on the ``bulkapi`` host: ``sendfile`` (a one-column CSV with a header row,
duplicates removed, which ZeroBounce does not bill) → ``filestatus`` until ``Complete`` →
``getfile``, a CSV of the input's columns and ``ZB Status``, ``ZB Sub Status``... (the Ruby
SDK's recorded cassettes). ``getfile`` may answer a JSON error with status 200. ZeroBounce
does not bill ``unknown``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any, Final

from pipeline.core.mailboxes.vendors.http import Reply, VendorHttp
from pipeline.core.mailboxes.vendors.types import (
    Failure,
    JobStatus,
    Limits,
    VendorAnswer,
    VendorError,
)
from pipeline.core.mailboxes.vendors.verdicts import count, read_zerobounce

_FAILED_FILE: Final = ("fail", "error", "deleted", "rejected")


class ZeroBounce:
    name: Final = "zerobounce"
    # validate: 80,000 requests per 10 s per key (api-dashboard); one credit an address.
    limits: Final = Limits(
        concurrency=25, per_minute=0, single_max=None, bulk_max=1_000_000, bills_unknown=False
    )
    origins: Final = {"api": "https://api.zerobounce.net", "bulk": "https://bulkapi.zerobounce.net"}

    async def balance(self, http: VendorHttp) -> int | None:
        reply = await http.call("GET", "api", "/v2/getcredits", params={"api_key": http.key})
        data = self._body(http, reply)
        credits = count(data.get("Credits"))
        if credits is None:
            raise http.error(Failure.BAD_ANSWER, "zerobounce's getcredits gave no Credits")
        if credits < 0:  # "-1": the key is not one of ZeroBounce's
            raise http.error(Failure.KEY_REFUSED, "zerobounce does not know the key (Credits -1)")
        return credits

    async def check(self, http: VendorHttp, address: str) -> VendorAnswer:
        params = {"api_key": http.key, "email": address, "ip_address": ""}
        reply = await http.call("GET", "api", "/v2/validate", params=params)
        if reply.status == 403:  # "API Shield": a block of requests, not a refusal of the key
            raise http.error(Failure.THROTTLED, "zerobounce's API Shield answered 403")
        data = await self._answer(http, reply)
        return read_zerobounce(str(data.get("status", "")), str(data.get("sub_status") or ""))

    async def submit(self, http: VendorHttp, addresses: Sequence[str]) -> str:
        import aiohttp

        form = aiohttp.FormData()
        form.add_field("api_key", http.key)
        form.add_field("email_address_column", "1")
        form.add_field("has_header_row", "true")
        form.add_field("remove_duplicate", "true")
        text = "email\n" + "\n".join(addresses) + "\n"
        form.add_field("file", text.encode(), filename="listclean.csv", content_type="text/csv")
        reply = await http.call("POST", "bulk", "/v2/sendfile", data=form)
        data = await self._answer(http, reply)
        if data.get("success") in (False, "false") or not data.get("file_id"):
            raise await self._failure(http, str(data.get("message") or "sendfile refused"))
        return str(data["file_id"])

    async def status(self, http: VendorHttp, job_id: str) -> JobStatus:
        params = {"api_key": http.key, "file_id": job_id}
        reply = await http.call("GET", "bulk", "/v2/filestatus", params=params)
        data = await self._answer(http, reply)
        state = str(data.get("file_status") or "").strip().lower()
        done = count(data.get("complete_percentage"))
        progress = done / 100 if done is not None else None
        if state == "complete":
            return JobStatus(True, progress=1.0)
        if any(word in state for word in _FAILED_FILE):
            return JobStatus(True, failed=str(data.get("error_reason") or state), progress=progress)
        return JobStatus(False, progress=progress)

    async def results(self, http: VendorHttp, job_id: str) -> dict[str, VendorAnswer]:
        params = {"api_key": http.key, "file_id": job_id}
        reply = await http.call("GET", "bulk", "/v2/getfile", params=params)
        if reply.is_json or reply.body.lstrip().startswith(b"{"):  # an error, status 200
            await self._answer(http, reply)
            raise http.error(Failure.BAD_ANSWER, "zerobounce's getfile gave no file")
        rows = csv.DictReader(io.StringIO(reply.text.lstrip("\ufeff")))
        answers = {}
        for row in rows:
            fields = {(k or "").strip().lower(): (v or "") for k, v in row.items()}
            address = fields.get("email") or fields.get("email address") or ""
            if address:
                status, sub = fields.get("zb status", ""), fields.get("zb sub status", "")
                answers[address.strip().lower()] = read_zerobounce(status, sub)
        return answers

    def _body(self, http: VendorHttp, reply: Reply) -> dict[str, Any]:
        if reply.status >= 400 and not reply.is_json:
            raise http.error(Failure.BAD_ANSWER, f"zerobounce answered HTTP {reply.status}")
        return reply.object(self.name)

    async def _answer(self, http: VendorHttp, reply: Reply) -> dict[str, Any]:
        """The body, unless it is an ``error``, which becomes the failure it stands for."""
        data = self._body(http, reply)
        error = data.get("error") or data.get("Error")
        if error:
            raise await self._failure(http, str(error))
        return data

    async def _failure(self, http: VendorHttp, message: str) -> VendorError:
        """ZeroBounce's one message for two causes, told apart by the balance it reports."""
        words = message.lower()
        if "credit" not in words and "key" not in words:
            return http.error(Failure.BAD_ANSWER, f"zerobounce: {message[:200]}")
        await self.balance(http)  # raises KEY_REFUSED when the key is the cause
        return http.error(Failure.NO_CREDITS, f"zerobounce: out of credits ({message[:200]})")
