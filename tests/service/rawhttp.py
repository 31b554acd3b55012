"""HTTP/1.1 over a raw socket: for the requests aiohttp's client refuses to send.

A client library checks what it sends (no raw bytes over 0x7f in a header, no over-long line,
no bad chunk). A hostile client does not; these helpers write the bytes as given and read the
answer back as bytes, so a test can check exactly what the server said.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from multidict import CIMultiDict


@dataclass(frozen=True)
class RawReply:
    status: int
    headers: CIMultiDict[str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "").split(";")[0].strip()


def request_bytes(
    method: str,
    target: bytes | str,
    headers: list[tuple[bytes | str, bytes | str]] | None = None,
    body: bytes = b"",
    *,
    content_length: bool = True,
) -> bytes:
    """One request as bytes; *target* and header values are written exactly as given."""
    lines = [_b(method) + b" " + _b(target) + b" HTTP/1.1", b"Host: 127.0.0.1"]
    for name, value in headers or []:
        lines.append(_b(name) + b": " + _b(value))
    if content_length and body:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


async def send_raw(base_url: str, raw: bytes, timeout: float = 10.0) -> RawReply:
    """Write *raw* to the server behind *base_url* and read one answer."""
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(raw)
        await writer.drain()
        return await asyncio.wait_for(read_reply(reader), timeout)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):  # the server may close first
            await writer.wait_closed()


async def read_reply(reader: asyncio.StreamReader) -> RawReply:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ")[1])
    headers: CIMultiDict[str] = CIMultiDict()
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers.add(name.strip(), value.strip())
    if "Content-Length" in headers:
        body = await reader.readexactly(int(headers["Content-Length"]))
    else:
        body = await reader.read()
    return RawReply(status, headers, body)


def _b(text: bytes | str) -> bytes:
    return text if isinstance(text, bytes) else text.encode("latin-1")


# A request's start, with no end of its headers: what a slow client sends.
HEAD = b"GET /api/email?email=a@gmail.com HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # no blank line yet

Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def connect(url: str, source: str = "127.0.0.1") -> Conn:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return await asyncio.open_connection(host, int(port), local_addr=(source, 0))


@contextlib.asynccontextmanager
async def slow(url: str, count: int, source: str = "127.0.0.1") -> AsyncIterator[list[Conn]]:
    """*count* connections that send the start of a request and then nothing more."""
    conns = [await connect(url, source) for _ in range(count)]
    try:
        for _, writer in conns:
            writer.write(HEAD)
            await writer.drain()
        yield conns
    finally:
        for _, writer in conns:
            writer.close()


async def answer(conn: Conn, timeout: float = 10.0) -> RawReply:
    return await asyncio.wait_for(read_reply(conn[0]), timeout)


async def closed(conn: Conn, timeout: float = 10.0) -> bool:
    """Whether the server closes *conn* (its end of input) within *timeout* seconds."""
    try:
        rest = await asyncio.wait_for(conn[0].read(), timeout)
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return rest == b""
