"""Parameters decoded strictly: a query string, a form body, a JSON object.

Lenient decoders turn what is not text into something that looks like text: ``%ff`` becomes
U+FFFD, a JSON ``\\ud800`` a lone surrogate, and the service would then answer about an
address nobody sent. Here every name and value must be UTF-8 (RFC 3629) once percent-decoded
(RFC 3986 §2.1, form bodies per the WHATWG URL standard) or valid Unicode in JSON (RFC 8259
§8.1-8.2); anything else is a 400 ``invalid_parameter``. JSON duplicate names, which RFC 8259
§4 leaves to the implementation, are a 400 ``conflicting_parameters`` rather than the last one
silently winning. Error details never repeat a name or value sent (:func:`shown`).
"""

from __future__ import annotations

import json
import urllib.parse

from pipeline.core.text import decode_utf8, invalid_at
from pipeline.service.errors import ConflictingParameters, InvalidParameter

Pairs = list[tuple[str, str]]


def urlencoded_pairs(raw: str, where: str) -> Pairs:
    """``name=value&...`` pairs of a query string or form body, percent-decoded as UTF-8."""
    pairs: Pairs = []
    for part in raw.split("&"):
        if part:
            name, _, value = part.partition("=")
            pairs.append((_unquote(name, where), _unquote(value, where)))
    return pairs


def form_pairs(raw: bytes) -> Pairs:
    """A form body (``application/x-www-form-urlencoded``), whatever charset it claims: the
    format is UTF-8 (WHATWG URL standard, §5.1)."""
    text = decode_utf8(raw)
    if isinstance(text, int):
        raise InvalidParameter(f"The form body is not valid UTF-8 (byte {text}); send UTF-8.")
    return urlencoded_pairs(text, "form body")


def json_pairs(raw: bytes) -> Pairs:
    """The members of a JSON object body whose values are strings (or true/false)."""
    text = decode_utf8(raw)  # RFC 8259 §8.1: UTF-8, whatever a charset parameter says
    if isinstance(text, int):
        raise InvalidParameter(f"The JSON body is not valid UTF-8 (byte {text}); send UTF-8.")
    try:
        data = json.loads(text or "{}", object_pairs_hook=_members)
    except RecursionError as exc:
        raise InvalidParameter("The JSON body is nested too deeply; send a flat object.") from exc
    except json.JSONDecodeError as exc:  # its message gives a position, never the text
        raise InvalidParameter(f"The JSON body cannot be parsed: {exc}.") from exc
    except ValueError as exc:  # e.g. an integer past Python's 4,300-digit conversion limit
        raise InvalidParameter("The JSON body holds a number too long to read.") from exc
    if not isinstance(data, _Members):
        raise InvalidParameter('The JSON body must be an object, like {"email": "a@b.org"}.')
    # Names first: a value's error message may name its parameter.
    return [(_json_text(name, "A name"), _json_value(name, value)) for name, value in data]


class _Members(list[tuple[str, object]]):
    """A JSON object's members, in order (kept as pairs so that duplicates can be seen)."""


def _members(pairs: list[tuple[str, object]]) -> _Members:
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            raise ConflictingParameters(f"{shown(name)} appears more than once in the JSON body.")
        seen.add(name)
    return _Members(pairs)


# The one parameter a JSON body may send as true or false rather than as text.
JSON_BOOLEANS = frozenset({"find_Contact"})


def _json_value(name: str, value: object) -> str:
    if isinstance(value, bool) and name in JSON_BOOLEANS:  # find_Contact may come as true
        return "true" if value else "false"
    if isinstance(value, str):
        return _json_text(value, name)
    if isinstance(value, bool):
        got = "true or false"
    elif isinstance(value, _Members):
        got = "an object"
    elif isinstance(value, list):
        got = "an array"
    elif value is None:
        got = "null"
    else:
        got = "a number"
    raise InvalidParameter(f"{shown(name)} must be a string in the JSON body, got {got}.")


def _json_text(text: str, what: str) -> str:
    if invalid_at(text) is not None:
        raise InvalidParameter(
            f"{shown(what)} in the JSON body holds a lone surrogate (a \\ud800-\\udfff escape "
            "that is not half of a pair); send Unicode text."
        )
    return text


# The API's own parameter names: a detail may name these, and only these.
API_NAMES = frozenset({"email", "domain", "apikey", "search_term", "find_Contact"})


def shown(name: str) -> str:
    """A parameter as error details name it, at the start of a sentence: one of the API's
    own names, or "A parameter" (a detail never repeats a name or value that was sent)."""
    return name if name in API_NAMES else "A parameter"


def _unquote(text: str, where: str) -> str:
    if "%" not in text and "+" not in text and invalid_at(text) is None:
        return text
    try:
        return urllib.parse.unquote_to_bytes(text.replace("+", " ")).decode("utf-8")
    except UnicodeError as exc:  # a raw byte the parser let through, or a bad %-sequence
        raise InvalidParameter(
            f"A parameter in the {where} is not UTF-8 once percent-decoded; "
            "percent-encode the UTF-8 bytes of the text."
        ) from exc
