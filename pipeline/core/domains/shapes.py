"""What is already decided per domain: the service's answer to a plain address, with the
address left out.

An address whose syntax is plain (``ok``, nothing repaired), that no paid verifier or mail
server is asked about and that the bounce ledger says nothing of, gets an answer that depends
on its domain's DNS answer, whether its local part names a role and whether it repeats an
earlier row of its batch, and on nothing else: the rules (:mod:`pipeline.core.decide`) read
no other column of such a row. Apart from its EMAIL and LOCAL fields, every such address of
a domain gets the same answer text.

So the engine's first answer for such a key is kept as a *shape*: the text with EMAIL and
LOCAL cut out. Another address with the same key gets the shape with its own two fields put
back, which is the text the engine would have written for it, without a pass of the
engine's steps. The rules still run in one place: a shape is only ever the engine's own
answer. The key holds the domain's DNS answer, so a domain whose answer changes gets a new
shape; the ledger is asked about every address, every time.

A shape is kept only when the answer holds the address's local part nowhere but in its two
fields (a typo suggestion, ``local@corrected``, holds it, so suggested domains are never
shaped), and only for addresses whose two fields JSON writes as they are.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Final, NamedTuple

# Printable ASCII but the quote and the backslash: what JSON writes as it is. A plain address
# is always such text (RFC 5322 atext, dots, an LDH or A-label domain); this guards the rest.
_VERBATIM: Final = re.compile(r"[ !#-\[\]-~]*")

# Keys kept at most; past this, the oldest shape goes (a service sees a few per domain).
LIMIT: Final = 65_536


class _Shape(NamedTuple):
    head: str  # the text before EMAIL's value
    middle: str  # between EMAIL's value and LOCAL's
    tail: str  # after LOCAL's value


class AnswerShapes:
    """The answer shapes of one engine (one set of lists, calibration and checker)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._shapes: dict[Hashable, _Shape] = {}
        self._limit = limit
        self.hits = 0  # answers made from a shape
        self.misses = 0  # keys asked for that had none

    def answer(self, key: Hashable, email: str, local: str) -> str | None:
        """The answer text for *email* (local part *local*) under *key*, if a shape is kept."""
        shape = self._shapes.get(key)
        if shape is None or not _VERBATIM.fullmatch(email):
            self.misses += 1
            return None
        self.hits += 1
        return f"{shape.head}{email}{shape.middle}{local}{shape.tail}"

    def learn(self, key: Hashable, email: str, local: str, text: str) -> None:
        """Keep *text*, the engine's answer for *email* under *key*, as the key's shape, when
        the address shows in it only as its EMAIL and LOCAL fields."""
        if key in self._shapes or not local or not _VERBATIM.fullmatch(email):
            return
        email_field, local_field = f'"EMAIL":"{email}"', f'"LOCAL":"{local}"'
        if text.count(email_field) != 1 or text.count(local_field) != 1:
            return
        start = text.index(email_field) + len('"EMAIL":"')
        at = text.index(local_field) + len('"LOCAL":"')
        if at < start + len(email):
            return  # the fields in another order than the spec's: not shaped
        shape = _Shape(text[:start], text[start + len(email) : at], text[at + len(local) :])
        if any(local in part for part in shape):
            return  # the local part shows elsewhere: the answer is the address's own
        if len(self._shapes) >= self._limit:
            del self._shapes[next(iter(self._shapes))]
        self._shapes[key] = shape

    def __len__(self) -> int:
        return len(self._shapes)
