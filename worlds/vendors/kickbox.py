"""A fake Kickbox (v2): /v2/verify, /v2/balance and /v2/verify-batch, with the key in
``Authorization: Bearer`` (or ``apikey``).

Its answers follow Kickbox's sandbox triggers (the local part or +tag): ``rejected-email``,
``invalid-domain``, ``invalid-email``, ``invalid-smtp`` (undeliverable); ``low-quality``,
``accept-all``, ``role``, ``disposable`` (risky); ``timeout``, ``unexpected-error``,
``no-connect``, ``unavailable-smtp`` (unknown); ``insufficient-balance`` (403); ``new-result``
(a result word Kickbox might add). Anything else is deliverable. 403 answers both a refused
key and an empty balance, the message telling which. Unknown is refunded. A batch's results
sit behind a download URL on the same server.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from aiohttp import web

from worlds.vendors.base import FakeJob, FakeVendor, trigger

_UNDELIVERABLE = ("rejected-email", "invalid-domain", "invalid-email", "invalid-smtp")
_UNKNOWN = ("timeout", "unexpected-error", "no-connect", "unavailable-smtp")
_RISKY = {
    "low-quality": ("low_quality", {"free": True}),
    "accept-all": ("low_deliverability", {"accept_all": True}),
    "role": ("low_quality", {"role": True}),
    "disposable": ("low_quality", {"disposable": True, "accept_all": True}),
}
_COLUMNS = ("email", "result", "reason", "role", "free", "disposable", "accept_all", "sendex")


def verdict(address: str) -> dict[str, Any]:
    word = trigger(address)
    flags = {"role": False, "free": False, "disposable": False, "accept_all": False}
    result, reason, sendex = "deliverable", "accepted_email", 1.0
    if word in _UNDELIVERABLE:
        result, reason, sendex = "undeliverable", word.replace("-", "_"), 0.0
    elif word in _UNKNOWN:
        result, reason, sendex = "unknown", word.replace("-", "_"), 0.5
    elif word in _RISKY:
        reason, extra = _RISKY[word]
        result, sendex = "risky", 0.5
        flags |= extra
    elif word == "new-result":
        result, reason = "questionable", "something_new"
    user, _, domain = address.partition("@")
    return {
        "result": result,
        "reason": reason,
        **flags,
        "did_you_mean": None,
        "sendex": sendex,
        "email": address,
        "user": user,
        "domain": domain,
        "success": True,
        "message": None,
    }


class FakeKickbox(FakeVendor):
    name = "kickbox"

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/v2/balance", self._balance)
        app.router.add_get("/v2/verify", self._verify)
        app.router.add_put("/v2/verify-batch", self._batch)
        app.router.add_get("/v2/verify-batch/{id}", self._batch_status)
        app.router.add_get("/download/{id}.csv", self._download)

    def _key(self, request: web.Request) -> str | None:
        auth = request.headers.get("Authorization", "")
        return auth.removeprefix("Bearer ").strip() if auth else request.query.get("apikey")

    def _forbidden(self, message: str) -> web.Response:
        return web.json_response({"success": False, "message": message}, status=403)

    async def _balance(self, request: web.Request) -> web.Response:
        key = self._key(request)
        if not self.key_known(key):
            return self._forbidden("Invalid API Key")
        return web.json_response({"balance": self.told(str(key))})

    async def _verify(self, request: web.Request) -> web.Response:
        key = self._key(request)
        if not self.key_known(key):
            return self._forbidden("Invalid API Key")
        answer = verdict(request.query.get("email", ""))
        if trigger(answer["email"]) == "insufficient-balance" or not self.charge(str(key), 1):
            return self._forbidden("Insufficient balance")
        if answer["result"] == "unknown":
            self.refund(str(key), 1)
        headers = {"X-Kickbox-Balance": str(self.balances[str(key)])}
        return web.json_response(answer, headers=headers)

    async def _batch(self, request: web.Request) -> web.Response:
        key = self._key(request)
        if not self.key_known(key):
            return self._forbidden("Invalid API Key")
        if request.content_type != "text/csv":
            return web.json_response({"success": False, "message": "Wrong type"}, status=415)
        addresses = [line.strip() for line in (await request.text()).splitlines() if line.strip()]
        if not self.charge(str(key), len(addresses)):
            return self._forbidden("Insufficient balance")
        job = self.new_job(str(key), addresses)
        return web.json_response({"id": int(job.job_id), "success": True, "message": None})

    def finished(self, job: FakeJob) -> None:
        self.refund(job.key, sum(1 for r in job.records if r["result"] == "unknown"))

    async def _batch_status(self, request: web.Request) -> web.Response:
        if not self.key_known(self._key(request)):
            return self._forbidden("Invalid API Key")
        job = self.jobs.get(request.match_info["id"])
        if job is None:
            return web.json_response({"success": False, "message": "Not found"}, status=404)
        done = self.poll(job, verdict)
        total = len(job.addresses)
        body: dict[str, Any] = {
            "id": int(job.job_id),
            "status": "completed" if done else "processing",
            "progress": {"total": total, "unprocessed": 0 if done else total},
            "success": True,
        }
        if done:
            body["download_url"] = f"{self.url}/download/{job.job_id}.csv?Signature=abc"
        return web.json_response(body)

    async def _download(self, request: web.Request) -> web.Response:
        job = self.jobs[request.match_info["id"]]
        if "Authorization" in request.headers:  # a signed URL takes no key
            return web.Response(status=400, text="<Error>Only one auth mechanism</Error>")
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(job.records)
        return web.Response(body=out.getvalue().encode(), content_type="text/csv")
