"""NeverBounce (v4.2): ``single/check`` for a handful of addresses, the jobs API for lists.

Its usage guidelines forbid walking a list through ``single/check`` ("may result in the account
being locked and API access disabled"), so above 100 distinct addresses a run always uses
``jobs/create`` (supplied input, parsed and started at once: the credits go when it starts) →
``jobs/status`` until ``complete`` → ``jobs/results`` page by page. Each input row carries our
own ``id``, which NeverBounce echoes in ``data``.

Every failure comes inside HTTP 200 as ``{"status": ...}``: ``auth_failure`` and
``bad_referrer`` (the key), ``general_failure`` (out of credits when its message says
"Insufficient credit balance", NeverBounceApi-Python#6), ``throttle_triggered`` and
``temp_unavail`` (wait and ask again). NeverBounce bills every verification, unknown and
duplicates included, so nothing it answered is asked again by a retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from pipeline.core.mailboxes.vendors.http import Reply, VendorHttp
from pipeline.core.mailboxes.vendors.types import Failure, JobStatus, Limits, VendorAnswer
from pipeline.core.mailboxes.vendors.verdicts import count, part, read_neverbounce

_V: Final = "/v4.2"
_PAGE: Final = 1000  # items_per_page: 1 to 1000
_FAILED: Final = frozenset({"failed", "under_review"})  # under_review waits for a human


class NeverBounce:
    name: Final = "neverbounce"
    # No published rate for single checks (a per-application dashboard setting); at most 100
    # addresses a run by single check (its usage guidelines).
    limits: Final = Limits(
        concurrency=8, per_minute=0, single_max=100, bulk_max=1_000_000, bills_unknown=True
    )
    origins: Final = {"api": "https://api.neverbounce.com"}

    async def balance(self, http: VendorHttp) -> int | None:
        reply = await http.call("GET", "api", f"{_V}/account/info", params={"key": http.key})
        data = self._answer(http, reply)
        credits = data.get("credits_info") or data.get("credits")
        if isinstance(credits, dict):
            # Metered billing has no paid_credits_remaining (NeverBounceApi-Ruby#15): unknown.
            paid = count(credits.get("paid_credits_remaining"))
            free = count(credits.get("free_credits_remaining")) or 0
            return None if paid is None else paid + free
        paid = count(credits)
        return None if paid is None else paid + (count(data.get("free_credits")) or 0)

    async def check(self, http: VendorHttp, address: str) -> VendorAnswer:
        # timeout: seconds NeverBounce may spend verifying, below our own client timeout
        # (its maintainers: the API's timeout does not bound the round trip).
        budget = str(max(1, int(http.config.timeout) // 2))
        params = {"key": http.key, "email": address, "timeout": budget}
        reply = await http.call("GET", "api", f"{_V}/single/check", params=params)
        data = self._answer(http, reply)
        return read_neverbounce(data.get("result"), data.get("flags") or ())

    async def submit(self, http: VendorHttp, addresses: Sequence[str]) -> str:
        body = {
            "key": http.key,
            "input_location": "supplied",
            "input": [{"id": str(i), "email": a} for i, a in enumerate(addresses)],
            "filename": "listclean.csv",
            "auto_parse": 1,
            "auto_start": 1,
        }
        reply = await http.call("POST", "api", f"{_V}/jobs/create", json_body=body)
        data = self._answer(http, reply)
        if data.get("job_id") in (None, ""):
            raise http.error(Failure.BAD_ANSWER, "neverbounce's jobs/create gave no job_id")
        return str(data["job_id"])

    async def status(self, http: VendorHttp, job_id: str) -> JobStatus:
        params = {"key": http.key, "job_id": job_id}
        reply = await http.call("GET", "api", f"{_V}/jobs/status", params=params)
        data = self._answer(http, reply)
        state = str(data.get("job_status") or "").lower()
        percent = count(data.get("percent_complete"))
        progress = percent / 100 if percent is not None else None
        if state == "complete":
            return JobStatus(True, progress=1.0)
        if state in _FAILED:
            return JobStatus(True, failed=str(data.get("failure_reason") or state))
        return JobStatus(False, progress=progress)

    async def results(self, http: VendorHttp, job_id: str) -> dict[str, VendorAnswer]:
        answers: dict[str, VendorAnswer] = {}
        page, pages = 1, 1
        while page <= pages:
            params = {"key": http.key, "job_id": job_id, "page": str(page)}
            params["items_per_page"] = str(_PAGE)
            reply = await http.call("GET", "api", f"{_V}/jobs/results", params=params)
            data = self._answer(http, reply)
            for item in data.get("results") or ():
                address, answer = _item(item)
                if address:
                    answers[address] = answer
            pages = count(data.get("total_pages")) or 0
            page += 1
        return answers

    def _answer(self, http: VendorHttp, reply: Reply) -> dict[str, Any]:
        """The body of a ``success``; any other status is the failure it names."""
        if reply.status >= 400 and not reply.is_json:
            raise http.error(Failure.BAD_ANSWER, f"neverbounce answered HTTP {reply.status}")
        data = reply.object(self.name)
        status = str(data.get("status", "")).lower()
        if status == "success":
            return data
        message = str(data.get("message") or "")[:200]
        if status in ("auth_failure", "bad_referrer"):
            raise http.error(Failure.KEY_REFUSED, f"neverbounce: {status} ({message})")
        if status in ("throttle_triggered", "temp_unavail"):
            raise http.error(Failure.THROTTLED, f"neverbounce: {status}")
        if status == "general_failure" and "credit" in message.lower():
            raise http.error(Failure.NO_CREDITS, f"neverbounce: out of credits ({message})")
        raise http.error(Failure.BAD_ANSWER, f"neverbounce: {status or 'no status'} ({message})")


def _item(item: Any) -> tuple[str, VendorAnswer]:
    """One row of ``jobs/results``: (address, answer)."""
    if not isinstance(item, dict):
        return "", read_neverbounce("", ())
    data, verification = part(item, "data"), part(item, "verification")
    address = str(
        data.get("email") or verification.get("address_info", {}).get("original_email", "")
    )
    return address.strip().lower(), read_neverbounce(
        verification.get("result"), verification.get("flags") or ()
    )
