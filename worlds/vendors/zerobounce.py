"""A fake ZeroBounce: /v2/validate, /v2/getcredits and the file API, on one loopback server
(``--api-url`` serves the ``bulkapi`` host's paths too).

Its answers follow ZeroBounce's sandbox: the local part names the status or sub-status
(``invalid@``, ``mailbox_not_found@``, ``spamtrap@``, ``donotmail@``...), here on any domain;
any other address is valid. ``shiny_new_status@`` answers a status ZeroBounce might add one
day. Failures come as ``{"error": ...}`` in a 200, one message for a bad key and an empty
balance; ``getcredits`` answers ``"-1"`` for a bad key. Unknown is not billed.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from aiohttp import web

from worlds.vendors.base import FakeJob, FakeVendor, trigger

ERROR = "Invalid API key or your account ran out of credits"
_VALID = {"valid": "", "free_email": "", "leading_period_removed": "leading_period_removed"}
_VALID |= {"gold": "gold", "role_based_accept_all": "role_based_accept_all"}
_VALID |= {"aiagentmailbox": "ai_agent_mailbox"}
_INVALID: tuple[str, ...] = (
    "mailbox_not_found",
    "no_dns_entries",
    "failed_syntax_check",
    "possible_typo",
    "mailbox_quota_exceeded",
    "does_not_accept_mail",
    "unroutable_ip_address",
)
_UNKNOWN: tuple[str, ...] = (
    "antispam_system",
    "exception_occurred",
    "failed_smtp_connection",
    "forcible_disconnect",
    "greylisted",
    "mail_server_did_not_respond",
    "mail_server_temporary_error",
    "timeout_exceeded",
)
_DO_NOT_MAIL: tuple[str, ...] = (
    "disposable",
    "toxic",
    "role_based",
    "role_based_catch_all",
    "global_suppression",
    "possible_trap",
)


def sandbox(address: str) -> tuple[str, str]:
    """(status, sub_status) of an address, as ZeroBounce's sandbox answers its magic ones."""
    word = trigger(address)
    if word in _VALID:
        return "valid", _VALID[word]
    if word == "invalid":
        return "invalid", "mailbox_not_found"
    if word in _INVALID:
        return "invalid", word
    if word == "catch_all":
        return "catch-all", ""
    if word == "unknown":
        return "unknown", "mail_server_temporary_error"
    if word in _UNKNOWN:
        return "unknown", word
    if word in ("spamtrap", "abuse"):
        return word, ""
    if word == "donotmail":
        return "do_not_mail", "role_based"
    if word in _DO_NOT_MAIL:
        return "do_not_mail", word
    if word == "shiny_new_status":
        return "shiny_new", "something_else"
    return "valid", ""


def record(address: str) -> dict[str, Any]:
    status, sub = sandbox(address)
    return {
        "address": address,
        "status": status,
        "sub_status": sub,
        "free_email": "true" if trigger(address) == "free_email" else "false",
        "mx_found": "true",
        "domain_age_days": "9692",
        "processed_at": "2026-11-30 10:00:00.000",
    }


class FakeZeroBounce(FakeVendor):
    name = "zerobounce"

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/v2/getcredits", self._credits)
        app.router.add_get("/v2/validate", self._validate)
        app.router.add_post("/v2/sendfile", self._sendfile)
        app.router.add_get("/v2/filestatus", self._filestatus)
        app.router.add_get("/v2/getfile", self._getfile)

    def finished(self, job: FakeJob) -> None:
        """Unknown answers are not billed: their credits come back."""
        self.refund(job.key, sum(1 for r in job.records if r["status"] == "unknown"))

    async def _credits(self, request: web.Request) -> web.Response:
        key = request.query.get("api_key")
        credits = self.told(key) if key and self.key_known(key) else -1
        return web.json_response({"Credits": str(credits)})

    async def _validate(self, request: web.Request) -> web.Response:
        key = request.query.get("api_key")
        if "email" not in request.query or "ip_address" not in request.query:
            return web.json_response({"error": "Missing parameter"}, status=400)
        answer = record(request.query["email"])
        if not key or not self.key_known(key):
            return web.json_response({"error": ERROR})
        if answer["status"] != "unknown" and not self.charge(key, 1):
            return web.json_response({"error": ERROR})
        return web.json_response(answer)

    async def _sendfile(self, request: web.Request) -> web.Response:
        form = await request.post()
        key = str(form.get("api_key", ""))
        upload = form.get("file")
        if not self.key_known(key) or not isinstance(upload, web.FileField):
            return web.json_response({"success": False, "message": ERROR})
        rows = list(csv.reader(io.StringIO(upload.file.read().decode())))
        column = int(str(form.get("email_address_column", "1"))) - 1
        header = str(form.get("has_header_row", "false")).lower() == "true"
        addresses = list(dict.fromkeys(r[column] for r in rows[1 if header else 0 :] if r))
        if not self.charge(key, len(addresses)):
            return web.json_response({"success": False, "message": ERROR})
        job = self.new_job(key, addresses)
        return web.json_response(
            {
                "success": True,
                "message": "File Accepted",
                "file_name": upload.filename,
                "file_id": f"zb-{job.job_id}",
            }
        )

    async def _filestatus(self, request: web.Request) -> web.Response:
        job = self.jobs.get(request.query.get("file_id", "").removeprefix("zb-"))
        if job is None or not self.key_known(request.query.get("api_key")):
            return web.json_response({"success": False, "message": "File not found"})
        done = self.poll(job, record)
        return web.json_response(
            {
                "success": True,
                "file_id": f"zb-{job.job_id}",
                "file_status": "Complete" if done else "Processing",
                "complete_percentage": "100%" if done else "40%",
                "error_reason": None,
            }
        )

    async def _getfile(self, request: web.Request) -> web.Response:
        job = self.jobs.get(request.query.get("file_id", "").removeprefix("zb-"))
        if job is None or not job.records:
            # An error in JSON with status 200, as getfile can answer.
            return web.json_response({"success": False, "message": "File not ready"})
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["email", "ZB Status", "ZB Sub Status", "ZB Free Email", "ZB MX Found"])
        for r in job.records:
            writer.writerow([r["address"], r["status"], r["sub_status"], r["free_email"], "true"])
        return web.Response(body=out.getvalue().encode(), content_type="text/csv")
