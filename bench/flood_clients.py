"""The flood's clients (bench/flood.py): N HTTP/1.1 streaming requests on raw non-blocking
sockets under one selector, and the request bytes each one sends."""

from __future__ import annotations

import errno
import selectors
import socket
import time
from collections import Counter
from typing import Any

import orjson


class Clients:
    """N HTTP/1.1 clients on raw non-blocking sockets and one epoll selector: a connect
    and a send per stream, then nothing but noticing what the gateway sends, so the
    benchmark process costs next to nothing and a hang-up is one `close()` per socket."""

    def __init__(self, port: int, request: bytes) -> None:
        self._port = port
        self._request = request
        self._selector = selectors.DefaultSelector()
        self._sockets: list[socket.socket] = []
        self._connecting: set[int] = set()
        self._answered: set[int] = set()
        self.connected = 0
        self.failed: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()

    @property
    def pending(self) -> int:
        return len(self._connecting)

    def open(self, count: int) -> None:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            code = sock.connect_ex(("127.0.0.1", self._port))
            if code not in (0, errno.EINPROGRESS):
                self.failed[errno.errorcode.get(code, str(code))] += 1
                sock.close()
                continue
            self._sockets.append(sock)
            self._connecting.add(sock.fileno())
            self._selector.register(sock, selectors.EVENT_WRITE)

    def pump(self, timeout_s: float) -> None:
        """Finish connects and note early answers for up to `timeout_s`."""
        for key, _mask in self._selector.select(timeout_s):
            sock: socket.socket = key.fileobj  # type: ignore[assignment]
            fd = key.fd
            if fd in self._connecting:
                self._connecting.discard(fd)
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code:
                    self.failed[errno.errorcode.get(code, str(code))] += 1
                    self._selector.unregister(sock)
                    continue
                sock.send(self._request)  # a few hundred bytes into an empty buffer
                self.connected += 1
                self._selector.modify(sock, selectors.EVENT_READ)
                continue
            self._note_answer(sock, fd)

    def _note_answer(self, sock: socket.socket, fd: int) -> None:
        """The gateway sent something before the first token (an error, most likely) or
        closed the connection; counted once per client by its status line."""
        try:
            data = sock.recv(4096)
        except OSError as exc:
            data, label = b"", type(exc).__name__
        else:
            label = data.split(b"\r\n", 1)[0].decode("latin-1")[:40] if data else "closed"
        self._selector.unregister(sock)
        if fd not in self._answered:
            self._answered.add(fd)
            self.answered[label or "closed"] += 1

    def close_all(self) -> None:
        """Hang up every client at once (the kernel sends FIN, or RST over unread data)."""
        for sock in self._sockets:
            sock.close()
        self._selector.close()
        self._sockets.clear()
        self._connecting.clear()


def pump_for(clients: Clients, seconds: float) -> None:
    """Let `clients` finish connects and note answers for `seconds`."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        clients.pump(left)


def stream_request(port: int, api_key: str, body: dict[str, Any]) -> bytes:
    """The raw HTTP/1.1 request that POSTs `body` to /v1/chat/completions as a stream."""
    payload = orjson.dumps(body)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {api_key}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload
