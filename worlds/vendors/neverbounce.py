"""A fake NeverBounce (v4.2): account/info, single/check and the jobs API.

NeverBounce publishes no sandbox, so the fake borrows Kickbox's convention: the local part
(or +tag) names the answer: ``invalid@``, ``disposable@``, ``catchall@``, ``unknown@``,
``bad-dns@`` (invalid, bad_dns), ``no-mx@`` (invalid, has_dns without has_dns_mx),
``trap@`` (valid on a spamtrap network), ``inconclusive@`` (a result NeverBounce once sent
undocumented); anything else is valid. Every failure is a 200 with a ``status``; its
auth_failure message quotes the key back, as NeverBounce's does. Every verification is billed.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from worlds.vendors.base import FakeVendor, trigger

_V = "/v4.2"
_ANSWERS: dict[str, tuple[str, list[str]]] = {
    "invalid": ("invalid", ["has_dns", "has_dns_mx"]),
    "disposable": ("disposable", ["has_dns", "has_dns_mx", "disposable_email"]),
    "catchall": ("catchall", ["has_dns", "has_dns_mx", "accepts_all"]),
    "unknown": ("unknown", ["has_dns", "has_dns_mx"]),
    "bad-dns": ("invalid", ["bad_dns"]),
    "no-mx": ("invalid", ["has_dns"]),
    "trap": ("valid", ["has_dns", "has_dns_mx", "spamtrap_network"]),
    "inconclusive": ("inconclusive", []),
}
NO_CREDIT = (
    "Insufficient credit balance. This transaction requires {n} credits. "
    "The current available credit balance is {left}."
)


def verification(address: str) -> dict[str, Any]:
    result, flags = _ANSWERS.get(trigger(address), ("valid", ["has_dns", "has_dns_mx"]))
    return {"result": result, "flags": flags, "suggested_correction": ""}


class FakeNeverBounce(FakeVendor):
    name = "neverbounce"

    def __init__(self, credits: int = 1_000, polls: int | None = 2) -> None:
        super().__init__(credits, polls)
        self.throttle = 0  # single checks to answer throttle_triggered before answering
        self.inputs: dict[str, list[Any]] = {}  # each job's input rows, echoed as data

    def routes(self, app: web.Application) -> None:
        app.router.add_get(f"{_V}/account/info", self._account)
        app.router.add_route("*", f"{_V}/single/check", self._single)
        app.router.add_post(f"{_V}/jobs/create", self._create)
        app.router.add_get(f"{_V}/jobs/status", self._status)
        app.router.add_get(f"{_V}/jobs/results", self._results)

    def _refused(self, key: str | None) -> web.Response | None:
        if self.key_known(key):
            return None
        body = {"status": "auth_failure", "message": f"Invalid API key '{key}'"}
        return web.json_response(body)

    async def _account(self, request: web.Request) -> web.Response:
        key = request.query.get("key")
        if (refused := self._refused(key)) is not None:
            return refused
        left = self.told(str(key))
        return web.json_response(
            {
                "status": "success",
                "billing_type": "default",
                "credits_info": {
                    "paid_credits_used": self.spent,
                    "free_credits_used": 0,
                    "paid_credits_remaining": left,
                    "free_credits_remaining": 0,
                },
                "job_counts": {"completed": 0, "under_review": 0, "queued": 0, "processing": 0},
            }
        )

    async def _single(self, request: web.Request) -> web.Response:
        key = request.query.get("key")
        if (refused := self._refused(key)) is not None:
            return refused
        if self.throttle:
            self.throttle -= 1
            return web.json_response({"status": "throttle_triggered", "message": "Slow down"})
        if not self.charge(str(key), 1):
            message = NO_CREDIT.format(n=1, left=self.balances[str(key)])
            return web.json_response({"status": "general_failure", "message": message})
        answer = verification(request.query.get("email", ""))
        return web.json_response({"status": "success", **answer, "execution_time": 250})

    async def _create(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        key = body.get("key")
        if (refused := self._refused(key)) is not None:
            return refused
        rows = body.get("input") or []
        addresses = [r["email"] if isinstance(r, dict) else r[0] for r in rows]
        if not self.charge(str(key), len(addresses)):
            message = NO_CREDIT.format(n=len(addresses), left=self.balances[str(key)])
            return web.json_response({"status": "general_failure", "message": message})
        job = self.new_job(str(key), addresses)
        self.inputs[job.job_id] = rows
        return web.json_response({"status": "success", "job_id": int(job.job_id)})

    async def _status(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request.query.get("key"))) is not None:
            return refused
        job = self.jobs.get(request.query.get("job_id", ""))
        if job is None:
            return web.json_response({"status": "general_failure", "message": "Job not found"})
        done = self.poll(job, verification)
        return web.json_response(
            {
                "status": "success",
                "id": int(job.job_id),
                "job_status": "complete" if done else "running",
                "percent_complete": 100 if done else 50,
                "total": {"records": len(job.addresses), "billable": len(job.addresses)},
            }
        )

    async def _results(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request.query.get("key"))) is not None:
            return refused
        job = self.jobs.get(request.query.get("job_id", ""))
        if job is None or not job.records:
            return web.json_response({"status": "general_failure", "message": "Job not ready"})
        page = int(request.query.get("page", "1"))
        size = int(request.query.get("items_per_page", "10"))
        rows = self.inputs[job.job_id]
        items = [
            {"data": row, "verification": record}
            for row, record in zip(rows, job.records, strict=True)
        ][(page - 1) * size : page * size]
        pages = -(-len(rows) // size)
        return web.json_response(
            {
                "status": "success",
                "total_results": len(rows),
                "total_pages": pages,
                "query": {"job_id": job.job_id, "page": page, "items_per_page": size},
                "results": items,
            }
        )
