"""Server-sent events on the wire: splitting an upstream byte stream into events and
framing events for the client.

The parser works on raw bytes and hands back each event's raw frame as well as its
parsed fields, so a pass-through stream can forward upstream bytes untouched (no JSON
round trip per chunk) while still seeing where one event ends and the next begins.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

DONE_FRAME = b"data: [DONE]\n\n"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One event: `event` is the `event:` field ('' when absent), `data` the joined
    `data:` lines, `raw` the exact frame bytes including the blank-line terminator."""

    event: str
    data: bytes
    raw: bytes

    @property
    def is_done(self) -> bool:
        return self.data == b"[DONE]"


class SSEParser:
    """Incremental SSE parser: feed arbitrary byte chunks, get whole events back."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        events: list[SSEEvent] = []
        start = 0
        while True:
            end = buffer.find(b"\n\n", start)
            if end < 0:
                break
            frame = buffer[start : end + 2]
            start = end + 2
            event = _parse_frame(frame)
            if event is not None:
                events.append(event)
        self._buffer = buffer[start:]
        return events

    @property
    def pending(self) -> bytes:
        """Bytes of an unfinished event (non-empty at end of stream means truncation)."""
        return self._buffer


def _parse_frame(frame: bytes) -> SSEEvent | None:
    name = ""
    data_lines: list[bytes] = []
    for line in frame.split(b"\n"):
        if not line or line.startswith(b":"):
            continue
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data_lines.append(value)
        elif field == b"event":
            name = value.decode("utf-8", "replace")
    if not data_lines and not name:
        return None  # a comment or keep-alive frame
    return SSEEvent(event=name, data=b"\n".join(data_lines), raw=frame)


def frame_json(payload: object, event: str | None = None) -> bytes:
    """Frame one JSON payload as an SSE event."""
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + orjson.dumps(payload) + b"\n\n"
