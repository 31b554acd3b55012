"""Reading a request: its parameters (query, JSON or form body), its API key, its client IP."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from pipeline.service.accounts.store import ApiKey
from pipeline.service.connections.admission import BodyTimeout
from pipeline.service.errors import (
    ConflictingParameters,
    InvalidApiKey,
    InvalidParameter,
    RequestTimeout,
)
from pipeline.service.requests.decoding import (
    API_NAMES,
    Pairs,
    form_pairs,
    json_pairs,
    shown,
    urlencoded_pairs,
)

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


@dataclass(frozen=True)
class Limits:
    """How much one request may carry (``[service]`` settings)."""

    max_value_length: int
    max_parameters: int


async def read_params(request: web.Request, limits: Limits) -> dict[str, str]:
    """Query parameters, plus on POST the body's (JSON object or form), strictly decoded.

    One of the API's parameters given twice in one place is a 400, even with the same value
    twice (HTTP parameter pollution: two readers of one request must never disagree on what
    it asked), and so is one given in both places with two values. Unknown parameters are
    ignored, but for two rules: a name is given once in one place, and the names of one
    place count toward the limit on parameters (the query string's, and the body's)."""
    query = urlencoded_pairs(request.rel_url.raw_query_string, "query string")
    params = _single_values(query, limits)
    if request.method == "POST" and request.can_read_body:
        for name, value in _single_values(await _body_pairs(request), limits).items():
            if name in API_NAMES and name in params and params[name] != value:
                raise ConflictingParameters(
                    f"{shown(name)} is given twice, differently, in the query string and the "
                    "body. Send it once."
                )
            params[name] = value
    return params


def _single_values(pairs: Pairs, limits: Limits) -> dict[str, str]:
    """*pairs* as a mapping: every name given once, none of the API's too long."""
    names = {name for name, _ in pairs}
    if len(names) > limits.max_parameters:
        raise InvalidParameter(
            f"The request has {len(names)} parameters in one place; "
            f"the limit is {limits.max_parameters}."
        )
    params: dict[str, str] = {}
    for name, value in pairs:
        if name in params:
            count = sum(1 for n, _ in pairs if n == name)
            raise ConflictingParameters(f"{shown(name)} appears {count} times; send it once.")
        if name in API_NAMES and len(value) > limits.max_value_length:
            raise InvalidParameter(
                f"{shown(name)} is {len(value)} characters long; "
                f"the limit is {limits.max_value_length}."
            )
        params[name] = value
    return params


async def _body_pairs(request: web.Request) -> Pairs:
    try:
        raw = await request.read()
    except BodyTimeout as exc:
        raise RequestTimeout(str(exc)) from exc
    except (web.RequestPayloadError, HttpProcessingError) as exc:
        # A body cut short or badly chunked: nothing of it is usable (the cause is not shown,
        # it may quote the body).
        raise InvalidParameter("The request body cannot be read as sent.") from exc
    if request.content_type == JSON:
        return json_pairs(raw)
    if request.content_type == FORM:
        return form_pairs(raw)
    if not raw:
        return []
    raise InvalidParameter(
        f"A POST body of this Content-Type cannot be read; send {JSON} or {FORM}, "
        "or put the parameters in the query string."
    )


def presented_secret(request: web.Request, params: Mapping[str, str]) -> str | None:
    """The key the request sends (the Authorization header wins over ``apikey``), None when it
    sends none, "" when what it sends cannot be a key. Only a well-formed token is worth looking
    up: raw bytes in a header or kilobytes of text are refused before they cost a hash."""
    secret = bearer_token(request)
    if secret is None:
        secret = params.get("apikey")
    if secret is None:
        return None
    return secret if _TOKEN.fullmatch(secret) else ""


def accepted(key: ApiKey | None) -> ApiKey:
    """*key*, if it is one that may be used; else the 401."""
    if key is None:
        raise InvalidApiKey("The API key is not known. Check it, or send no key at all.")
    if not key.active:
        raise InvalidApiKey(f"The API key {key.key_id} has been revoked.")
    return key


# RFC 6750 §2.1's b64token, at most 128 characters: our keys are "lc_" + 43 of them.
_TOKEN = re.compile(r"[A-Za-z0-9._~+/-]{1,128}={0,2}")


def bearer_token(request: web.Request) -> str | None:
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not _TOKEN.fullmatch(token):
        raise InvalidApiKey("The Authorization header must be 'Bearer <API key>'.")
    return token


def client_ip(
    request: web.Request, trusted: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]
) -> str:
    """The socket's peer, or the first untrusted hop of X-Forwarded-For behind trusted proxies."""
    peer = request.remote or ""
    if not trusted or not _is_trusted(peer, trusted):
        return peer
    hops = [h.strip() for h in request.headers.get("X-Forwarded-For", "").split(",") if h.strip()]
    # Walk from the nearest hop outwards: each trusted proxy vouches for the one before it.
    for hop in reversed(hops):
        if not _is_trusted(hop, trusted):
            return hop if _is_ip(hop) else peer
    return hops[0] if hops else peer


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _is_trusted(
    text: str, trusted: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]
) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return any(address in network for network in trusted)
