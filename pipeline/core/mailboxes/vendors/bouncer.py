"""Bouncer (usebouncer.com, v1.1): ``/v1.1/email/verify`` per address, batches for lists,
``/v1.1/credits``.

The key travels in the ``x-api-key`` header. 401 is a refused key, 402 not enough credits, 429
too many requests, 503 "retry should solve the problem". Its flags are the strings
``"yes"|"no"|"unknown"`` inside ``domain`` and ``account``; ``retryAfter`` marks an answer that
can improve once greylisting lets go. A batch is a POST of ``[{email}]`` → ``batchId``; its
status is ``queued|processing|completed``; its results come from ``/download?download=all`` as
JSON. Bouncer says its real-time API returns about 5% more ``unknown`` than its batches, and
does not say whether it bills ``unknown``: counted as billed. Limits: 1,000 verifications a
minute, 100,000 addresses a batch, 60 batch creations a minute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pipeline.core.mailboxes.vendors.http import Reply, VendorHttp
from pipeline.core.mailboxes.vendors.types import Failure, JobStatus, Limits, VendorAnswer
from pipeline.core.mailboxes.vendors.verdicts import count, part, read_shared

_V: Final = "/v1.1"
_FAILED: Final = frozenset({"failed", "error", "cancelled"})


class Bouncer:
    name: Final = "bouncer"
    limits: Final = Limits(
        concurrency=10, per_minute=1_000, single_max=None, bulk_max=100_000, bills_unknown=True
    )
    origins: Final = {"api": "https://api.usebouncer.com"}

    def _auth(self, http: VendorHttp) -> dict[str, str]:
        return {"x-api-key": http.key}

    async def balance(self, http: VendorHttp) -> int | None:
        reply = await http.call("GET", "api", f"{_V}/credits", headers=self._auth(http))
        return count(self._answer(http, reply).get("credits"))

    async def check(self, http: VendorHttp, address: str) -> VendorAnswer:
        # timeout: seconds Bouncer may spend (default 10, at most 30).
        params = {"email": address, "timeout": str(min(30, max(1, int(http.config.timeout) // 2)))}
        path = f"{_V}/email/verify"
        reply = await http.call("GET", "api", path, params=params, headers=self._auth(http))
        return _read(self._answer(http, reply))

    async def submit(self, http: VendorHttp, addresses: Sequence[str]) -> str:
        body = [{"email": a} for a in addresses]
        path = f"{_V}/email/verify/batch"
        reply = await http.call("POST", "api", path, json_body=body, headers=self._auth(http))
        data = self._answer(http, reply)
        if data.get("batchId") in (None, ""):
            raise http.error(Failure.BAD_ANSWER, "bouncer's batch gave no batchId")
        return str(data["batchId"])

    async def status(self, http: VendorHttp, job_id: str) -> JobStatus:
        path = f"{_V}/email/verify/batch/{job_id}"
        data = self._answer(http, await http.call("GET", "api", path, headers=self._auth(http)))
        state = str(data.get("status") or "").lower()
        processed, total = count(data.get("processed")), count(data.get("quantity"))
        if state == "completed":
            return JobStatus(True, progress=1.0)
        if state in _FAILED:
            return JobStatus(True, failed=state)
        return JobStatus(
            False, progress=processed / total if processed is not None and total else None
        )

    async def results(self, http: VendorHttp, job_id: str) -> dict[str, VendorAnswer]:
        path = f"{_V}/email/verify/batch/{job_id}/download"
        params = {"download": "all"}
        reply = await http.call("GET", "api", path, params=params, headers=self._auth(http))
        http.refusal(reply)
        records = reply.json(self.name)
        answers = {}
        for record in records if isinstance(records, list) else ():
            if isinstance(record, dict) and record.get("email"):
                answers[str(record["email"]).strip().lower()] = _read(record)
        return answers

    def _answer(self, http: VendorHttp, reply: Reply) -> dict[str, Any]:
        http.refusal(reply)
        return reply.object(self.name)


def _read(record: Mapping[str, Any]) -> VendorAnswer:
    domain, account = part(record, "domain"), part(record, "account")
    flags = {
        "accept_all": domain.get("acceptAll"),
        "disposable": domain.get("disposable"),
        "mailbox_full": account.get("fullMailbox"),
        "disabled": account.get("disabled"),
        "retry_after": bool(record.get("retryAfter")),
    }
    return read_shared(
        "bouncer", str(record.get("status") or ""), str(record.get("reason") or ""), flags
    )
