"""Route handlers: thin, each reads the request, asks the engine, and answers JSON."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from aiohttp import web

from pipeline.core.contacts.store import ContactStore
from pipeline.core.contacts.types import Lookup, Outcome
from pipeline.core.errors import StoreError
from pipeline.service.accounts.quotas import Decision, Identity
from pipeline.service.errors import (
    ConflictingParameters,
    InvalidApiKey,
    InvalidParameter,
    MissingParameter,
    NotFound,
    QuotaExceeded,
    TooManyAuthFailures,
)
from pipeline.service.keys import DECISION, IDENTITY, SERVICES, Services
from pipeline.service.openapi import openapi_document
from pipeline.service.requests.params import accepted, presented_secret, read_params

T = TypeVar("T")
log = logging.getLogger("listclean.service")


def add_routes(app: web.Application) -> None:
    # No HEAD: it would spend quota on an answer nobody reads.
    app.router.add_get("/api/email", email, allow_head=False)
    app.router.add_post("/api/email", email)
    app.router.add_get("/api/find", find, allow_head=False)
    app.router.add_post("/api/find", find)
    app.router.add_get("/healthz", healthz, allow_head=True)
    app.router.add_get("/openapi.json", openapi)


async def admit(
    request: web.Request, endpoint: str, subject: Callable[[dict[str, str]], T]
) -> tuple[T, Identity]:
    """Read the parameters, identify the caller, read the request's subject and take a unit of
    the caller's quota, in that order: a request that fails validation or authentication is
    refused before it is counted. The identity and the quota decision stay on the request for
    the rate-limit headers."""
    services = request.app[SERVICES]
    params = await read_params(request, services.limits)
    identity = await authenticate(request, params, services)
    request[IDENTITY] = identity
    wanted = subject(params)
    decision = await services.quotas.take(identity, endpoint)
    request[DECISION] = decision
    if not decision.allowed:
        raise QuotaExceeded(_quota_detail(decision, identity.key is not None))
    return wanted, identity


async def identify(request: web.Request, params: Mapping[str, str], services: Services) -> Identity:
    """The caller: a key (header wins over ``apikey``), or the client IP when none is sent;
    an unknown or revoked key is the 401."""
    ip = services.client_ip(request)
    secret = presented_secret(request, params)
    if secret is None:
        return Identity(ip)
    key = await services.state.find_key(secret) if secret else None
    return Identity(ip, accepted(key))


async def authenticate(
    request: web.Request, params: Mapping[str, str], services: Services
) -> Identity:
    """The caller; a failed authentication is a 401, or a 429 once its client address has
    failed too often (see ``guard.py``). A valid key is never refused here."""
    ip = services.client_ip(request)
    try:
        return await identify(request, params, services)
    except InvalidApiKey as exc:
        request[IDENTITY] = Identity(ip)  # the rate-limit headers are the address's own
        wait = services.throttle.failed(ip)
        if wait is None:
            raise
        throttle = services.throttle
        raise TooManyAuthFailures(
            f"More than {throttle.limit} failed authentications from this client address "
            f"within {throttle.window:g} seconds; wait {wait} seconds (Retry-After) before "
            "sending a key again. A valid key is always served.",
            wait,
        ) from exc


async def standing(request: web.Request, endpoint: str) -> Decision:
    """Where the caller stands on *endpoint*'s counter, without counting anything: for an
    answer given before the quota was taken, or one that takes none (a bulk job's poll)."""
    services = request.app[SERVICES]
    if IDENTITY in request:
        identity = request[IDENTITY]
    else:  # refused before authentication: the headers are still the caller's own
        try:
            identity = await identify(request, request.query, services)
        except InvalidApiKey:
            identity = Identity(services.client_ip(request))
    return await services.quotas.peek(identity, endpoint)


async def email(request: web.Request) -> web.Response:
    """``/api/email``: verify an address (``email``) or a bare domain (``domain``)."""
    (value, domain_mode), identity = await admit(request, "email", _email_or_domain)
    services = request.app[SERVICES]
    answer = await services.answers.submit((value, domain_mode, _may_pay(services, identity)))
    return web.Response(text=answer, content_type="application/json")


def _may_pay(services: Services, identity: Identity) -> bool:
    """Whether a paid verifier may be asked for this caller: a key whose plan allows it."""
    if identity.key is None:
        return False
    plan = services.config.plans.get(identity.key.plan)
    return plan is not None and plan.vendor


def _quota_detail(decision: Decision, keyed: bool) -> str:
    burst = decision.burst
    if burst is not None and burst.remaining == 0:
        return f"More than {burst.policy.limit} requests per second for this key; slow down."
    quota = decision.quota
    reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(quota.end))
    return (
        f"The {quota.policy.name} quota of {quota.policy.limit} requests is used up for this "
        f"{'key' if keyed else 'client address'}; it renews at {reset}. See Retry-After."
    )


def _email_or_domain(params: dict[str, str]) -> tuple[str, bool]:
    email, domain = params.get("email"), params.get("domain")
    if email and domain:
        raise ConflictingParameters("Send either email or domain, not both.")
    if not email and not domain:
        raise MissingParameter("Send exactly one of email (an address) or domain (a domain name).")
    return (email, False) if email else (domain or "", True)


# One answer for "nobody", "too close to call" and "opted out": a suppressed person must be
# indistinguishable from one the store never had (same status, body and headers).
NO_CONTACT = "No contact matches this search."


async def find(request: web.Request) -> web.Response:
    """``/api/find``: the contact record for a search term, or the uniform 404."""
    term, identity = await admit(request, "find", _search_term)
    services = request.app[SERVICES]
    # A search without a match is still a search: it was counted above, which is what keeps
    # the endpoint from being used to enumerate who is in the store. The store's reads leave
    # the event loop: other requests are answered meanwhile.
    lookup = await asyncio.get_running_loop().run_in_executor(
        services.contacts_thread, _search_and_audit, services.contacts, term, identity
    )
    if lookup.outcome is Outcome.MATCH and lookup.contact is not None:
        return web.json_response(lookup.contact.as_spec())
    raise NotFound(NO_CONTACT)


def _search_and_audit(contacts: ContactStore, term: str, identity: Identity) -> Lookup:
    lookup = contacts.search(term)
    contacts.audit(
        key_id=identity.key.key_id if identity.key else "anonymous",
        client_ip=identity.ip,
        term=term,
        lookup=lookup,
    )
    return lookup


# What a blank search term holds: white space (str.isspace: all of it is below U+3001) and
# byte-order marks, which JSON Schema's \s counts as space.
_BLANK = "".join(c for c in map(chr, range(0x3001)) if c.isspace()) + "\ufeff"


def _search_term(params: dict[str, str]) -> str:
    flag = params.get("find_Contact")
    if flag is None:
        hint = any(n.lower() == "find_contact" for n in params)
        detail = (
            "find_Contact is case-sensitive: send find_Contact=true, spelt so."
            if hint
            else "Send find_Contact=true to start a contact search."
        )
        raise MissingParameter(detail)
    if flag != "true":
        raise InvalidParameter("find_Contact must be the text true.")
    term = params.get("search_term", "").strip(_BLANK)
    if not term:
        raise MissingParameter("Send search_term: a name, an email address or a phone number.")
    return term


# Seconds /healthz waits for the shared state to answer before it calls the instance down.
HEALTH_TIMEOUT = 2.0


async def healthz(request: web.Request) -> web.Response:
    """For load balancers: 200 while this instance can serve, 503 while the store it counts
    quotas in (and reads keys and contacts from) does not answer: an instance that would
    answer every request 500 must be taken out of rotation. Not counted against any quota."""
    services = request.app[SERVICES]
    try:
        await asyncio.wait_for(services.state.ping(), HEALTH_TIMEOUT)
    except (StoreError, TimeoutError) as exc:
        reason = exc if isinstance(exc, StoreError) else "no answer in time"
        log.warning("unhealthy: the service database does not answer: %s", reason)
        return web.json_response(
            {"status": "unavailable", "detail": "The service database does not answer."},
            status=503,
        )
    return web.json_response({"status": "ok"})


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(openapi_document(request.app[SERVICES].config))
