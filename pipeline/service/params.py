"""Reading a request: its parameters (query, JSON or form body), its API key, its client IP."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web
from multidict import MultiMapping

from pipeline.service.errors import ConflictingParameters, InvalidApiKey, InvalidParameter
from pipeline.service.quotas import Identity
from pipeline.service.store import ServiceStore

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


async def read_params(request: web.Request, max_length: int) -> dict[str, str]:
    """Query parameters, plus on POST the body's (JSON object or form). Values are decoded."""
    params = _single_values(request.query, "query string")
    if request.method == "POST" and request.can_read_body:
        body = await _body_params(request)
        for name, value in body.items():
            if name in params and params[name] != value:
                raise ConflictingParameters(
                    f"{name} is given twice, differently, in the query string and the body. "
                    "Send it once."
                )
            params[name] = value
    for name, value in params.items():
        if len(value) > max_length:
            raise InvalidParameter(
                f"{name} is {len(value)} characters long; the limit is {max_length}."
            )
    return params


def _single_values(values: MultiMapping[Any], where: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for name in values:
        given = values.getall(name)
        if not all(isinstance(v, str) for v in given):
            raise InvalidParameter(f"{name} must be text, not a file upload.")
        if len(set(given)) > 1:
            raise ConflictingParameters(f"{name} appears {len(given)} times in the {where}.")
        params[name] = given[0]
    return params


async def _body_params(request: web.Request) -> dict[str, str]:
    if request.content_type == JSON:
        try:
            data = json.loads(await request.text() or "{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidParameter(f"The JSON body cannot be parsed: {exc}.") from exc
        if not isinstance(data, dict):
            raise InvalidParameter('The JSON body must be an object, like {"email": "a@b.org"}.')
        return {str(k): _json_value(str(k), v) for k, v in data.items()}
    if request.content_type == FORM:
        return _single_values(await request.post(), "form body")
    if not await request.read():
        return {}
    raise InvalidParameter(
        f"A POST body of type {request.content_type!r} cannot be read; "
        f"send {JSON} or {FORM}, or put the parameters in the query string."
    )


def _json_value(name: str, value: object) -> str:
    if isinstance(value, bool):  # find_Contact may come as JSON true
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    raise InvalidParameter(f"{name} must be a string in the JSON body, got {json.dumps(value)}.")


def identify(
    request: web.Request, params: Mapping[str, str], store: ServiceStore, client_ip: str
) -> Identity:
    """The caller: a key (header wins over ``apikey``), or the client IP when none is sent."""
    secret = bearer_token(request)
    if secret is None:
        secret = params.get("apikey")
    if secret is None:
        return Identity(client_ip)
    key = store.find_key(secret) if secret else None
    if key is None:
        raise InvalidApiKey("The API key is not known. Check it, or send no key at all.")
    if not key.active:
        raise InvalidApiKey(f"The API key {key.key_id} has been revoked.")
    return Identity(client_ip, key)


def bearer_token(request: web.Request) -> str | None:
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise InvalidApiKey("The Authorization header must be 'Bearer <API key>'.")
    return token.strip()


def client_ip(
    request: web.Request, trusted: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]
) -> str:
    """The socket's peer, or the first untrusted hop of X-Forwarded-For behind trusted proxies."""
    peer = request.remote or ""
    if not _is_trusted(peer, trusted):
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
