"""A fake Emailable (v1): /v1/verify, /v1/account and /v1/batch, with the key in
``Authorization: Bearer`` (or ``api_key``).

Its answers follow the addresses Emailable's own SDK tests rely on: ``deliverable@``,
``undeliverable@``, ``accept-all@``, ``disposable@``, ``free@``, ``role@``, ``mailbox-full@``,
``no-reply@``; ``slow@`` answers 249 ("send your request again") once, then its answer; and
``unknown@`` (unknown/timeout), ``new-state@`` (a state Emailable might add). Anything else is
deliverable. 401 without a key, 403 for a wrong one, 402 without credits. A batch answers
``{processed, total}`` while it runs and ``{emails: [...]}`` once done.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from worlds.vendors.base import FakeVendor, trigger

SLOW = {"message": "Your request is taking longer than normal. Please send your request again."}
_FLAGS = ("accept_all", "disposable", "free", "role", "mailbox_full", "no_reply")


def verification(address: str) -> dict[str, Any]:
    word = trigger(address).replace("-", "_")
    state, reason, score = "deliverable", "accepted_email", 95
    if word == "undeliverable":
        state, reason, score = "undeliverable", "rejected_email", 0
    elif word in ("accept_all", "mailbox_full"):
        state, reason, score = "risky", "low_deliverability", 60
    elif word == "disposable":
        state, reason, score = "risky", "low_quality", 30
    elif word == "unknown":
        state, reason, score = "unknown", "timeout", 50
    elif word == "new_state":
        state, reason = "undetermined", "something_new"
    user, _, domain = address.partition("@")
    return {
        "email": address,
        "state": state,
        "reason": reason,
        "score": score,
        **{flag: word == flag for flag in _FLAGS},
        "user": user,
        "domain": domain,
        "duration": 0.3,
    }


class FakeEmailable(FakeVendor):
    name = "emailable"

    def __init__(self, credits: int = 1_000, polls: int | None = 2) -> None:
        super().__init__(credits, polls)
        self.slow_asked: set[str] = set()

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/v1/account", self._account)
        app.router.add_route("*", "/v1/verify", self._verify)
        app.router.add_post("/v1/batch", self._batch)
        app.router.add_get("/v1/batch", self._batch_status)

    def _key(self, request: web.Request) -> tuple[str | None, web.Response | None]:
        auth = request.headers.get("Authorization", "")
        key = auth.removeprefix("Bearer ").strip() if auth else request.query.get("api_key")
        if not key:
            return None, web.json_response({"message": "API key is required"}, status=401)
        if not self.key_known(key):
            return None, web.json_response({"message": "Invalid API key"}, status=403)
        return key, None

    async def _account(self, request: web.Request) -> web.Response:
        key, refused = self._key(request)
        if refused is not None or key is None:
            return refused or web.Response(status=500)
        body = {"owner_email": "owner@example.org", "available_credits": self.told(key)}
        return web.json_response(body)

    async def _verify(self, request: web.Request) -> web.Response:
        key, refused = self._key(request)
        if refused is not None or key is None:
            return refused or web.Response(status=500)
        address = request.query.get("email", "")
        if trigger(address) == "slow" and address not in self.slow_asked:
            self.slow_asked.add(address)
            return web.json_response(SLOW, status=249)
        if not self.charge(key, 1):
            return web.json_response({"message": "Insufficient credits"}, status=402)
        return web.json_response(verification(address))

    async def _batch(self, request: web.Request) -> web.Response:
        key, refused = self._key(request)
        if refused is not None or key is None:
            return refused or web.Response(status=500)
        emails = list(json.loads(await request.read()).get("emails") or [])
        if not self.charge(key, len(emails)):
            return web.json_response({"message": "Insufficient credits"}, status=402)
        job = self.new_job(key, emails)
        return web.json_response({"id": f"em{job.job_id}", "message": "Batch created."})

    async def _batch_status(self, request: web.Request) -> web.Response:
        key, refused = self._key(request)
        if refused is not None or key is None:
            return refused or web.Response(status=500)
        job = self.jobs.get(request.query.get("id", "").removeprefix("em"))
        if job is None:
            return web.json_response({"message": "Batch not found"}, status=404)
        if not self.poll(job, verification):
            body = {"message": "Your batch is being processed.", "processed": 0}
            return web.json_response({**body, "total": len(job.addresses)})
        return web.json_response({"id": f"em{job.job_id}", "emails": job.records})
