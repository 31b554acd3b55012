"""The service's typed keys: what handlers find on the application and on each request."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from aiohttp import web

from pipeline.core.contacts.store import ContactStore
from pipeline.service.accounts.quotas import Decision, Identity, Quotas
from pipeline.service.accounts.state import LiveState
from pipeline.service.batcher import MicroBatcher
from pipeline.service.connections.admission import Admission
from pipeline.service.requests.guard import AuthThrottle
from pipeline.service.requests.params import Limits, client_ip
from pipeline.service.settings import ServiceConfig


@dataclass
class Services:
    """What the handlers use; built on start-up, closed on shutdown."""

    config: ServiceConfig
    state: LiveState  # keys and counters
    quotas: Quotas
    # (an address or a domain, domain mode, whether a paid verifier may be asked) in, its
    # answer out as JSON text
    answers: MicroBatcher[tuple[str, bool, bool], str]
    trusted: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]
    contacts: ContactStore
    contacts_thread: ThreadPoolExecutor  # the store's one worker: its reads leave the loop
    limits: Limits
    throttle: AuthThrottle

    def client_ip(self, request: web.Request) -> str:
        return client_ip(request, self.trusted)


class Connections:
    """How many client connections the server has open (counted by ``protocol.py``)."""

    def __init__(self) -> None:
        self.open = 0


SERVICES = web.AppKey("services", Services)
CONNECTIONS = web.AppKey("connections", Connections)
ADMISSION = web.AppKey("admission", Admission)
# Per-request state: who is counted, and what the quota decided.
IDENTITY = web.RequestKey("listclean.identity", Identity)
DECISION = web.RequestKey("listclean.decision", Decision)
