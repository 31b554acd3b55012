"""aiosmtpd's command hooks for one sandbox SMTP session, and the counters every session feeds.

The replies themselves are decided in :mod:`pipeline.sandbox.smtp_script`; the protocol details
(greeting, delays, closing on 421, DATA) live in :mod:`pipeline.sandbox.smtp_server`.
"""

from __future__ import annotations

import threading
from collections import Counter

from aiosmtpd.smtp import SMTP, Envelope, Session

from pipeline.sandbox.mail_hosts import ScriptedReply
from pipeline.sandbox.smtp_script import HostState, mail_reply, rcpt_reply
from pipeline.sandbox.smtp_script import Session as Values

OK = "250 2.0.0 OK"
BYE = "221 2.0.0 Bye"


class Stats:
    """What the servers saw; written by the event loop, read by any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rcpts: list[tuple[str, str, int]] = []
        self._sessions: Counter[str] = Counter()
        self._open: Counter[str] = Counter()
        self._most_open: Counter[str] = Counter()
        self._data_attempts = 0

    def session_opened(self, host: str) -> None:
        with self._lock:
            self._sessions[host] += 1
            self._open[host] += 1
            self._most_open[host] = max(self._most_open[host], self._open[host])

    def session_closed(self, host: str) -> None:
        with self._lock:
            self._open[host] -= 1

    def rcpt(self, host: str, recipient: str, code: int) -> None:
        with self._lock:
            self._rcpts.append((host, recipient, code))

    def data_attempt(self) -> None:
        with self._lock:
            self._data_attempts += 1

    def rcpts(self) -> list[tuple[str, str, int]]:
        with self._lock:
            return list(self._rcpts)

    def sessions(self, host: str) -> int:
        with self._lock:
            return self._sessions[host]

    def most_open(self, host: str) -> int:
        with self._lock:
            return self._most_open[host]

    def data_attempts(self) -> int:
        with self._lock:
            return self._data_attempts

    def reset(self) -> None:
        with self._lock:
            self._rcpts.clear()
            self._sessions.clear()
            self._data_attempts = 0
            # Sessions still open count towards the next maximum.
            self._most_open = Counter(self._open)


class SessionHandler:
    """aiosmtpd's command hooks for one session; the protocol creates one per connection."""

    def __init__(self, host: HostState, stats: Stats) -> None:
        self._host = host
        self._stats = stats
        self._rcpts = 0

    async def handle_EHLO(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        hostname: str,
        responses: list[str],
    ) -> list[str]:
        refusal = self._host.config.ehlo
        if refusal is not None:
            # Refused: no name is recorded, so MAIL FROM gets aiosmtpd's 503 until HELO works.
            return self._render(refusal, session, envelope, hostname).split("\r\n")
        # With this hook present aiosmtpd leaves recording the client's name to us.
        session.host_name = hostname
        # RFC 2034 §3: announces enhanced status codes. Every reply of ours carries one;
        # aiosmtpd's own syntax and sequence errors (501, 503) do not.
        return [*responses[:-1], "250-ENHANCEDSTATUSCODES", responses[-1]]

    async def handle_HELO(
        self, server: SMTP, session: Session, envelope: Envelope, hostname: str
    ) -> str:
        refusal = self._host.config.helo
        if refusal is not None:
            return self._render(refusal, session, envelope, hostname)
        session.host_name = hostname
        return f"250 {self._host.config.name}"

    async def handle_MAIL(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        mail_options: list[str],
    ) -> str:
        reply = mail_reply(self._host, self._values(session, address))
        if reply.startswith("250"):
            envelope.mail_from = address
            envelope.mail_options.extend(mail_options)
        return reply

    async def handle_RCPT(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        self._rcpts += 1
        values = self._values(session, envelope.mail_from or "")
        reply = rcpt_reply(self._host, values, address, self._rcpts)
        if reply.startswith("250"):
            envelope.rcpt_tos.append(address)
            envelope.rcpt_options.extend(rcpt_options)
        self._stats.rcpt(self._host.address, address, int(reply[:3]))
        return reply

    def _values(self, session: Session, sender: str, helo: str | None = None) -> Values:
        peer = session.peer
        client = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        name = helo if helo is not None else session.host_name or ""
        # aiosmtpd hands the null reverse-path (RFC 5321 §4.5.5) over as "<>".
        return Values(self._host.config.name, client, name, "" if sender == "<>" else sender)

    def _render(
        self, scripted: ScriptedReply, session: Session, envelope: Envelope, helo: str
    ) -> str:
        return scripted.render(self._values(session, envelope.mail_from or "", helo).values())

    async def handle_RSET(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        return OK

    async def handle_NOOP(
        self, server: SMTP, session: Session, envelope: Envelope, arg: str | None
    ) -> str:
        return OK

    async def handle_QUIT(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        return BYE
