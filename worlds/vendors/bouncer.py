"""A fake Bouncer (v1.1): /v1.1/email/verify, /v1.1/credits and batches, with the key in the
``x-api-key`` header.

Bouncer publishes no sandbox, so the fake borrows Kickbox's convention: ``rejected-email@``,
``invalid-domain@``, ``invalid-email@`` (undeliverable), ``disabled@`` (rejected, its account
disabled), ``full-mailbox@`` (risky, its mailbox full), ``accept-all@``, ``disposable@``,
``low-quality@`` (risky), ``timeout@`` (unknown), ``greylisted@`` (unknown, with retryAfter),
``dns-error@``, ``unsupported@`` (unknown); anything else is deliverable. Its flags are
``"yes"|"no"|"unknown"`` strings. 401 for a refused key, 402 without credits.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from worlds.vendors.base import FakeVendor, trigger

_V = "/v1.1"
_UNDELIVERABLE = ("rejected-email", "invalid-domain", "invalid-email")
_UNKNOWN = ("timeout", "dns-error", "unsupported")


def verification(address: str) -> dict[str, Any]:
    word = trigger(address)
    status, reason = "deliverable", "accepted_email"
    domain = {"acceptAll": "no", "disposable": "no", "free": "no"}
    account = {"role": "no", "disabled": "no", "fullMailbox": "no"}
    extra: dict[str, Any] = {}
    if word in _UNDELIVERABLE:
        status, reason = "undeliverable", word.replace("-", "_")
    elif word == "disabled":
        status, reason, account["disabled"] = "undeliverable", "rejected_email", "yes"
    elif word == "full-mailbox":
        status, reason, account["fullMailbox"] = "risky", "low_deliverability", "yes"
    elif word == "accept-all":
        status, reason, domain["acceptAll"] = "risky", "low_deliverability", "yes"
    elif word == "disposable":
        status, reason, domain["disposable"] = "risky", "low_quality", "yes"
    elif word == "low-quality":
        status, reason = "risky", "low_quality"
    elif word in _UNKNOWN:
        status, reason = "unknown", word.replace("-", "_")
        domain = dict.fromkeys(domain, "unknown")
    elif word == "greylisted":
        status, reason, extra = "unknown", "timeout", {"retryAfter": "2026-12-01T10:00:00Z"}
    name = address.partition("@")[2]
    return {
        "email": address,
        "status": status,
        "reason": reason,
        "domain": {"name": name, **domain},
        "account": account,
        "dns": {"type": "MX", "record": f"mx.{name}"},
        "provider": name,
        "score": 95 if status == "deliverable" else 40,
        "toxic": "unknown",
        **extra,
    }


class FakeBouncer(FakeVendor):
    name = "bouncer"

    def routes(self, app: web.Application) -> None:
        app.router.add_get(f"{_V}/credits", self._credits)
        app.router.add_get(f"{_V}/email/verify", self._verify)
        app.router.add_post(f"{_V}/email/verify/batch", self._batch)
        app.router.add_get(f"{_V}/email/verify/batch/{{id}}", self._batch_status)
        app.router.add_get(f"{_V}/email/verify/batch/{{id}}/download", self._download)

    def _key(self, request: web.Request) -> str | None:
        key = request.headers.get("x-api-key")
        return key if self.key_known(key) else None

    def _unauthorized(self) -> web.Response:
        body = {"status": 401, "error": "Unauthorized", "message": "user not found"}
        return web.json_response(body, status=401)

    def _payment(self) -> web.Response:
        body = {"status": 402, "error": "Payment Required", "message": "not enough credits"}
        return web.json_response(body, status=402)

    async def _credits(self, request: web.Request) -> web.Response:
        key = self._key(request)
        if key is None:
            return self._unauthorized()
        return web.json_response({"credits": self.told(key)})

    async def _verify(self, request: web.Request) -> web.Response:
        key = self._key(request)
        if key is None:
            return self._unauthorized()
        if not self.charge(key, 1):
            return self._payment()
        return web.json_response(verification(request.query.get("email", "")))

    async def _batch(self, request: web.Request) -> web.Response:
        key = self._key(request)
        if key is None:
            return self._unauthorized()
        emails = [row["email"] for row in json.loads(await request.read())]
        if not self.charge(key, len(emails)):
            return self._payment()
        job = self.new_job(key, emails)
        body = {"batchId": f"b-{job.job_id}", "created": "2026-11-30T10:00:00Z"}
        return web.json_response({**body, "status": "queued", "quantity": len(emails)})

    async def _batch_status(self, request: web.Request) -> web.Response:
        if self._key(request) is None:
            return self._unauthorized()
        job = self.jobs[request.match_info["id"].removeprefix("b-")]
        done = self.poll(job, verification)
        body = {"batchId": f"b-{job.job_id}", "quantity": len(job.addresses)}
        return web.json_response({**body, "status": "completed" if done else "processing"})

    async def _download(self, request: web.Request) -> web.Response:
        if self._key(request) is None:
            return self._unauthorized()
        job = self.jobs[request.match_info["id"].removeprefix("b-")]
        return web.json_response(job.records)
