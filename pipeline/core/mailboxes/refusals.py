"""One domain's answers, held back while they could still turn out to be a refusal of *us*.

A reply can read "no such user" and still say nothing about the mailbox: a server that refuses
our sender, our address or our EHLO name in words of its own gives every recipient the same
answer. One domain's refusals are therefore judged together before they become final:

- while no address of the domain has been accepted, "no such user" and "disabled" answers are
  held back; the first accepted address shows the server tells mailboxes apart, and releases
  them as they are;
- when the domain is done and nothing was accepted, a refusal (the same words once the
  recipient is taken out) given to at least :data:`SAME_REFUSAL_MIN` listed addresses, or to
  one address known to exist (the bounce ledger has a delivery to it since its last hard
  bounce), is the server's refusal of us: those addresses become Risky ``smtp_refuses_all``.
  The random catch-all probe does not count: a normal server refuses it too.

Accepted answers are held back too while the catch-all probe has not been answered (it was
deferred): a 250 proves nothing until we know the domain does not accept everything.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Collection

from pipeline.core.mailboxes.types import Mailbox, MailboxResult, Target

# Three listed addresses refused in the same words, none accepted: a list seldom holds three
# dead mailboxes of one domain and no live one, unless the server refuses everyone.
SAME_REFUSAL_MIN = 3

_REFUSALS = frozenset({Mailbox.NO_SUCH_USER, Mailbox.DISABLED})
# Queue ids, addresses, timestamps, trace tokens: anything with a digit varies per reply.
_VARYING = re.compile(r"\S*\d\S*")

Finish = Callable[[Target, MailboxResult], None]
Answer = tuple[Target, MailboxResult]


def refusal_words(reply: str, recipient: str) -> str:
    """The words of *reply* that do not depend on the recipient or on the moment."""
    text = reply.lower()
    local = recipient.rpartition("@")[0].lower()
    for varying in (recipient.lower(), local):
        if varying:
            text = text.replace(varying, "<rcpt>")
    return " ".join(_VARYING.sub("#", text).split())


class DomainAnswers:
    """Collects one domain's final answers and hands them on once they are sure."""

    def __init__(self, finish: Finish, known_to_exist: Collection[str] = ()) -> None:
        self._finish = finish
        self._known = frozenset(known_to_exist)
        self.accepted = False
        self.catch_all_known = True  # False while the catch-all probe is still deferred
        self._held: list[Answer] = []

    @property
    def awaiting_catch_all(self) -> bool:
        """Accepted answers are waiting for the catch-all probe to be answered."""
        return not self.catch_all_known and any(r.outcome is Mailbox.OK for _, r in self._held)

    def add(self, target: Target, result: MailboxResult) -> None:
        if result.outcome is Mailbox.OK:
            self.accepted = True
            if not self.catch_all_known:
                self._held.append((target, result))
                return
            self._release()
        if not self.accepted and result.outcome in _REFUSALS:
            self._held.append((target, result))
            return
        self._finish(target, result)

    def catch_all_learned(self, catch_all: bool) -> None:
        """The probe was answered at last: held 250s prove nothing on a catch-all domain."""
        self.catch_all_known = True
        if catch_all:
            self._held = [(t, _catch_all(t, r)) for t, r in self._held]
        if self.accepted:
            self._release()

    def close(self) -> None:
        """The domain is done: judge what is held, and hand it all on."""
        if not self.catch_all_known:
            unsure = MailboxResult(Mailbox.GREYLISTED, "the catch-all probe stayed deferred")
            self._held = [(t, unsure if r.outcome is Mailbox.OK else r) for t, r in self._held]
        if not self.accepted:
            self._held = self._judged(self._held)
        self._release()

    def _release(self) -> None:
        held, self._held = self._held, []
        for target, result in held:
            self._finish(target, result)

    def _judged(
        self, held: list[tuple[Target, MailboxResult]]
    ) -> list[tuple[Target, MailboxResult]]:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, (target, result) in enumerate(held):
            if result.outcome in _REFUSALS:
                groups[refusal_words(result.reply, target.address)].append(i)
        ours = {
            i
            for members in groups.values()
            if len(members) >= SAME_REFUSAL_MIN
            or any(held[i][0].key in self._known for i in members)
            for i in members
        }
        return [(t, _ours(r) if i in ours else r) for i, (t, r) in enumerate(held)]


def _ours(result: MailboxResult) -> MailboxResult:
    return MailboxResult(Mailbox.REFUSES_ALL, result.reply, result.at)


def _catch_all(target: Target, result: MailboxResult) -> MailboxResult:
    if result.outcome is not Mailbox.OK:
        return result
    return MailboxResult(Mailbox.CATCH_ALL, f"{target.domain} accepts any address", result.at)
