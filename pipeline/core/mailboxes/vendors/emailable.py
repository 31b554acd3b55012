"""Emailable (v1): ``/v1/verify`` per address, ``/v1/batch`` for lists, ``/v1/account``.

The key travels in ``Authorization: Bearer``. Status codes carry the failures: 402 not enough
credits, 401 no key, 403 a refused key, 429 too many requests, 503 maintenance. A verification
that outlasts its timeout answers **249** ("send your request again") and goes on in the
background; the identical request is free for five minutes, so 249 is asked again, never read
as an answer (the Python client returns it as a success; the Ruby one raises). A batch's status
comes in three shapes (emailable-cli ``internal/api/types.go``): still running
``{message, processed, total}``, a finished small batch ``{emails: [...]}``, a finished large
one ``{download_file: URL}``. Limits: 25 verifications a second, 5 batch calls a second.
Emailable does not say whether it bills ``unknown``: counted as billed.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pipeline.core.mailboxes.vendors.http import Reply, VendorHttp
from pipeline.core.mailboxes.vendors.types import Failure, JobStatus, Limits, VendorAnswer
from pipeline.core.mailboxes.vendors.verdicts import count, read_shared

SLOW: Final = 249  # "Your request is taking longer than normal. Please send your request again."
_FLAGS: Final = ("accept_all", "mailbox_full", "disposable", "role", "free")


class Emailable:
    name: Final = "emailable"
    limits: Final = Limits(
        concurrency=25, per_minute=1_500, single_max=None, bulk_max=100_000, bills_unknown=True
    )
    origins: Final = {"api": "https://api.emailable.com"}

    def _auth(self, http: VendorHttp) -> dict[str, str]:
        return {"Authorization": f"Bearer {http.key}"}

    async def balance(self, http: VendorHttp) -> int | None:
        reply = await http.call("GET", "api", "/v1/account", headers=self._auth(http))
        return count(self._answer(http, reply).get("available_credits"))

    async def check(self, http: VendorHttp, address: str) -> VendorAnswer:
        # timeout: seconds Emailable may spend, 2 to 10 (then 249).
        params = {"email": address, "timeout": str(min(10, max(2, int(http.config.timeout))))}
        reply = await http.call("GET", "api", "/v1/verify", params=params, headers=self._auth(http))
        return _read(self._answer(http, reply))

    async def submit(self, http: VendorHttp, addresses: Sequence[str]) -> str:
        body = {"emails": list(addresses)}
        reply = await http.call(
            "POST", "api", "/v1/batch", json_body=body, headers=self._auth(http)
        )
        data = self._answer(http, reply)
        if data.get("id") in (None, ""):
            raise http.error(Failure.BAD_ANSWER, "emailable's batch gave no id")
        return str(data["id"])

    async def status(self, http: VendorHttp, job_id: str) -> JobStatus:
        data = await self._batch(http, job_id)
        if "emails" in data or data.get("download_file"):
            return JobStatus(True, progress=1.0)
        processed, total = count(data.get("processed")), count(data.get("total"))
        share = processed / total if processed is not None and total else None
        return JobStatus(False, progress=share)

    async def results(self, http: VendorHttp, job_id: str) -> dict[str, VendorAnswer]:
        data = await self._batch(http, job_id)
        records = data.get("emails")
        if records is None and data.get("download_file"):
            reply = await http.call("GET", "api", "", url=str(data["download_file"]))
            records = _records(reply)
        answers = {}
        for record in records or ():
            if isinstance(record, dict) and record.get("email"):
                answers[str(record["email"]).strip().lower()] = _read(record)
        return answers

    async def _batch(self, http: VendorHttp, job_id: str) -> dict[str, Any]:
        params = {"id": job_id}
        reply = await http.call("GET", "api", "/v1/batch", params=params, headers=self._auth(http))
        return self._answer(http, reply)

    def _answer(self, http: VendorHttp, reply: Reply) -> dict[str, Any]:
        http.refusal(reply, throttled=frozenset({SLOW}))
        return reply.object(self.name)


def _records(reply: Reply) -> list[Any]:
    """A downloaded batch file: JSON (a list, or an object with ``emails``) or CSV."""
    text = reply.text.lstrip("\ufeff")
    if text.lstrip().startswith(("[", "{")):
        data = json.loads(text)
        return list(data.get("emails") or []) if isinstance(data, dict) else list(data)
    return [
        {(k or "").strip().lower(): v for k, v in row.items()}
        for row in csv.DictReader(io.StringIO(text))
    ]


def _read(record: Mapping[str, Any]) -> VendorAnswer:
    flags = {name: record.get(name) for name in _FLAGS}
    return read_shared(
        "emailable", str(record.get("state") or ""), str(record.get("reason") or ""), flags
    )
