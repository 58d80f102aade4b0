"""Re-shaping the chat path's SSE stream into another API's events as it arrives (the
Responses API): one loop, the API's `Shaper` says what a chat chunk becomes. `[DONE]`
closes the stream; an error frame, or chat frames that end without `[DONE]`, end it with
the shaper's error event. The chat frames are read to their end (so the relay records its
outcome as it ends) and closed with this generator when the client leaves. A frame that is
not a JSON object carries nothing to translate and is skipped. (The Messages API shapes
the upstream's own chunks instead, each parsed once: anthropic/stream.py.)"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

import orjson

from gateway.upstream.streaming import SSEParser


class Shaper(Protocol):
    def opening(self) -> list[bytes]: ...
    def feed(self, chunk: dict[str, Any]) -> list[bytes]: ...
    def closing(self) -> list[bytes]: ...
    def error(self, payload: dict[str, Any]) -> bytes: ...


async def reshape(frames: AsyncIterator[bytes], shaper: Shaper) -> AsyncIterator[bytes]:
    parser = SSEParser()
    yield b"".join(shaper.opening())
    ended = False
    async with contextlib.aclosing(frames):  # type: ignore[type-var]
        async for chunk in frames:
            for event in parser.feed(chunk):
                if ended:
                    continue
                if event.is_done:
                    ended = True
                    yield b"".join(shaper.closing())
                    continue
                try:
                    payload = orjson.loads(event.data)
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(payload, dict):
                    continue
                if "error" in payload:
                    ended = True
                    yield shaper.error(payload)
                    continue
                translated = shaper.feed(payload)
                if translated:
                    yield b"".join(translated)
    if not ended:
        yield shaper.error({})
