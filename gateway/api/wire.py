"""Answers on the wire: a JSON body, or a server-sent-event stream whose frames the ASGI
server may never iterate (the client left first: gateway/asgi.py calls `abandon`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
from django.http import HttpResponse, StreamingHttpResponse

from gateway.upstream.attempt import Opened
from gateway.upstream.relay import abandon


def json_response(payload: dict[str, Any]) -> HttpResponse:
    return HttpResponse(orjson.dumps(payload), content_type="application/json")


class StreamFrames:
    """A committed stream's frames, and what to do if the server never iterates them."""

    def __init__(
        self,
        frames: AsyncIterator[bytes],
        opened: Opened,
        on_end: Callable[[Opened, str | None], None],
    ) -> None:
        self.frames, self.opened, self.on_end = frames, opened, on_end

    async def abandon(self) -> None:
        await abandon(self.opened, self.on_end)


def sse_response(stream: StreamFrames) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream.frames, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    response.switchyard_abandon = stream.abandon  # type: ignore[attr-defined]
    return response
