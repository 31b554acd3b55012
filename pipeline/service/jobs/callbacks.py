"""A job's completion callback: ``{"id", "state", "url"}`` POSTed to the URL it named, when it
ends, from the instance that ended it (three tries).

Where one may go is ``[jobs] callbacks``: ``off``; ``public``, the default, only to hosts every
address of which is on the internet (a callback is a request the service makes on a caller's
word, which must not reach the service's own network: loopback, private, link-local and
reserved addresses are refused); or ``any``. The body says nothing of the list: its receiver
asks the API, with its key, what became of the job.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import urllib.parse
from typing import Final

import aiohttp

from pipeline.service.jobs.types import Job

log = logging.getLogger("listclean.service")
_CALLBACK_TRIES: Final = 3
_RESOLVE_SECONDS: Final = 5.0


async def call_back(job: Job, reach: str) -> None:
    """Tell *job*'s callback URL that it ended, if *reach* lets the call go there."""
    url = job.options.callback_url or ""
    if not await reachable(url, reach):
        log.warning("jobs: the callback of job %s is not sent: its host is not allowed", job.id)
        return
    body = {"id": job.id, "state": job.state.value, "url": f"/api/jobs/{job.id}"}
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for attempt in range(_CALLBACK_TRIES):
            try:
                async with session.post(url, json=body) as reply:
                    if reply.status < 500:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(2**attempt)
    log.warning("jobs: the callback of job %s was not answered", job.id)


async def reachable(url: str, reach: str) -> bool:
    """Whether a callback may go to *url* under ``[jobs] callbacks`` (*reach*): never when
    off; with public, only when every address its host resolves to is a global one."""
    if reach == "off":
        return False
    host = urllib.parse.urlsplit(url).hostname
    if host is None:
        return False
    if reach == "any":
        return True
    try:
        async with asyncio.timeout(_RESOLVE_SECONDS):
            found = await asyncio.get_running_loop().getaddrinfo(host, None)
    except (OSError, UnicodeError, ValueError, TimeoutError):
        return False
    addresses = {ipaddress.ip_address(info[4][0]) for info in found}
    return bool(addresses) and all(a.is_global for a in addresses)
