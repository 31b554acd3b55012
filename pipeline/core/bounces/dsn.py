"""Delivery status notifications (RFC 3464 DSNs), one per ``.eml`` or many in an ``.mbox``.

A recipient block's ``Action: failed`` is hard, unless its ``Status`` is of class 4 (a sender
that gave up retrying a temporary failure, typically 4.4.7), which is soft; ``delayed`` is
soft; ``delivered`` is delivered; ``relayed`` and ``expanded`` say nothing about the mailbox
and are skipped. An event's time is the DSN's ``Last-Attempt-Date``, else its ``Arrival-Date``,
else the message's ``Date``.
"""

from __future__ import annotations

import contextlib
import email
import email.errors
import mailbox
import re
from collections.abc import Iterable
from email.message import Message
from pathlib import Path
from typing import Final

from pipeline.core.addresses.syntax import Syntax, parse_address
from pipeline.core.bounces.types import BounceEvent, BounceKind, Rejected
from pipeline.core.bounces.values import cell_text, first_date
from pipeline.core.errors import InputError
from pipeline.core.status_codes import leading_status

# RFC 4155 §2: an mbox starts with "From ", the envelope sender and an asctime() date.
MBOX_FROM_LINE: Final = re.compile(rb"From \S+ +[A-Z][a-z]{2} [A-Z][a-z]{2} ")


# An RFC 5322 §2.2 header field at the very start: field name, colon.
_HEADER_LINE: Final = re.compile(rb"[!-9;-~]+:")


# RFC 3464 §2.1 and RFC 6533 §6.2: the machine-readable part of a DSN.
_STATUS_PARTS: Final = ("message/delivery-status", "message/global-delivery-status")


# RFC 3464 §2.3.2: address-type "rfc822"; RFC 6533 §3 adds "utf-8".
_ADDRESS_TYPES: Final = ("rfc822", "utf-8")


_SKIPPED_ACTIONS: Final = ("relayed", "expanded")


def looks_like_message(head: bytes) -> bool:
    """A message starts with a header field and names a Content-Type; a CSV header does not."""
    return _HEADER_LINE.match(head) is not None and b"content-type:" in head.lower()


def read_mbox(path: Path) -> list[tuple[str, bytes]]:
    try:
        box = mailbox.mbox(path, create=False)
        with contextlib.closing(box):
            return [
                (f"{path.name} message {n}", box.get_bytes(key))
                for n, key in enumerate(box.iterkeys(), start=1)
            ]
    except (OSError, mailbox.Error) as exc:
        raise InputError(f"Cannot read {path} as an mbox file: {exc}.") from exc


def messages_events(
    messages: Iterable[tuple[str, bytes]], source: str, mtime: float
) -> tuple[list[BounceEvent], Rejected]:
    events: list[BounceEvent] = []
    rejected: Rejected = []
    for where, raw in messages:
        try:
            found, problems = _dsn_events(email.message_from_bytes(raw), where, source, mtime)
        except (email.errors.MessageError, ValueError, LookupError) as exc:
            rejected.append((where, f"unreadable message: {exc}"))
            continue
        events += found
        rejected += problems
    return events, rejected


def _dsn_events(
    message: Message, where: str, source: str, mtime: float
) -> tuple[list[BounceEvent], Rejected]:
    """One event per recipient block of an RFC 3464 report (§2.2 per-message, §2.3 recipient)."""
    part = next((p for p in message.walk() if p.get_content_type() in _STATUS_PARTS), None)
    if part is None:
        what = f"{message.get_content_type()}, subject {cell_text(message.get('Subject'))!r}"
        return [], [(where, f"not a delivery status notification (RFC 3464): {what}")]
    blocks = _field_blocks(part)
    per_message = blocks[0] if blocks and not _is_recipient_block(blocks[0]) else None
    recipients = [b for b in blocks if b is not per_message]
    if not recipients:
        return [], [(where, "the delivery status has no per-recipient fields")]
    arrival = per_message.get("Arrival-Date") if per_message is not None else None
    fallback = first_date((arrival, message.get("Date")), mtime)
    events: list[BounceEvent] = []
    rejected: Rejected = []
    for n, block in enumerate(recipients, start=1):
        result = _recipient_event(block, source, fallback)
        if isinstance(result, BounceEvent):
            events.append(result)
        elif result:
            rejected.append((f"{where}, recipient {n}", result))
    return events, rejected


def _field_blocks(part: Message) -> list[Message]:
    """The non-empty field blocks of a delivery-status part (RFC 3464 §2.1)."""
    # The email package parses message/delivery-status into one Message per block. It does
    # not decode the part first: a (rare) base64-encoded report yields no fields at all.
    payload = part.get_payload()
    if not isinstance(payload, list):
        return []
    return [block for block in payload if isinstance(block, Message) and len(block)]


def _is_recipient_block(block: Message) -> bool:
    return any(name in block for name in ("Final-Recipient", "Original-Recipient", "Action"))


def _recipient_event(block: Message, source: str, fallback: float) -> BounceEvent | str:
    """The event of one recipient block, why it is unusable, or "" for relayed/expanded."""
    action_text = cell_text(block.get("Action"))
    # RFC 3464 §2.3.3: the action value may be followed by a comment.
    action = action_text.split(" ", 1)[0].casefold()
    status = leading_status(cell_text(block.get("Status")))
    if action in _SKIPPED_ACTIONS:
        return ""  # handed on, not delivered or refused: says nothing about the mailbox
    if action == "failed":
        # A failure reported with a class 4 status is a sender giving up on a temporary
        # condition (typically 4.4.7, delivery time expired): the mailbox may be fine.
        kind = BounceKind.SOFT if status.startswith("4") else BounceKind.HARD
    elif action == "delayed":
        kind = BounceKind.SOFT
    elif action == "delivered":
        kind = BounceKind.DELIVERED
    else:
        return f"unknown Action {action_text!r}: failed, delayed or delivered expected"
    address, problem = _recipient_address(block)
    if problem:
        return problem
    parsed = parse_address(address)
    if parsed.syntax in (Syntax.INVALID, Syntax.EMPTY):
        return f"recipient {address!r} is no address: {parsed.detail}"
    at = first_date((block.get("Last-Attempt-Date"),), fallback)
    reason = _diagnostic(cell_text(block.get("Diagnostic-Code")))
    return BounceEvent(address, parsed.key, parsed.domain, kind, status, at, reason, source)


def _recipient_address(block: Message) -> tuple[str, str]:
    """(address, "") from Final-Recipient, else Original-Recipient; ("", why) when unusable."""
    text = cell_text(block.get("Final-Recipient") or block.get("Original-Recipient"))
    if not text:
        return "", "no Final-Recipient field"
    # RFC 3464 §2.3.2: address-type ";" generic-address. Some senders leave out the type.
    address_type, separator, address = text.partition(";")
    if not separator:
        address = address_type
    elif address_type.strip().casefold() not in _ADDRESS_TYPES:
        return "", f"recipient address type {address_type.strip()!r} is not rfc822"
    return address.strip().strip("<>").strip(), ""


def _diagnostic(text: str) -> str:
    # RFC 3464 §2.3.6: diagnostic-type ";" text; the type ("smtp", "X-Postfix") is dropped.
    return re.sub(r"^[A-Za-z][\w-]*\s*;\s*", "", text)
