"""HTTP/1.1 server connections on asyncio + httptools, with full control over the socket.

An ASGI server cannot close a connection without answering (uvicorn turns that into a
500) and took twice the CPU for a small JSON reply (docs/fakeupstream.md), so the fake
speaks HTTP itself: httptools parses, one `Connection` per socket runs the handler for each
request in order (keep-alive and pipelining), and handlers write the response through
the methods below, including the abrupt closes that fault injection needs.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import cast

import httptools

logger = logging.getLogger("fakeupstream")

# Request bodies above this are refused with 413; the fake never needs more, and a
# runaway client must not grow the process without bound.
MAX_BODY_BYTES = 16 * 1024 * 1024

Headers = Iterable[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    body: bytes


Handler = Callable[[Request, "Connection"], Awaitable[None]]


def _status_line(status: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    return f"HTTP/1.1 {status} {phrase}\r\n".encode()


_STATUS_LINES = {status.value: _status_line(status.value) for status in HTTPStatus}


class Connection(asyncio.Protocol):
    """One client socket: parses requests, runs the handler, writes what it answers."""

    def __init__(self, handler: Handler, connections: set[Connection]) -> None:
        self._handler = handler
        self._connections = connections
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        self._pending: deque[tuple[Request, bool]] = deque()
        self._task: asyncio.Task[None] | None = None
        self._drain_waiter: asyncio.Future[None] | None = None
        self._reset_message()
        self._keep_alive = True
        self._response_started = False
        self._response_done = False
        self._held_head = b""
        self.is_closed = False

    def _reset_message(self) -> None:
        self._url = b""
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._body_bytes = 0

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, but implement it.
        self._transport = cast(asyncio.Transport, transport)
        self._connections.add(self)

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._refuse(400, b"malformed HTTP request")

    def connection_lost(self, exc: Exception | None) -> None:
        self.is_closed = True
        self._connections.discard(self)
        if self._task is not None:
            self._task.cancel()  # a hanging or streaming handler stops with its client
        self._wake_drain()

    def pause_writing(self) -> None:
        self._drain_waiter = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        self._wake_drain()

    # httptools callbacks

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        previous = self._headers.get(key)
        self._headers[key] = text if previous is None else f"{previous}, {text}"

    def on_headers_complete(self) -> None:
        if self._headers.get("expect", "").lower() == "100-continue" and self._transport:
            self._transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # curl waits for it

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._body_bytes <= MAX_BODY_BYTES:
            self._body.append(body)

    def on_message_complete(self) -> None:
        if self._body_bytes > MAX_BODY_BYTES:
            self._refuse(413, b"request body too large")
            return
        path = httptools.parse_url(self._url).path.decode("latin-1")
        method = self._parser.get_method().decode("latin-1")
        request = Request(method, path, self._headers, b"".join(self._body))
        self._pending.append((request, self._parser.should_keep_alive()))
        self._reset_message()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._serve())

    # running handlers

    async def _serve(self) -> None:
        """Answer queued requests one after the other, as HTTP/1.1 requires."""
        while self._pending and not self.is_closed:
            request, self._keep_alive = self._pending.popleft()
            self._response_started = self._response_done = False
            await self._run_handler(request)
            if not (self._keep_alive and self._response_done):
                self.close()
                break
        self._task = None

    async def _run_handler(self, request: Request) -> None:
        try:
            await self._handler(request, self)
        except Exception:
            logger.exception("fake upstream handler failed on %s %s", request.method, request.path)
            if not self._response_started:
                self.respond(500, "text/plain", b"fake upstream handler failed")

    # responding (used by handlers)

    def send_head(
        self, status: int, content_type: str, content_length: int | None, headers: Headers = ()
    ) -> None:
        """Start the response; no content_length means a chunked body.

        The head is held back and leaves with the first body bytes (or `flush`), so a
        reply costs one socket write; call `flush` before waiting with the head unsent.
        """
        self._response_started = True
        lines = [_STATUS_LINES.get(status) or _status_line(status)]
        lines.append(f"content-type: {content_type}\r\n".encode())
        if content_length is None:
            lines.append(b"transfer-encoding: chunked\r\n")
        else:
            lines.append(b"content-length: %d\r\n" % content_length)
        lines.extend(f"{name}: {value}\r\n".encode("latin-1") for name, value in headers)
        if not self._keep_alive:
            lines.append(b"connection: close\r\n")
        lines.append(b"\r\n")
        self._held_head = b"".join(lines)

    def respond(self, status: int, content_type: str, body: bytes, headers: Headers = ()) -> None:
        """A complete response with a Content-Length, written at once."""
        self.send_head(status, content_type, len(body), headers)
        self.write(body)
        self._response_done = True

    def write(self, data: bytes) -> None:
        """Raw bytes on the socket (after send_head with a content length)."""
        if self._held_head:
            data, self._held_head = self._held_head + data, b""
        if data and not self.is_closed and self._transport is not None:
            self._transport.write(data)

    def flush(self) -> None:
        """Send a held-back response head now."""
        self.write(b"")

    def write_chunk(self, data: bytes) -> None:
        """One chunk of a chunked body (after send_head without a content length)."""
        self.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_chunks(self, last_data: bytes = b"") -> None:
        """End a chunked body, after a last chunk of `last_data` when given."""
        last = b"%x\r\n%s\r\n" % (len(last_data), last_data) if last_data else b""
        self.write(last + b"0\r\n\r\n")
        self._response_done = True

    async def drain(self) -> None:
        """Wait while the client reads slower than we write."""
        self.flush()
        if self._drain_waiter is not None and not self.is_closed:
            await self._drain_waiter

    def close(self) -> None:
        """Close the socket after what was written; an unfinished response stays unfinished."""
        self.flush()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def _refuse(self, status: int, message: bytes) -> None:
        self._keep_alive = False
        self.respond(status, "text/plain", message)
        self.close()

    def _wake_drain(self) -> None:
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
